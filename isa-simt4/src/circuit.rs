//! The SIMT4 machine as an `isa-api` circuit: one machine step per forward pass of the woven network,
//! semantics exactly those of [`crate::interp`] (written from [`crate::isa`]), step for step.
//!
//! | state | kind | meaning |
//! |---|---|---|
//! | `PC` | register, 12 bits | instruction index |
//! | `WARP` | register, max(1, log2 `warps`) bits | the running warp |
//! | `BUSY` | register, 6 bits | micro-step: the lane a store or atomic is at, or the step a division is at (0 between instructions) |
//! | `STOP` | register, 1 bit | a fault was reported: the next step halts |
//! | `DQ{l}`, `DR{l}` | registers, 32 bits, per lane `l` | division: dividend shifting out / quotient shifting in, partial remainder |
//! | `PROG` | memory, 4096 x 64 | the program, one instruction word per row |
//! | `SHARED` | memory, `shared_words` x 32 | shared memory |
//! | `GLOBAL` | memory, `global_words` x 32 | global memory |
//! | `WPC` | memory, `warps` x 12 (at least 2 rows) | the saved PCs of the warps (`BAR`) |
//! | `R0` .. `R{lanes-1}` | memories, (`warps` * 32) x 32 | lane `l`'s registers: row `warp * 32 + reg` |
//! | `FAULT` | port, 64 bits, [`PortRole::Fault`] | [`crate::isa::Fault::word`] of a fault |
//!
//! Per lane the circuit reads four registers of the running warp: `A = R[rs1]`, `B = R[rs2]`, `D = R[rd]`
//! (for `CMOV`) and `C = R[31]` (the activity counter; its address depends only on `WARP`, so activity is known
//! early), and the shared and global words at `base + A` (the loads, and the old value of an atomic).
//!
//! One write per memory per step: a lane's register memory takes `rd` (ALU ops and loads in active lanes; the
//! atomic's `rd` in lane `BUSY`) or `r31` (counter ops, only where the counter word changes); `SHARED` and
//! `GLOBAL` take the store or atomic of lane `BUSY`; `WPC` the `BAR`'s saved PC. Stores and atomics are
//! micro-coded over `BUSY = 0 .. lanes-1`.
//!
//! Divisions (`DIV DIVU REM REMU`) are micro-coded over `BUSY = 0 ..= 17` ([`crate::isa::DIV_STEPS`]) with
//! the `PC` held, in every active lane at once: step 0 loads `DQ = |a|`, `DR = 0`; steps 1..=16 are radix-4
//! restoring steps: `d = |b|` and `3d` (one weighted sum per sign of `b`) from the operand read again, three
//! 34-bit compares of `t = DR * 4 + DQ >> 30` with `d`, `2d`, `3d` and four candidate remainders selected
//! one-hot (as deep as the multiply; registers are ready at the start of the step); step 17 writes `rd` (the
//! quotient or remainder, negated per the signs) through the lane's register write. A lane's division
//! registers hold their value in every other step and in inactive lanes. (Keeping `|b|` and `3|b|` in
//! registers too would make the steps shallower but costs step fields: every 8-bit register chunk is a step
//! field of the trace protocol, which grows the vocabulary and the state heads.)
//!
//! Per lane one unsigned 64-bit product serves `MUL` (its low word), `MULHU` (its high word) and `MULHI` (the
//! high word corrected for the signs), and one logical right shift by a 6-bit amount (the low 5 bits of `b`
//! and "`b` >= 32") serves `SHR`, `SHL` (bit-reversed in and out) and `SRA` (inverted in and out when `a < 0`).
//! The woven depth is about 14 layers for 4 and 8 lanes (the multiply is the critical path).
//!
//! A fault step writes the `FAULT` port and sets `STOP`, nothing else (the interpreter's fault step changes no
//! state); the next step halts. The `HALT` instruction sets the circuit's halt bit in the step that executes
//! it (that step changes nothing, as in the interpreter).

use crate::isa::{BUSY_BITS, COUNTER_REG, DIV_ITERATIONS, Opcode, PC_BITS, Simt4Config};
use isa_api::{CircuitBuilder, CmpKind, MachineDesc, MemoryDesc, NodeId, PortDesc, PortRole, ProgramLayout, RegisterDesc, ShiftKind};

