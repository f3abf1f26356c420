//! Decode: the instruction word's fields, the opcode's classes and one-bit opcode tests, the division's
//! micro-step, and the operands every lane shares (register rows of the running warp, memory-op bases and
//! bound, shift and counter constants).

use super::fetch::Fetch;
use super::shape::Shape;
use crate::isa::{COUNTER_REG, DIV_ITERATIONS, Opcode};
use isa_api::{CircuitBuilder, NodeId};

/// `opc == o` (1 bit).
pub(super) fn is(s: &mut CircuitBuilder, opc: NodeId, o: Opcode) -> NodeId {
    s.eq_const(opc, o as u64)
}

/// Whether `opc` is an opcode `f` accepts (1 bit; a 64-entry table, false for undefined opcodes).
fn class(s: &mut CircuitBuilder, opc: NodeId, f: &dyn Fn(Opcode) -> bool) -> NodeId {
    let table: Vec<u64> = (0..64u8).map(|v| Opcode::from_u8(v).is_some_and(f) as u64).collect();
    s.lookup(1, table, opc)
}

/// The division's micro-step (1 bit each): 0 loads the division registers, 1..=16 iterate, 17 writes `rd`.
pub(super) struct DivStep {
    /// `BUSY == 0`.
    pub first: NodeId,
    /// `BUSY == 17`.
    pub last: NodeId,
    /// Neither first nor last: an iteration.
    pub mid: NodeId,
    /// A division before its last step (the `PC` is held, `BUSY` advances).
    pub more: NodeId,
}

/// The decoded instruction (every opcode test 1 bit).
pub(super) struct Decode {
    /// Opcode (6 bits).
    pub opc: NodeId,
    /// `rd`, `rs1`, `rs2` (5 bits each).
    pub rd: NodeId,
    pub rs1: NodeId,
    pub rs2: NodeId,
    /// `b` is the immediate (1 bit).
    pub imm_b: NodeId,
    /// The immediate (32 bits) and its low 12 bits (a jump target).
    pub imm: NodeId,
    pub imm12: NodeId,
    /// Classes: ALU op, load, serial (store or atomic), atomic, counter op, division, signed division.
    pub alu: NodeId,
    pub ld: NodeId,
    pub ser: NodeId,
    pub atom: NodeId,
    pub ctr: NodeId,
    pub div: NodeId,
    pub sdiv: NodeId,
    /// `DIV`, `REM`; a quotient (`DIV`, `DIVU`); a remainder (`REM`, `REMU`).
    pub o_div: NodeId,
    pub o_rem: NodeId,
    pub o_q: NodeId,
    pub o_r: NodeId,
    /// The division's micro-step.
    pub step: DivStep,
    /// Control: `JMP`, `JNONE`, `JANY`, `BAR`, `HALT`.
    pub o_jmp: NodeId,
    pub o_jnone: NodeId,
    pub o_jany: NodeId,
    pub o_bar: NodeId,
    pub o_halt: NodeId,
    /// Stores and atomics: `STS`, `STG`, `ATOMS`, `ATOMG`.
    pub o_sts: NodeId,
    pub o_stg: NodeId,
    pub o_atoms: NodeId,
    pub o_atomg: NodeId,
    /// Reads the shared word (`LDS`, `ATOMS`), the global word (`LDG`, `ATOMG`).
    pub uses_sh: NodeId,
    pub uses_gl: NodeId,
    /// Shifts: `SHL`, `SHR`, `SRA`.
    pub o_shl: NodeId,
    pub o_shr: NodeId,
    pub o_sra: NodeId,
    /// Counter ops: `IF`, `ELSE`, `ENDIF`, `BRK`, `CRESET`.
    pub o_if: NodeId,
    pub o_else: NodeId,
    pub o_endif: NodeId,
    pub o_brk: NodeId,
    pub o_creset: NodeId,
    /// Not an opcode.
    pub illegal: NodeId,
}