/// Register indices.
pub mod reg {
    /// `PC` (12 bits).
    pub const PC: u32 = 0;
    /// `WARP` (max(1, log2 warps) bits).
    pub const WARP: u32 = 1;
    /// `BUSY` (6 bits, [`crate::isa::BUSY_BITS`]): the micro-step register.
    pub const BUSY: u32 = 2;
    /// `STOP` (1 bit): set by a fault step; the next step halts.
    pub const STOP: u32 = 3;
    /// `DQ{l}` (32 bits): lane `l`'s dividend magnitude shifting out and quotient shifting in.
    pub const fn div_q(l: u32) -> u32 {
        4 + 2 * l
    }
    /// `DR{l}` (32 bits): lane `l`'s partial remainder.
    pub const fn div_r(l: u32) -> u32 {
        5 + 2 * l
    }
}

/// Memory indices.
pub mod mem {
    /// `PROG`: 4096 words of 64 bits.
    pub const PROG: u32 = 0;
    /// `SHARED`: `shared_words` words of 32 bits.
    pub const SHARED: u32 = 1;
    /// `GLOBAL`: `global_words` words of 32 bits.
    pub const GLOBAL: u32 = 2;
    /// `WPC`: per-warp saved PCs, 12-bit words.
    pub const WPC: u32 = 3;
    /// `R{l}`: lane `l`'s registers (32-bit words, row `warp * 32 + reg`).
    pub const fn lane(l: u32) -> u32 {
        4 + l
    }
}

/// Output port indices.
pub mod port {
    /// `FAULT` (64 bits): the fault word.
    pub const FAULT: u32 = 0;
}

/// Bits of the `WARP` register and address bits of `WPC`: max(1, log2 `warps`).
pub fn warp_bits(cfg: &Simt4Config) -> u32 {
    cfg.warps.trailing_zeros().max(1)
}

/// The per-lane values the circuit reads and computes.
struct Lane {
    /// `R[rs1]`, `R[rs2]` (32 bits).
    a: NodeId,
    rb: NodeId,
    /// Active (1 bit): the counter's low byte is 0.
    act: NodeId,
    /// In bounds for a memory op: `A < len` (1 bit).
    inb: NodeId,
    /// Shared and global words at `base + A` (32 bits).
    sh: NodeId,
    gl: NodeId,
    /// Addresses `base + A` sliced to the shared and global address widths.
    saddr: NodeId,
    gaddr: NodeId,
    /// `BUSY == l` (1 bit).
    bsel: NodeId,
    /// The register write's data (32 bits) and whether the counter word changes (1 bit).
    data: NodeId,
    changed: NodeId,
}

/// The SIMT4 register file description: `PC`, `WARP`, `BUSY`, `STOP`, then per lane `DQ`, `DR`.
fn registers(cfg: &Simt4Config) -> Vec<RegisterDesc> {
    let r = |name: String, width: u32| RegisterDesc { name, width };
    let mut v = vec![r("PC".into(), PC_BITS), r("WARP".into(), warp_bits(cfg)), r("BUSY".into(), BUSY_BITS), r("STOP".into(), 1)];
    for l in 0..cfg.lanes {
        v.extend([r(format!("DQ{l}"), 32), r(format!("DR{l}"), 32)]);
    }
    v
}

/// One lane's division datapath ([`div_datapath`]).
pub struct DivPath {
    /// `|a|` (32 bits): `DQ` at step 0.
    pub a_abs: NodeId,
    /// `DQ` after an iteration step (32 bits).
    pub q_iter: NodeId,
    /// `DR` after an iteration step (32 bits).
    pub r_iter: NodeId,
}

/// One lane's division datapath (see [`crate::isa`]): from the operands `a`, `bv` (32 bits), `sdiv` (1 bit: a
/// signed op, operands taken as magnitudes) and the lane's `DQ`, `DR`, the step-0 value `|a|` and one radix-4
/// iteration: `t = DR * 4 + DQ >> 30`, the digit `q` from `t >= d, 2d, 3d` with `d = |b|` (`3d` one weighted
/// sum per sign of `b`), `DR' = t - q * d`, `DQ' = DQ << 2 | q`; the four candidate remainders are selected
/// one-hot (the compares are monotone: `t >= 3d` implies `t >= 2d` implies `t >= d`).
pub fn div_datapath(s: &mut CircuitBuilder, a: NodeId, bv: NodeId, sdiv: NodeId, dq: NodeId, dr: NodeId) -> DivPath {
    let t = |node, shift, neg| isa_api::SumTerm { node, shift, neg };
    let a_sign = s.bit(a, 31);
    // step 0: magnitudes (signed ops: the absolute value), and 3 * |b| as one weighted sum per sign
    let b_sign = s.bit(bv, 31);
    let a_negm = s.and(sdiv, a_sign);
    let b_negm = s.and(sdiv, b_sign);
    let a_abs = {
        let n = s.neg(a);
        s.select(a_negm, n, a)
    };
    let b_abs = {
        let n = s.neg(bv);
        s.select(b_negm, n, bv)
    };
    let b3_abs = {
        let p3 = s.sum(34, &[t(bv, 0, false), t(bv, 1, false)], 0);
        let n3 = s.sum(34, &[t(bv, 0, true), t(bv, 1, true)], 3 << 32);
        s.select(b_negm, n3, p3)
    };
    // steps 1..=16: t = DR * 4 + DQ >> 30; digit from t >= d, 2d, 3d; DR = t - digit * d
    let tt = {
        let top = s.slice(dq, 30, 2);
        s.concat(&[top, dr])
    };
    let z1 = s.konst(1, 0);
    let z2 = s.konst(2, 0);
    let dd1 = s.concat(&[b_abs, z2]);
    let dd2 = s.concat(&[z1, b_abs, z1]);
    let c1 = s.cmp(CmpKind::Leu, dd1, tt);
    let c2 = s.cmp(CmpKind::Leu, dd2, tt);
    let c3 = s.cmp(CmpKind::Leu, b3_abs, tt);
    let n1 = s.not(c1);
    let n2 = s.not(c2);
    let n3 = s.not(c3);
    let s2 = s.and(c2, n3);
    let s1 = s.and(c1, n2);
    let r0 = s.slice(tt, 0, 32);
    let r1 = s.sum(32, &[t(tt, 0, false), t(b_abs, 0, true)], 0);
    let r2 = s.sum(32, &[t(tt, 0, false), t(b_abs, 1, true)], 0);
    let r3 = s.sum(32, &[t(tt, 0, false), t(b3_abs, 0, true)], 0);
    let r_iter = s.one_hot(32, &[(n1, r0), (s1, r1), (s2, r2), (c3, r3)]);
    let q_iter = {
        let d0 = s.or(c3, s1);
        let low = s.slice(dq, 0, 30);
        s.concat(&[d0, c2, low])
    };
    DivPath { a_abs, q_iter, r_iter }
}