/// Decode the instruction word of `f`.
pub(super) fn decode(s: &mut CircuitBuilder, f: &Fetch) -> Decode {
    let word = f.word;
    let opc = s.slice(word, 0, 6);
    let rd = s.slice(word, 6, 5);
    let rs1 = s.slice(word, 11, 5);
    let rs2 = s.slice(word, 16, 5);
    let imm_b = s.bit(word, 21);
    let imm = s.slice(word, 32, 32);
    let imm12 = s.slice(word, 32, 12);
    let is = |s: &mut CircuitBuilder, o: Opcode| is(s, opc, o);
    let class = |s: &mut CircuitBuilder, f: &dyn Fn(Opcode) -> bool| class(s, opc, f);
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
    let step = div_step(s, f.busy, div);
    let o_jmp = is(s, Opcode::Jmp);
    let (o_jnone, o_jany) = (is(s, Opcode::Jnone), is(s, Opcode::Jany));
    let (o_bar, o_halt) = (is(s, Opcode::Bar), is(s, Opcode::Halt));
    let (o_lds, o_ldg, o_sts) = (is(s, Opcode::Lds), is(s, Opcode::Ldg), is(s, Opcode::Sts));
    let (o_stg, o_atoms, o_atomg) = (is(s, Opcode::Stg), is(s, Opcode::Atoms), is(s, Opcode::Atomg));
    let uses_sh = s.or(o_lds, o_atoms);
    let uses_gl = s.or(o_ldg, o_atomg);
    let (o_shl, o_shr, o_sra) = (is(s, Opcode::Shl), is(s, Opcode::Shr), is(s, Opcode::Sra));
    let (o_if, o_else, o_endif) = (is(s, Opcode::If), is(s, Opcode::Else), is(s, Opcode::Endif));
    let (o_brk, o_creset) = (is(s, Opcode::Brk), is(s, Opcode::Creset));
    let illegal = s.not(legal);
    Decode {
        opc, rd, rs1, rs2, imm_b, imm, imm12, alu, ld, ser, atom, ctr, div, sdiv, o_div, o_rem, o_q, o_r, step, o_jmp,
        o_jnone, o_jany, o_bar, o_halt, o_sts, o_stg, o_atoms, o_atomg, uses_sh, uses_gl, o_shl, o_shr, o_sra, o_if,
        o_else, o_endif, o_brk, o_creset, illegal,
    }
}

/// The division's micro-step from `BUSY` and the division class `div`.
fn div_step(s: &mut CircuitBuilder, busy: NodeId, div: NodeId) -> DivStep {
    let first = s.eq_const(busy, 0);
    let last = s.eq_const(busy, u64::from(DIV_ITERATIONS + 1));
    let mid = {
        let either = s.or(first, last);
        s.not(either)
    };
    let not_last = s.not(last);
    let more = s.and(div, not_last);
    DivStep { first, last, mid, more }
}

/// The operands every lane shares.
pub(super) struct Operands {
    /// The low log2 `warps` bits of `WARP` (none with one warp).
    pub warp_lo: Option<NodeId>,
    /// Register rows of the running warp (`warp * 32 + reg`) of `rs1`, `rs2`, `rd` and the counter `r31`.
    pub row_rs1: NodeId,
    pub row_rs2: NodeId,
    pub row_rd: NodeId,
    pub row_31: NodeId,
    /// The row a lane's register write goes to: `r31` for counter ops, else `rd`.
    pub row_w: NodeId,
    /// A memory op's bound (the immediate's high 16 bits, 32 bits).
    pub len: NodeId,
    /// A memory op's base (the immediate's low bits) at the shared and global address widths.
    pub base_s: NodeId,
    pub base_g: NodeId,
    /// The immediate as a shift amount is >= 32 (1 bit).
    pub imm_big: NodeId,
    /// The immediate's bit 0 and low byte.
    pub imm0: NodeId,
    pub imm8: NodeId,
    /// The 8-bit constants 1 and 0.
    pub one8: NodeId,
    pub zero8: NodeId,
}

/// Register row of `r5` in the running warp: `warp * 32 + r5`.
pub(super) fn row(s: &mut CircuitBuilder, warp_lo: Option<NodeId>, r5: NodeId) -> NodeId {
    match warp_lo {
        Some(w) => s.concat(&[r5, w]),
        None => r5,
    }
}

/// The shared operands of the instruction `d` in the running warp of `f`.
pub(super) fn operands(s: &mut CircuitBuilder, shape: &Shape, f: &Fetch, d: &Decode) -> Operands {
    // Register rows of the running warp: `warp * 32 + reg`.
    let warp_lo = if shape.lw > 0 { Some(s.slice(f.warp, 0, shape.lw)) } else { None };
    let (row_rs1, row_rs2, row_rd) = (row(s, warp_lo, d.rs1), row(s, warp_lo, d.rs2), row(s, warp_lo, d.rd));
    let c31 = s.konst(5, u64::from(COUNTER_REG));
    let row_31 = row(s, warp_lo, c31);
    debug_assert_eq!(s.width(row_31), shape.rab);
    let row_w = s.select(d.ctr, row_31, row_rd);

    // Memory-op operands: base (low 16 bits of imm) sliced to each memory, len (high 16 bits).
    let len = {
        let l16 = s.slice(f.word, 48, 16);
        s.zext(l16, 32)
    };
    let base_s = s.slice(f.word, 32, shape.sb);
    let base_g = s.slice(f.word, 32, shape.gb);

    // Shift amounts >= 32: any of bits 5..32 of `b`.
    let imm_big = {
        let hi = s.slice(d.imm, 5, 27);
        s.ne_const(hi, 0)
    };
    let imm0 = s.bit(d.imm, 0);
    let imm8 = s.slice(d.imm, 0, 8);

    let one8 = s.konst(8, 1);
    let zero8 = s.konst(8, 0);
    Operands { warp_lo, row_rs1, row_rs2, row_rd, row_31, row_w, len, base_s, base_g, imm_big, imm0, imm8, one8, zero8 }
}