/// The SIMT4 machine of shape `cfg`: registers `PC`, `WARP`, `BUSY`, `STOP` and the lanes' division registers
/// `DQ{l}`, `DR{l}` ([`reg`]), memories `PROG`,
/// `SHARED`, `GLOBAL`, `WPC`, `R0`.. ([`mem`]), output port `FAULT` ([`port`]); `BUSY` is the micro-step
/// register. Errors: `cfg` is out of range ([`Simt4Config::validate`]).
pub fn simt4_machine(cfg: &Simt4Config) -> Result<MachineDesc, String> {
    cfg.validate()?;
    let lanes = cfg.lanes;
    let lw = cfg.warps.trailing_zeros(); // log2 warps (0 with one warp)
    let wb = warp_bits(cfg);
    let ll = lanes.trailing_zeros();
    let sb = cfg.shared_words.trailing_zeros();
    let gb = cfg.global_words.trailing_zeros();
    let rab = cfg.reg_addr_bits();

    let mut b = CircuitBuilder::new();
    let s = &mut b;
    let pc = s.reg(reg::PC, PC_BITS);
    let warp = s.reg(reg::WARP, wb);
    let busy = s.reg(reg::BUSY, BUSY_BITS);
    let stop = s.reg(reg::STOP, 1);

    // ---- fetch and decode ----
    let word = s.load(mem::PROG, 64, pc);
    let opc = s.slice(word, 0, 6);
    let rd = s.slice(word, 6, 5);
    let rs1 = s.slice(word, 11, 5);
    let rs2 = s.slice(word, 16, 5);
    let imm_b = s.bit(word, 21);
    let imm = s.slice(word, 32, 32);
    let imm12 = s.slice(word, 32, 12);
    let is = |s: &mut CircuitBuilder, o: Opcode| s.eq_const(opc, o as u64);
    let class = |s: &mut CircuitBuilder, f: &dyn Fn(Opcode) -> bool| {
        let table: Vec<u64> = (0..64u8).map(|v| Opcode::from_u8(v).is_some_and(f) as u64).collect();
        s.lookup(1, table, opc)
    };
    let legal = class(s, &|_| true);
    let alu = class(s, &|o| o.is_alu());
    let ld = class(s, &|o| matches!(o, Opcode::Lds | Opcode::Ldg));
    let ser = class(s, &|o| o.is_serial());
    let atom = class(s, &|o| matches!(o, Opcode::Atoms | Opcode::Atomg));
    let ctr = class(s, &|o| matches!(o, Opcode::If | Opcode::Else | Opcode::Endif | Opcode::Brk | Opcode::Creset));
    let div = class(s, &|o| o.is_div());
    let sdiv = class(s, &|o| o.is_signed_div());
    let (o_div, o_rem) = (is(s, Opcode::Div), is(s, Opcode::Rem));
    let o_q = class(s, &|o| matches!(o, Opcode::Div | Opcode::Divu));
    let o_r = class(s, &|o| matches!(o, Opcode::Rem | Opcode::Remu));
    // The division's micro-step: 0 loads the division registers, 1..=16 iterate, 17 writes rd.
    let d_first = s.eq_const(busy, 0);
    let d_last = s.eq_const(busy, u64::from(DIV_ITERATIONS + 1));
    let d_mid = {
        let either = s.or(d_first, d_last);
        s.not(either)
    };
    let d_not_last = s.not(d_last);
    let d_more = s.and(div, d_not_last);
    let o_jmp = is(s, Opcode::Jmp);
    let (o_jnone, o_jany, o_bar, o_halt) = (is(s, Opcode::Jnone), is(s, Opcode::Jany), is(s, Opcode::Bar), is(s, Opcode::Halt));
    let (o_lds, o_ldg, o_sts, o_stg, o_atoms, o_atomg) =
        (is(s, Opcode::Lds), is(s, Opcode::Ldg), is(s, Opcode::Sts), is(s, Opcode::Stg), is(s, Opcode::Atoms), is(s, Opcode::Atomg));
    let uses_sh = s.or(o_lds, o_atoms);
    let uses_gl = s.or(o_ldg, o_atomg);
    let (o_shl, o_shr, o_sra) = (is(s, Opcode::Shl), is(s, Opcode::Shr), is(s, Opcode::Sra));
    let (o_if, o_else, o_endif, o_brk, o_creset) = (is(s, Opcode::If), is(s, Opcode::Else), is(s, Opcode::Endif), is(s, Opcode::Brk), is(s, Opcode::Creset));
    let illegal = s.not(legal);

    // Register rows of the running warp: `warp * 32 + reg`.
    let warp_lo = if lw > 0 { Some(s.slice(warp, 0, lw)) } else { None };
    let row = |s: &mut CircuitBuilder, r5: NodeId| match warp_lo {
        Some(w) => s.concat(&[r5, w]),
        None => r5,
    };
    let (row_rs1, row_rs2, row_rd) = (row(s, rs1), row(s, rs2), row(s, rd));
    let c31 = s.konst(5, u64::from(COUNTER_REG));
    let row_31 = row(s, c31);
    debug_assert_eq!(s.width(row_31), rab);
    let row_w = s.select(ctr, row_31, row_rd);

    // Memory-op operands: base (low 16 bits of imm) sliced to each memory, len (high 16 bits).
    let len = {
        let l16 = s.slice(word, 48, 16);
        s.zext(l16, 32)
    };
    let base_s = s.slice(word, 32, sb);
    let base_g = s.slice(word, 32, gb);

    // Shift amounts >= 32: any of bits 5..32 of `b`.
    let imm_big = {
        let hi = s.slice(imm, 5, 27);
        s.ne_const(hi, 0)
    };
    let imm0 = s.bit(imm, 0);
    let imm8 = s.slice(imm, 0, 8);

    let one8 = s.konst(8, 1);
    let zero8 = s.konst(8, 0);

    // ---- per lane: reads, activity, ALU, counters, the register write ----
    let mut ls: Vec<Lane> = Vec::new();
    for l in 0..lanes {
        let m = mem::lane(l);
        let a = s.load(m, 32, row_rs1);
        let rb = s.load(m, 32, row_rs2);
        let dv = s.load(m, 32, row_rd);
        let cw = s.load(m, 32, row_31);
        let c = s.slice(cw, 0, 8);
        let act = s.eq_const(c, 0);
        let bsel = s.eq_const(busy, u64::from(l));

        // b = imm_b ? imm : R[rs2]; its shift amount: low 5 bits, and bit 5 = "amount >= 32".
        let bv = s.select(imm_b, imm, rb);
        let big = {
            let rb_hi = s.slice(rb, 5, 27);
            let rb_big = s.ne_const(rb_hi, 0);
            s.select(imm_b, imm_big, rb_big)
        };
        let by = {
            let b5 = s.slice(bv, 0, 5);
            s.concat(&[b5, big])
        };

        // ALU
        let add = s.add(a, bv);
        let sub = s.sub(a, bv);
        // One unsigned 64-bit product: MUL is its low word, MULHU its high word, and MULHI the high word
        // less `b` where `a < 0` and less `a` where `b < 0` (the signed product's correction, mod 2^32).
        let (mul, mulhi, mulhu) = {
            let a64 = s.zext(a, 64);
            let b64 = s.zext(bv, 64);
            let p = s.mul_lo(a64, b64);
            let lo = s.slice(p, 0, 32);
            let hi = s.slice(p, 32, 32);
            let a_neg = s.bit(a, 31);
            let b_neg = s.bit(bv, 31);
            let a_negs = s.sext(a_neg, 32);
            let b_negs = s.sext(b_neg, 32);
            let corr_a = s.and(bv, a_negs);
            let corr_b = s.and(a, b_negs);
            let t = |node, neg| isa_api::SumTerm { node, shift: 0, neg };
            let shi = s.sum(32, &[t(hi, false), t(corr_a, true), t(corr_b, true)], 0);
            (lo, shi, hi)
        };
        let and = s.and(a, bv);
        let or = s.or(a, bv);
        let xor = s.xor(a, bv);
        // One logical right shift serves SHL (on the bit-reversed operand, result reversed back), SHR, and SRA
        // (on `!a` when `a < 0`, result inverted: `a >> k` arithmetic = `!(!a >> k)` logical).
        let a_sign = s.bit(a, 31);
        let rev = |s: &mut CircuitBuilder, x: NodeId| {
            let bits: Vec<NodeId> = (0..32).rev().map(|k| s.bit(x, k)).collect();
            s.concat(&bits)
        };
        let a_rev = rev(s, a);
        let a_not = s.not(a);
        let a_pos = s.not(a_sign);
        let sra_pos = s.and(o_sra, a_pos);
        let sra_neg = s.and(o_sra, a_sign);
        let sh_in = s.one_hot(32, &[(o_shl, a_rev), (o_shr, a), (sra_pos, a), (sra_neg, a_not)]);
        let sh_out = s.shift(ShiftKind::Shr, sh_in, by);
        let sh_rev = rev(s, sh_out);
        let sh_not = s.not(sh_out);
        let lts = s.cmp(CmpKind::Lts, a, bv);
        let ltu = s.cmp(CmpKind::Ltu, a, bv);
        let eqv = s.eq(a, bv);
        let nev = s.not(eqv);
        let slt = s.zext(lts, 32);
        let sltu = s.zext(ltu, 32);
        let seq = s.zext(eqv, 32);
        let sne = s.zext(nev, 32);
        let min = s.select(lts, a, bv);
        let max = s.select(lts, bv, a);
        let minu = s.select(ltu, a, bv);
        let maxu = s.select(ltu, bv, a);
        let a_nz = s.ne_const(a, 0);
        let a_z = s.not(a_nz);
        let cmov = s.select(a_nz, bv, dv);
        let lane_c = s.konst(ll, u64::from(l));
        let tid = match warp_lo {
            Some(w) => s.concat(&[lane_c, w]),
            None => lane_c,
        };
        let tid32 = s.zext(tid, 32);

        // Memory: in bounds, addresses, loads.
        let inb = s.cmp(CmpKind::Ltu, a, len);
        let saddr = {
            let x = s.slice(a, 0, sb);
            s.add(x, base_s)
        };
        let gaddr = {
            let x = s.slice(a, 0, gb);
            s.add(x, base_g)
        };
        let sh = s.load(mem::SHARED, 32, saddr);
        let gl = s.load(mem::GLOBAL, 32, gaddr);

        // Counter ops: c' (8 bits).
        let c0 = s.eq_const(c, 0);
        let c1 = s.eq_const(c, 1);
        let cp1 = s.add(c, one8);
        let cm1 = s.sub(c, one8);
        let if_v = {
            let cond = s.or(a_nz, imm0);
            let ncond = s.not(cond);
            let n8 = s.zext(ncond, 8);
            s.select(c0, n8, cp1)
        };
        let else_v = {
            let x = s.select(c1, zero8, c);
            s.select(c0, one8, x)
        };
        let endif_v = s.select(c0, zero8, cm1);
        let brk_v = {
            let park = s.and(c0, a_z);
            s.select(park, imm8, c)
        };
        let creset_v = {
            let lt = s.cmp(CmpKind::Ltu, tid32, imm);
            let off = s.not(lt);
            s.zext(off, 8)
        };
        let c_new = s.one_hot(8, &[(o_if, if_v), (o_else, else_v), (o_endif, endif_v), (o_brk, brk_v), (o_creset, creset_v)]);
        let changed = {
            let d = s.cmp(CmpKind::Ne, c_new, c);
            let hi = s.slice(cw, 8, 24);
            let hi_nz = s.ne_const(hi, 0);
            s.or(d, hi_nz)
        };
        let c_new32 = s.zext(c_new, 32);

        // The register write's data: one case per opcode class.
        let alu_cases: Vec<(Opcode, NodeId)> = vec![
            (Opcode::Add, add),
            (Opcode::Sub, sub),
            (Opcode::Mul, mul),
            (Opcode::Mulhi, mulhi),
            (Opcode::Mulhu, mulhu),
            (Opcode::And, and),
            (Opcode::Or, or),
            (Opcode::Xor, xor),
            (Opcode::Slt, slt),
            (Opcode::Sltu, sltu),
            (Opcode::Seq, seq),
            (Opcode::Sne, sne),
            (Opcode::Min, min),
            (Opcode::Max, max),
            (Opcode::Minu, minu),
            (Opcode::Maxu, maxu),
            (Opcode::Cmov, cmov),
            (Opcode::Tid, tid32),
        ];
        let mut cases: Vec<(NodeId, NodeId)> = Vec::new();
        for (o, v) in alu_cases {
            let sel = is(s, o);
            cases.push((sel, v));
        }
        cases.push((o_shl, sh_rev));
        cases.push((o_shr, sh_out));
        cases.push((sra_pos, sh_out));
        cases.push((sra_neg, sh_not));
        cases.push((uses_sh, sh));
        cases.push((uses_gl, gl));
        cases.push((ctr, c_new32));

        // Division (micro-coded, see the module doc): this lane's registers and step.
        let dq = s.reg(reg::div_q(l), 32);
        let dr = s.reg(reg::div_r(l), 32);
        let b_sign = s.bit(bv, 31);
        let DivPath { a_abs, q_iter, r_iter } = div_datapath(s, a, bv, sdiv, dq, dr);
        let en = s.and(div, act);
        let e_first = s.and(en, d_first);
        let e_mid = s.and(en, d_mid);
        let keep = {
            let ch = s.or(e_first, e_mid);
            s.not(ch)
        };
        let dq_next = s.one_hot(32, &[(e_first, a_abs), (e_mid, q_iter), (keep, dq)]);
        let dr_next = s.one_hot(32, &[(e_mid, r_iter), (keep, dr)]);
        s.set_next(reg::div_q(l), dq_next);
        s.set_next(reg::div_r(l), dr_next);
        // step 17: rd = the quotient or remainder, negated per the signs (DIV: a, b of different signs and
        // b != 0; REM: a < 0)
        let b_nz = s.ne_const(bv, 0);
        let q_negs = {
            let x = s.xor(a_sign, b_sign);
            s.all(&[o_div, x, b_nz])
        };
        let r_negs = s.and(o_rem, a_sign);
        let q_pos = {
            let nq = s.not(q_negs);
            s.and(o_q, nq)
        };
        let r_pos = {
            let nr = s.not(r_negs);
            s.and(o_r, nr)
        };
        let dq_neg = s.neg(dq);
        let dr_neg = s.neg(dr);
        cases.push((q_negs, dq_neg));
        cases.push((q_pos, dq));
        cases.push((r_negs, dr_neg));
        cases.push((r_pos, dr));
        let data = s.one_hot(32, &cases);
        // (the write's enable is set below, once the bounds fault of a load is known)
        ls.push(Lane { a, rb, act, inb, sh, gl, saddr, gaddr, bsel, data, changed });
    }

    // ---- faults ----
    // Lane l faults (term l) when it is active and out of bounds in a load, or in a store or atomic at its
    // micro-step; a load's lowest such lane is the one reported. The terms feed every decision in one flat
    // OR or AND (the fault, the held PC, BUSY, the loads' writes), which keeps the path shallow.
    let terms: Vec<NodeId> = ls
        .iter()
        .map(|x| {
            let sel = {
                let at = s.and(ser, x.bsel);
                s.or(ld, at)
            };
            let oob = s.not(x.inb);
            s.all(&[sel, x.act, oob])
        })
        .collect();
    let nterms: Vec<NodeId> = terms.iter().map(|t| s.not(*t)).collect();
    let fsel: Vec<NodeId> = (0..lanes as usize)
        .map(|l| {
            let mut first = vec![terms[l]];
            first.extend(&nterms[..l]);
            s.all(&first)
        })
        .collect();
    let bounds = s.any(&terms);
    let fault = {
        let mut v = vec![illegal];
        v.extend(&terms);
        s.any(&v)
    };
    let ld_ok = {
        let mut v = vec![ld];
        v.extend(&nterms);
        s.all(&v)
    };
    let fault_lane = {
        let cases: Vec<(NodeId, NodeId)> = (0..lanes as usize).map(|l| (fsel[l], s.konst(5, l as u64))).collect();
        s.one_hot(5, &cases)
    };
    let fault_index = {
        let mut cases: Vec<(NodeId, NodeId)> = (0..lanes as usize).map(|l| (fsel[l], ls[l].a)).collect();
        let op32 = s.zext(opc, 32);
        cases.push((illegal, op32));
        s.one_hot(32, &cases)
    };
    let warp5 = if wb < 5 { s.zext(warp, 5) } else { warp };
    let z8 = s.konst(8, 0);
    let fault_word = s.concat(&[pc, fault_lane, warp5, bounds, illegal, z8, fault_index]);
    s.output(port::FAULT, fault_word, fault);
    s.set_next(reg::STOP, fault);
    let halt = s.or(stop, o_halt);
    s.halt(halt);

    // ---- lane register writes ----
    for l in 0..lanes as usize {
        let x = &ls[l];
        let (data, changed) = (x.data, x.changed);
        let e_alu = s.and(alu, x.act);
        let e_ld = s.and(ld_ok, x.act);
        let e_atom = s.all(&[atom, x.bsel, x.act, x.inb]);
        let e_ctr = s.and(ctr, changed);
        let e_div = s.all(&[div, d_last, x.act]);
        let en = s.any(&[e_alu, e_ld, e_atom, e_ctr, e_div]);
        s.mem_write(mem::lane(l as u32), row_w, data, en);
    }

    // ---- shared and global: the store or atomic of lane BUSY ----
    let ok: Vec<NodeId> = ls.iter().map(|x| s.and(x.act, x.inb)).collect();
    for (memi, st, at, shared) in [(mem::SHARED, o_sts, o_atoms, true), (mem::GLOBAL, o_stg, o_atomg, false)] {
        let aw = if shared { sb } else { gb };
        let mut addr_cases = Vec::new();
        let mut data_cases = Vec::new();
        let mut en_cases = Vec::new();
        for (l, x) in ls.iter().enumerate() {
            let (addr, old) = if shared { (x.saddr, x.sh) } else { (x.gaddr, x.gl) };
            addr_cases.push((x.bsel, addr));
            let sum = s.add(old, x.rb);
            let st_l = s.and(x.bsel, st);
            let at_l = s.and(x.bsel, at);
            data_cases.push((st_l, x.rb));
            data_cases.push((at_l, sum));
            en_cases.push((x.bsel, ok[l]));
        }
        let addr = s.one_hot(aw, &addr_cases);
        let data = s.one_hot(32, &data_cases);
        let lane_ok = s.one_hot(1, &en_cases);
        let op = s.or(st, at);
        let en = s.and(op, lane_ok);
        s.mem_write(memi, addr, data, en);
    }

    // ---- BUSY ----
    let last = s.eq_const(busy, u64::from(lanes - 1));
    let not_last = s.not(last);
    let more = s.and(ser, not_last);
    let adv = {
        let mut v = vec![more];
        v.extend(&nterms);
        let st = s.all(&v);
        s.or(st, d_more)
    };
    let one = s.konst(BUSY_BITS, 1);
    let busy1 = s.add(busy, one);
    let busy_next = s.one_hot(BUSY_BITS, &[(adv, busy1), (fault, busy)]);
    s.set_next(reg::BUSY, busy_next);

    // ---- BAR: WPC[w] = PC + 1, WARP = (w + 1) mod min(n, warps), PC = WPC[WARP] ----
    let one12 = s.konst(PC_BITS, 1);
    let pc1 = s.add(pc, one12);
    let bar_act = {
        let hi = s.slice(imm, 1, 31);
        let gt1 = s.ne_const(hi, 0);
        s.and(o_bar, gt1)
    };
    let (next_w, pc_bar) = if lw == 0 {
        (s.konst(wb, 0), pc1)
    } else {
        let w = warp_lo.expect("lw > 0");
        let big = {
            let hi = s.slice(imm, lw, 32 - lw);
            s.ne_const(hi, 0)
        };
        let lo = s.slice(imm, 0, lw);
        let idx = s.concat(&[w, lo, big]);
        let nw = cfg.warps as u64;
        let table: Vec<u64> = (0..(1u64 << (2 * lw + 1)))
            .map(|i| {
                let w = i & (nw - 1);
                let lo = (i >> lw) & (nw - 1);
                let m = if i >> (2 * lw) == 1 { nw } else { lo };
                if m == 0 { 0 } else { (w + 1) % m }
            })
            .collect();
        let next_w = s.lookup(wb, table, idx);
        (next_w, s.load(mem::WPC, PC_BITS, next_w))
    };
    s.mem_write(mem::WPC, warp, pc1, bar_act);
    let warp_next = s.select(bar_act, next_w, warp);
    s.set_next(reg::WARP, warp_next);

    // ---- PC ----
    let act_all: Vec<NodeId> = ls.iter().map(|x| x.act).collect();
    let any_act = s.any(&act_all);
    let none_act = s.not(any_act);
    let jt = {
        let a = s.and(o_jnone, none_act);
        let b2 = s.and(o_jany, any_act);
        s.any(&[o_jmp, a, b2])
    };
    // hold: a fault, or a store's, atomic's or division's micro-step before the last (exclusive with jumps
    // and BAR)
    let hold = {
        let mut v = vec![illegal, more, d_more];
        v.extend(&terms);
        s.any(&v)
    };
    let plain = {
        let mut v = vec![illegal, more, d_more, jt, bar_act];
        v.extend(&terms);
        let special = s.any(&v);
        s.not(special)
    };
    let pc_next = s.one_hot(PC_BITS, &[(hold, pc), (jt, imm12), (bar_act, pc_bar), (plain, pc1)]);
    s.set_next(reg::PC, pc_next);

    // ---- the description ----
    let m = |name: String, word_width: u32, addr_width: u32| MemoryDesc { name, word_width, addr_width };
    let mut mems = vec![m("PROG".into(), 64, PC_BITS), m("SHARED".into(), 32, sb), m("GLOBAL".into(), 32, gb), m("WPC".into(), PC_BITS, wb)];
    mems.extend((0..lanes).map(|l| m(format!("R{l}"), 32, rab)));
    let mut desc = MachineDesc::new(
        "simt4",
        registers(cfg),
        mems,
        vec![PortDesc::new("FAULT", 64).with_role(PortRole::Fault)],
        b.finish(),
    )
    .with_program_layout(ProgramLayout { memory: "PROG".into(), base: 0, preload: vec![], registers: vec![] });
    desc.micro_step = Some(reg::BUSY);
    desc.validate().map_err(|e| e.to_string())?;
    Ok(desc)
}
