//! The RV32IM+Zba hart as an `isa-api` circuit: one machine step per forward pass of the woven network.
//!
//! Spec references ("Unpriv" = *The RISC-V Instruction Set Manual, Volume I: Unprivileged ISA* 20191213):
//! §2.2-§2.3 formats and immediates, §2.4 computational instructions, §2.5 control transfers, §2.6 loads and
//! stores, §2.7 FENCE, §2.8 ECALL/EBREAK, chapter 7 M (Table 7.1: division by zero and overflow), Bitmanip
//! 1.0.0 §2.1 Zba. The interpreter [`crate::Cpu`] is the oracle; `tests/circuit_lockstep.rs` runs both.
//!
//! # State (what every step writes to the trace)
//!
//! | item | kind | width | meaning |
//! |---|---|---|---|
//! | `PC` | register | log2(RAM/4) | word index of pc relative to the RAM base (RV32IM without C: pc is 4-aligned) |
//! | `BUSY` | register | 6 | micro-step: 0 = an instruction retired this step; 1..=32 inside a multi-step instruction; 62 = stopping |
//! | `X` | memory, 64 x 32 | | rows 0..31 = x0..x31 (row 0 is never written), row 32 = micro-code scratch |
//! | `RAM0..RAM3` | memories, (RAM/4) x 8 | | byte lane i holds the bytes at addresses with `(addr - base) % 4 == i` |
//! | `OUT` | port, 8 | | console byte (ECALL write, fd 1 or 2) |
//! | `EXIT` | port, 8 | | exit status (`a0 & 0xff`, as the process status under qemu-riscv32) |
//! | `FAULT` | port, 8 | | a [`FaultCode`]; the machine halts on the next step |
//!
//! Retire rule (no ISA knowledge needed): a step retired one instruction iff `BUSY` is 0 after it. A stop
//! (exit, fault, EBREAK) is two steps: the first emits `EXIT` or `FAULT` and sets `BUSY = 62` without any other
//! effect (pc stays at the ECALL/faulting instruction); the second is the single token `HALT`.
//!
//! # Multi-step instructions (micro-code inside the circuit; pc holds until the last step)
//!
//! - DIV/DIVU/REM/REMU: 33 steps. Magnitudes `|n|`, `|d|` are recomputed each step from rs1/rs2 (never written
//!   during the sequence). Steps `BUSY = k` (k = 0..31) decide quotient bit `31 - k` by *trial multiplication*:
//!   `T = Q | 1 << (31 - k)` is kept iff the 64-bit `T * |d| <= |n|` (the greedy bit-by-bit construction of
//!   `floor(|n| / |d|)`); `Q` lives in scratch row `X[32]`. Step 32 computes `R = |n| - Q * |d|`, applies the
//!   signs and writes rd. Division by zero gives `Q = 2^32 - 1`, `R = n` (Table 7.1) without a special case
//!   except the sign of DIV's quotient; signed overflow (`-2^31 / -1`) falls out as `Q = 2^31` negated.
//!   The 32x32 multiplier is shared with MUL/MULH/MULHSU/MULHU (restoring division would need 64 bits of
//!   state, i.e. 8 more trace tokens on EVERY step; trial multiplication needs only the scratch row).
//! - ECALL write (a7 = 64): one byte per step from `a1 + i` (`i` in scratch row `X[32]`) on `OUT`; the last
//!   byte's step writes `a0 = len` and retires. The whole buffer is checked to lie in RAM on the first step (as
//!   the interpreter does before writing anything). fd other than 1/2: `a0 = -EBADF` in one step; len 0: one step.
//!
//! # Deviations from the interpreter (documented, tested)
//!
//! - A jump, taken branch or fall-through whose target lies outside RAM faults AT the jump
//!   ([`FaultCode::JumpOutOfRam`]): the circuit's pc is a RAM word index and cannot hold an address outside
//!   RAM. The interpreter retires the jump and faults on the next fetch.
//! - EBREAK stops the machine with [`FaultCode::Breakpoint`] (qemu-riscv32 kills the process with SIGTRAP);
//!   the interpreter reports it as a resumable event.
//! - Exit and faults: pc stays at the ECALL / faulting instruction (the interpreter's pc moved past the exit).

use isa_api::{CircuitBuilder, CmpKind, MachineDesc, MemoryDesc, NodeId, PortDesc, RegisterDesc, ShiftKind};
use thiserror::Error;

/// Register indices of the machine.
pub mod reg {
    /// Word index of pc relative to the RAM base.
    pub const PC: u32 = 0;
    /// Micro-step counter; 0 after a step that retired an instruction.
    pub const BUSY: u32 = 1;
}

/// Memory indices of the machine.
pub mod mem {
    /// Integer register file x0..x31 plus scratch row 32.
    pub const X: u32 = 0;
    /// Byte lane `i` of RAM is memory `RAM0 + i`.
    pub const RAM0: u32 = 1;
    /// Scratch row of `X` used by micro-code.
    pub const SCRATCH_ROW: u64 = 32;
}

/// Output ports of the machine.
pub mod port {
    /// Console byte.
    pub const OUT: u32 = 0;
    /// Exit status (low 8 bits of a0).
    pub const EXIT: u32 = 1;
    /// Fault code ([`super::FaultCode`]).
    pub const FAULT: u32 = 2;
}

/// `BUSY` value of the step after an exit or fault: the machine halts.
pub const BUSY_STOPPING: u64 = 62;
const BUSY_BITS: u32 = 6;
/// Linux `-EBADF`, returned by write(2) for fds other than 1 and 2.
const NEG_EBADF: u64 = (-9i32) as u32 as u64;

/// Why the circuit stopped, as emitted on the `FAULT` port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FaultCode {
    /// Not an RV32IM+Zba instruction (Unpriv chapter 24; strict like [`crate::decode::decode`]).
    IllegalInstruction = 1,
    /// EBREAK (Unpriv §2.8).
    Breakpoint = 2,
    /// A load touched a byte outside RAM.
    LoadOutOfRam = 3,
    /// A store touched a byte outside RAM.
    StoreOutOfRam = 4,
    /// A jump or taken branch to an address that is not a multiple of 4 (Unpriv §2.5).
    MisalignedJump = 5,
    /// A jump, taken branch or fall-through to an address outside RAM.
    JumpOutOfRam = 6,
    /// The buffer of an ECALL write lies (partly) outside RAM.
    WriteBufferOutOfRam = 7,
    /// ECALL with a7 other than 64 (write), 93 (exit), 94 (exit_group).
    UnsupportedSyscall = 8,
}

impl FaultCode {
    /// The code for a FAULT port value.
    pub fn from_value(v: u64) -> Option<FaultCode> {
        use FaultCode::*;
        Some(match v {
            1 => IllegalInstruction,
            2 => Breakpoint,
            3 => LoadOutOfRam,
            4 => StoreOutOfRam,
            5 => MisalignedJump,
            6 => JumpOutOfRam,
            7 => WriteBufferOutOfRam,
            8 => UnsupportedSyscall,
            _ => return None,
        })
    }
}

impl std::fmt::Display for FaultCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FaultCode::IllegalInstruction => "illegal instruction",
            FaultCode::Breakpoint => "breakpoint (EBREAK)",
            FaultCode::LoadOutOfRam => "load outside RAM",
            FaultCode::StoreOutOfRam => "store outside RAM",
            FaultCode::MisalignedJump => "jump to a misaligned target",
            FaultCode::JumpOutOfRam => "jump or fall-through outside RAM",
            FaultCode::WriteBufferOutOfRam => "write(2) buffer outside RAM",
            FaultCode::UnsupportedSyscall => "unsupported ecall (supported: a7 = 64 write, 93/94 exit)",
        })
    }
}

/// RAM geometry of the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rv32MachineOptions {
    /// First RAM address (a multiple of 4).
    pub ram_base: u32,
    /// RAM size in bytes: a power of two, 64 bytes ..= 64 MiB, `base + size <= 2^32`.
    pub ram_size: u32,
}

impl Default for Rv32MachineOptions {
    /// 64 KiB at 0x10000 (every example program fits).
    fn default() -> Self {
        Rv32MachineOptions { ram_base: 0x1_0000, ram_size: 64 * 1024 }
    }
}

impl Rv32MachineOptions {
    /// 256 KiB at 0x10000 (the interpreter's default).
    pub fn ram_256k() -> Self {
        Rv32MachineOptions { ram_base: 0x1_0000, ram_size: 256 * 1024 }
    }

    /// Check the geometry.
    pub fn validate(&self) -> Result<(), CircuitError> {
        let s = self.ram_size;
        if !s.is_power_of_two() || !(64..=64 << 20).contains(&s) {
            return Err(CircuitError::RamSize(s));
        }
        if self.ram_base % 4 != 0 || self.ram_base as u64 + s as u64 > 1 << 32 {
            return Err(CircuitError::RamBase { base: self.ram_base, size: s });
        }
        Ok(())
    }

    /// Rows of each byte lane = words of RAM, as an address width (log2(size / 4)).
    pub fn lane_addr_width(&self) -> u32 {
        self.ram_size.trailing_zeros() - 2
    }

    /// The interpreter configuration with the same RAM.
    pub fn interp_config(&self) -> crate::Config {
        crate::Config { ram_base: self.ram_base, ram_size: self.ram_size }
    }
}

/// A machine geometry the circuit cannot be built for.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CircuitError {
    /// RAM size is not a power of two in 64 B ..= 64 MiB.
    #[error("RAM size {0:#x} must be a power of two between 64 bytes and 64 MiB")]
    RamSize(u32),
    /// RAM base not 4-aligned or RAM extends past 2^32.
    #[error("RAM base {base:#010x} must be a multiple of 4 and base + size ({size:#x}) at most 2^32")]
    RamBase { base: u32, size: u32 },
}

/// A [`CircuitBuilder`] with word-level helpers.
struct B {
    b: CircuitBuilder,
}

impl B {
    fn k(&mut self, w: u32, v: u64) -> NodeId {
        let m = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
        self.b.konst(w, v & m)
    }
    fn eqk(&mut self, x: NodeId, v: u64) -> NodeId {
        let w = self.b.width(x);
        let c = self.k(w, v);
        self.b.eq(x, c)
    }
    fn and1(&mut self, xs: &[NodeId]) -> NodeId {
        let mut acc = xs[0];
        for x in &xs[1..] {
            acc = self.b.and(acc, *x);
        }
        acc
    }
    /// OR of 1-bit signals (one AND-OR gate).
    fn or1(&mut self, xs: &[NodeId]) -> NodeId {
        let one = self.k(1, 1);
        let cases: Vec<(NodeId, NodeId)> = xs.iter().map(|x| (*x, one)).collect();
        self.b.and_or(1, &cases)
    }
    fn not(&mut self, x: NodeId) -> NodeId {
        self.b.not(x)
    }
    fn neg(&mut self, x: NodeId) -> NodeId {
        let w = self.b.width(x);
        let z = self.k(w, 0);
        self.b.sub(z, x)
    }
}

/// Build the RV32IM+Zba machine.
pub fn rv32im_machine(opts: &Rv32MachineOptions) -> Result<MachineDesc, CircuitError> {
    opts.validate()?;
    let aw = opts.lane_addr_width();
    let base = opts.ram_base as u64;
    let size = opts.ram_size as u64;
    let mut s = B { b: CircuitBuilder::new() };
    let s = &mut s;

    // ---- state -------------------------------------------------------------------------------------------
    let pc = s.b.reg(reg::PC, aw);
    let busy = s.b.reg(reg::BUSY, BUSY_BITS);
    let stopping = s.eqk(busy, BUSY_STOPPING);
    let busy0 = s.eqk(busy, 0);

    // ---- fetch (Unpriv §1.5: little-endian 32-bit parcel at pc) -------------------------------------------
    let lanes_f: Vec<NodeId> = (0..4).map(|i| s.b.load(mem::RAM0 + i, 8, pc)).collect();
    let w = s.b.concat(&lanes_f);
    let opc = s.b.slice(w, 0, 7);
    let rd = s.b.slice(w, 7, 5);
    let f3 = s.b.slice(w, 12, 3);
    let rs1 = s.b.slice(w, 15, 5);
    let rs2 = s.b.slice(w, 20, 5);
    let f7 = s.b.slice(w, 25, 7);
    let key10 = s.b.concat(&[opc, f3]);
    let key17 = s.b.concat(&[opc, f3, f7]);

    // ---- register reads (committed state at the start of the step) ---------------------------------------
    let rd_addr = s.b.zext(rd, 6);
    let rs1_addr = s.b.zext(rs1, 6);
    let rs2_addr = s.b.zext(rs2, 6);
    let a = s.b.load(mem::X, 32, rs1_addr);
    let bv = s.b.load(mem::X, 32, rs2_addr);
    let rowk = |s: &mut B, r: u64| {
        let ad = s.k(6, r);
        s.b.load(mem::X, 32, ad)
    };
    let scratch = rowk(s, mem::SCRATCH_ROW);
    let a0 = rowk(s, 10);
    let a1 = rowk(s, 11);
    let a2 = rowk(s, 12);
    let a7 = rowk(s, 17);

    // ---- decode: one parallel equality per instruction (Unpriv Table 24.2) --------------------------------
    let k10 = |s: &mut B, op: u64, f3: u64| s.eqk(key10, op | f3 << 7);
    let k17 = |s: &mut B, op: u64, f3: u64, f7: u64| s.eqk(key17, op | f3 << 7 | f7 << 10);
    let is_lui = s.eqk(opc, 0x37);
    let is_auipc = s.eqk(opc, 0x17);
    let is_jal = s.eqk(opc, 0x6f);
    let is_jalr = k10(s, 0x67, 0);
    let br: Vec<NodeId> = [0u64, 1, 4, 5, 6, 7].iter().map(|f| k10(s, 0x63, *f)).collect();
    let ld: Vec<NodeId> = [0u64, 1, 2, 4, 5].iter().map(|f| k10(s, 0x03, *f)).collect(); // lb lh lw lbu lhu
    let st: Vec<NodeId> = [0u64, 1, 2].iter().map(|f| k10(s, 0x23, *f)).collect(); // sb sh sw
    let addi = k10(s, 0x13, 0);
    let slti = k10(s, 0x13, 2);
    let sltiu = k10(s, 0x13, 3);
    let xori = k10(s, 0x13, 4);
    let ori = k10(s, 0x13, 6);
    let andi = k10(s, 0x13, 7);
    let slli = k17(s, 0x13, 1, 0);
    let srli = k17(s, 0x13, 5, 0);
    let srai = k17(s, 0x13, 5, 0x20);
    let rr = |s: &mut B, f7: u64, f3: u64| k17(s, 0x33, f3, f7);
    let add = rr(s, 0, 0);
    let sub = rr(s, 0x20, 0);
    let sll = rr(s, 0, 1);
    let slt = rr(s, 0, 2);
    let sltu = rr(s, 0, 3);
    let xor = rr(s, 0, 4);
    let srl = rr(s, 0, 5);
    let sra = rr(s, 0x20, 5);
    let or = rr(s, 0, 6);
    let and = rr(s, 0, 7);
    let mul = rr(s, 1, 0);
    let mulh = rr(s, 1, 1);
    let mulhsu = rr(s, 1, 2);
    let mulhu = rr(s, 1, 3);
    let dv: Vec<NodeId> = (4..8).map(|f| rr(s, 1, f)).collect(); // div divu rem remu
    let sh1 = rr(s, 0x10, 2);
    let sh2 = rr(s, 0x10, 4);
    let sh3 = rr(s, 0x10, 6);
    let is_fence = k10(s, 0x0f, 0);
    let is_ecall = s.eqk(w, 0x0000_0073);
    let is_ebreak = s.eqk(w, 0x0010_0073);
    let is_op = s.eqk(opc, 0x33);
    let is_branch = s.or1(&br);
    let is_load = s.or1(&ld);
    let is_store = s.or1(&st);
    let is_div = s.or1(&dv);
    let mut all = vec![is_lui, is_auipc, is_jal, is_jalr, addi, slti, sltiu, xori, ori, andi, slli, srli, srai];
    all.extend([add, sub, sll, slt, sltu, xor, srl, sra, or, and, mul, mulh, mulhsu, mulhu, sh1, sh2, sh3]);
    all.extend([is_branch, is_load, is_store, is_div, is_fence, is_ecall, is_ebreak]);
    let legal = s.or1(&all);
    let illegal = s.not(legal);

    // ---- immediates (Unpriv §2.3) -----------------------------------------------------------------------------
    let imm_i = {
        let x = s.b.slice(w, 20, 12);
        s.b.sext(x, 32)
    };
    let imm_s = {
        let lo = s.b.slice(w, 7, 5);
        let hi = s.b.slice(w, 25, 7);
        let x = s.b.concat(&[lo, hi]);
        s.b.sext(x, 32)
    };
    let imm_b = {
        let z = s.k(1, 0);
        let b1 = s.b.slice(w, 8, 4);
        let b5 = s.b.slice(w, 25, 6);
        let b11 = s.b.slice(w, 7, 1);
        let b12 = s.b.slice(w, 31, 1);
        let x = s.b.concat(&[z, b1, b5, b11, b12]);
        s.b.sext(x, 32)
    };
    let imm_u = {
        let z = s.k(12, 0);
        let hi = s.b.slice(w, 12, 20);
        s.b.concat(&[z, hi])
    };
    let imm_j = {
        let z = s.k(1, 0);
        let b1 = s.b.slice(w, 21, 10);
        let b11 = s.b.slice(w, 20, 1);
        let b12 = s.b.slice(w, 12, 8);
        let b20 = s.b.slice(w, 31, 1);
        let x = s.b.concat(&[z, b1, b11, b12, b20]);
        s.b.sext(x, 32)
    };

    // ---- pc as an address -------------------------------------------------------------------------------------
    let pc_addr = {
        let z = s.k(2, 0);
        let x = s.b.concat(&[z, pc]);
        let x = s.b.zext(x, 32);
        let bk = s.k(32, base);
        s.b.add(x, bk)
    };
    let four = s.k(32, 4);
    let link = s.b.add(pc_addr, four);
    let one_aw = s.k(aw, 1);
    let pc_seq = s.b.add(pc, one_aw);
    let pc_last = s.eqk(pc, (1u64 << aw) - 1);

    // ---- ALU (Unpriv §2.4, Zba §2.1) ---------------------------------------------------------------------------
    let op2 = s.b.mux(is_op, imm_i, bv);
    let shamt = s.b.slice(op2, 0, 5);
    let r_add = s.b.add(a, op2);
    let r_sub = s.b.sub(a, bv);
    let r_sll = s.b.shift(ShiftKind::Shl, a, shamt);
    let r_srl = s.b.shift(ShiftKind::Shr, a, shamt);
    let r_sra = s.b.shift(ShiftKind::Sar, a, shamt);
    let r_slt = {
        let c = s.b.cmp(CmpKind::Lts, a, op2);
        s.b.zext(c, 32)
    };
    let r_sltu = {
        let c = s.b.cmp(CmpKind::Ltu, a, op2);
        s.b.zext(c, 32)
    };
    let r_xor = s.b.xor(a, op2);
    let r_or = s.b.or(a, op2);
    let r_and = s.b.and(a, op2);
    let r_sh: Vec<NodeId> = (1..=3)
        .map(|k| {
            let x = s.b.shift_const(ShiftKind::Shl, a, k);
            s.b.add(x, bv)
        })
        .collect();
    let r_auipc = s.b.add(pc_addr, imm_u);

    // ---- division micro-code state (Unpriv §7.2) and the shared multiplier (§7.1) ---------------------------
    let f3b0 = s.b.bit(f3, 0);
    let f3b1 = s.b.bit(f3, 1);
    let div_signed = s.not(f3b0); // DIV, REM
    let div_rem = f3b1; // REM, REMU
    let a31 = s.b.bit(a, 31);
    let b31 = s.b.bit(bv, 31);
    let sn = s.b.and(div_signed, a31);
    let sd = s.b.and(div_signed, b31);
    let na = s.neg(a);
    let nb = s.neg(bv);
    let un = s.b.mux(sn, a, na);
    let ud = s.b.mux(sd, bv, nb);
    let busy5 = s.b.slice(busy, 0, 5);
    let div_final = s.eqk(busy, 32);
    let div_trial_phase = s.not(div_final);
    let q_in = {
        let z = s.k(32, 0);
        s.b.mux(busy0, scratch, z)
    };
    let trial = {
        let top = s.k(32, 1 << 31);
        let bitk = s.b.shift(ShiftKind::Shr, top, busy5);
        s.b.or(q_in, bitk)
    };
    let m_x = {
        let dx = s.b.mux(div_final, trial, scratch);
        s.b.mux(is_div, a, dx)
    };
    let m_y = s.b.mux(is_div, bv, ud);
    let p_lo = s.b.mul_lo(m_x, m_y);
    let p_hi = s.b.mul_hi(m_x, m_y, false, false);
    // Signed high parts from the unsigned one: hi_s = hi_u - [a<0]·b - [b<0]·a (mod 2^32).
    let z32 = s.k(32, 0);
    let corr_a = s.b.mux(a31, z32, bv);
    let corr_b = s.b.mux(b31, z32, a);
    let corr_ab = s.b.add(corr_a, corr_b);
    let r_mulh = s.b.sub(p_hi, corr_ab);
    let r_mulhsu = s.b.sub(p_hi, corr_a);
    let fits = {
        let hz = s.eqk(p_hi, 0);
        let le = s.b.cmp(CmpKind::Leu, p_lo, un);
        s.b.and(hz, le)
    };
    let q_next = s.b.mux(fits, q_in, trial);
    let div_res = {
        let r = s.b.sub(un, p_lo);
        let mag = s.b.mux(div_rem, scratch, r);
        let d_nz = {
            let z = s.eqk(bv, 0);
            s.not(z)
        };
        let qs = s.b.xor(sn, sd);
        let qneg = s.b.and(qs, d_nz);
        let neg = s.b.mux(div_rem, qneg, sn);
        let nm = s.neg(mag);
        s.b.mux(neg, mag, nm)
    };
    let busy_inc = {
        let one = s.k(BUSY_BITS, 1);
        s.b.add(busy, one)
    };

    // ---- ECALL (Unpriv §2.8; Linux syscall ABI of qemu-riscv32) -----------------------------------------------
    let sys_write = {
        let e = s.eqk(a7, 64);
        s.b.and(is_ecall, e)
    };
    let sys_exit = {
        let e93 = s.eqk(a7, 93);
        let e94 = s.eqk(a7, 94);
        let e = s.b.or(e93, e94);
        s.b.and(is_ecall, e)
    };
    let sys_bad = {
        let known = s.b.or(sys_write, sys_exit);
        let nk = s.not(known);
        s.b.and(is_ecall, nk)
    };
    let fd_ok = {
        let f1 = s.eqk(a0, 1);
        let f2 = s.eqk(a0, 2);
        s.b.or(f1, f2)
    };
    let nfd = s.not(fd_ok);
    let wr_badfd = s.b.and(sys_write, nfd);
    let wr_ok = s.b.and(sys_write, fd_ok);
    let len0 = s.eqk(a2, 0);
    let nlen0 = s.not(len0);
    let wr_len0 = s.b.and(wr_ok, len0);
    let wr_emit = s.b.and(wr_ok, nlen0);
    let wr_i = q_in; // 0 on the first step, else the scratch row
    let wr_i1 = {
        let one = s.k(32, 1);
        s.b.add(wr_i, one)
    };
    let wr_last = s.b.eq(wr_i1, a2);
    let wr_more = s.not(wr_last);
    // Buffer [a1, a1 + len) inside RAM (checked on the first step): a1 >= base and a1 - base + len <= size.
    let buf_bad = {
        let a1x = s.b.zext(a1, 34);
        let bk = s.k(34, base);
        let off = s.b.sub(a1x, bk);
        let below = s.b.bit(off, 33);
        let lenx = s.b.zext(a2, 34);
        let end = s.b.add(off, lenx);
        let sk = s.k(34, size);
        let over = s.b.cmp(CmpKind::Ltu, sk, end);
        let bad = s.b.or(below, over);
        let first = s.b.and(sys_write, fd_ok);
        let first = s.b.and(first, busy0);
        s.b.and(first, bad)
    };

    // ---- effective address, range check, byte lanes (Unpriv §2.6) ---------------------------------------------
    let ea_base = s.b.mux(is_ecall, a, a1);
    let ea_off = {
        let x = s.b.mux(is_store, imm_i, imm_s);
        s.b.mux(is_ecall, x, wr_i)
    };
    let ea = s.b.add(ea_base, ea_off);
    let off = {
        let bk = s.k(32, base);
        s.b.sub(ea, bk)
    };
    // Access size n: 1 (lb, lbu, sb, ecall byte), 2 (lh, lhu, sh), 4 (lw, sw): in range iff off < size - n + 1.
    let sz2 = s.or1(&[ld[1], ld[4], st[1]]);
    let sz4 = s.or1(&[ld[2], st[2]]);
    let ok1 = {
        let k = s.k(32, size);
        s.b.cmp(CmpKind::Ltu, off, k)
    };
    let ok2 = {
        let k = s.k(32, size - 1);
        s.b.cmp(CmpKind::Ltu, off, k)
    };
    let ok4 = {
        let k = s.k(32, size - 3);
        s.b.cmp(CmpKind::Ltu, off, k)
    };
    let sz1 = {
        let x = s.b.or(sz2, sz4);
        s.not(x)
    };
    let in_ram = {
        let c = [(sz1, ok1), (sz2, ok2), (sz4, ok4)];
        s.b.and_or(1, &c)
    };
    let not_in_ram = s.not(in_ram);
    let ld_bad = s.b.and(is_load, not_in_ram);
    let st_bad = s.b.and(is_store, not_in_ram);
    let row0 = s.b.slice(off, 2, aw);
    let boff = s.b.slice(off, 0, 2);
    let row1 = s.b.add(row0, one_aw);
    let rows: Vec<NodeId> = (0..4u64)
        .map(|i| {
            // lane i holds byte (i - boff) mod 4 of the access; it lies in the next row when i < boff.
            let ik = s.k(2, i);
            let next = s.b.cmp(CmpKind::Ltu, ik, boff);
            s.b.mux(next, row0, row1)
        })
        .collect();
    let lanes_d: Vec<NodeId> = (0..4).map(|i| s.b.load(mem::RAM0 + i, 8, rows[i as usize])).collect();
    let raw = s.b.concat(&lanes_d);
    let rot = {
        let z = s.k(3, 0);
        s.b.concat(&[z, boff])
    };
    let lword = s.b.shift(ShiftKind::Rotr, raw, rot);
    let lb8 = s.b.slice(lword, 0, 8);
    let lh16 = s.b.slice(lword, 0, 16);
    let r_lb = s.b.sext(lb8, 32);
    let r_lh = s.b.sext(lh16, 32);
    let r_lbu = s.b.zext(lb8, 32);
    let r_lhu = s.b.zext(lh16, 32);
    // Store: lane i gets byte (i - boff) mod 4 of rs2, i.e. rotate rs2 left by 8·boff.
    let sword = s.b.shift(ShiftKind::Rotl, bv, rot);

    // ---- control transfers (Unpriv §2.5) -----------------------------------------------------------------------
    let taken = {
        let eq = s.b.eq(a, bv);
        let ne = s.not(eq);
        let lt = s.b.cmp(CmpKind::Lts, a, bv);
        let ge = s.not(lt);
        let ltu = s.b.cmp(CmpKind::Ltu, a, bv);
        let geu = s.not(ltu);
        let c: Vec<(NodeId, NodeId)> = br.iter().zip([eq, ne, lt, ge, ltu, geu]).map(|(x, y)| (*x, y)).collect();
        s.b.and_or(1, &c)
    };
    let jumps = s.or1(&[is_jal, is_jalr, taken]);
    let t_base = s.b.mux(is_jalr, pc_addr, a);
    let t_off = {
        let x = s.b.mux(is_jal, imm_b, imm_j);
        s.b.mux(is_jalr, x, imm_i)
    };
    let target = {
        let t = s.b.add(t_base, t_off);
        let hi = s.b.slice(t, 1, 31);
        let z = s.k(1, 0);
        s.b.concat(&[z, hi]) // JALR clears bit 0; B/J offsets are even anyway
    };
    let toff = {
        let bk = s.k(32, base);
        s.b.sub(target, bk)
    };
    let t_mis = s.b.bit(toff, 1);
    let t_in = {
        let k = s.k(32, size);
        s.b.cmp(CmpKind::Ltu, toff, k)
    };
    let pc_jump = s.b.slice(toff, 2, aw);
    let jmp_mis = s.b.and(jumps, t_mis);
    let jmp_oor = {
        let ok = s.not(t_in);
        let al = s.not(t_mis);
        s.and1(&[jumps, ok, al])
    };

    // ---- step outcome ------------------------------------------------------------------------------------------
    // Multi-step continuation (pc holds): a division's trial steps, a write with bytes left.
    let div_trial = s.b.and(is_div, div_trial_phase);
    let wr_cont = s.b.and(wr_emit, wr_more);
    let holds = s.or1(&[div_trial, wr_cont, sys_exit]);
    let advances = s.not(holds);
    let no_jump = s.not(jumps);
    let seq_oor = s.and1(&[advances, no_jump, pc_last]);
    let faults = [
        (illegal, FaultCode::IllegalInstruction),
        (is_ebreak, FaultCode::Breakpoint),
        (ld_bad, FaultCode::LoadOutOfRam),
        (st_bad, FaultCode::StoreOutOfRam),
        (jmp_mis, FaultCode::MisalignedJump),
        (jmp_oor, FaultCode::JumpOutOfRam),
        (seq_oor, FaultCode::JumpOutOfRam),
        (buf_bad, FaultCode::WriteBufferOutOfRam),
        (sys_bad, FaultCode::UnsupportedSyscall),
    ];
    let fault_sigs: Vec<NodeId> = faults.iter().map(|f| f.0).collect();
    let fault = s.or1(&fault_sigs);
    let fault_code = {
        // Only seq_oor can coincide with another fault (e.g. an illegal word in the last RAM word): the
        // earlier entries take precedence by masking seq_oor.
        let others: Vec<NodeId> = fault_sigs[..6].iter().chain(&fault_sigs[7..]).copied().collect();
        let oth = s.or1(&others);
        let noth = s.not(oth);
        let seq_only = s.b.and(seq_oor, noth);
        let mut c = Vec::new();
        for (i, (sig, code)) in faults.iter().enumerate() {
            let sel = if i == 6 { seq_only } else { *sig };
            let v = s.k(8, *code as u64);
            c.push((sel, v));
        }
        s.b.and_or(8, &c)
    };
    let nfault = s.not(fault);
    let go = nfault; // the halt step (stopping) does nothing anyway

    // rd value, one-hot over the instruction.
    let r_link = link;
    let ldv = [r_lb, r_lh, lword, r_lbu, r_lhu];
    let mut cases: Vec<(NodeId, NodeId)> = vec![(is_lui, imm_u), (is_auipc, r_auipc), (is_jal, r_link), (is_jalr, r_link)];
    for (i, l) in ld.iter().enumerate() {
        cases.push((*l, ldv[i]));
    }
    cases.extend([(addi, r_add), (add, r_add), (sub, r_sub), (slti, r_slt), (slt, r_slt), (sltiu, r_sltu), (sltu, r_sltu)]);
    cases.extend([(xori, r_xor), (xor, r_xor), (ori, r_or), (or, r_or), (andi, r_and), (and, r_and)]);
    cases.extend([(slli, r_sll), (sll, r_sll), (srli, r_srl), (srl, r_srl), (srai, r_sra), (sra, r_sra)]);
    cases.extend([(mul, p_lo), (mulh, r_mulh), (mulhsu, r_mulhsu), (mulhu, p_hi)]);
    cases.extend([(sh1, r_sh[0]), (sh2, r_sh[1]), (sh3, r_sh[2])]);
    let div_fin = s.b.and(is_div, div_final);
    cases.push((div_fin, div_res));
    let writes_rd: Vec<NodeId> = cases.iter().map(|c| c.0).collect();
    let rd_val = s.b.and_or(32, &cases);
    let wr_rd = s.or1(&writes_rd);
    let rd_nz = {
        let z = s.eqk(rd, 0);
        s.not(z)
    };
    let we_rd = s.and1(&[wr_rd, rd_nz, go]);
    // Scratch writes (continuing micro-code) and a0 writes (syscall results).
    let we_scr_div = s.b.and(div_trial, go);
    let we_scr_wr = s.b.and(wr_cont, go);
    let wr_done = s.b.and(wr_emit, wr_last);
    let a0_sel = s.or1(&[wr_badfd, wr_len0, wr_done]);
    let we_a0 = s.b.and(a0_sel, go);
    let ebadf = s.k(32, NEG_EBADF);
    let a0_val = {
        let c = [(wr_badfd, ebadf), (wr_len0, a2), (wr_done, a2)];
        s.b.and_or(32, &c)
    };
    let x_data = s.b.and_or(32, &[(we_rd, rd_val), (we_scr_div, q_next), (we_scr_wr, wr_i1), (we_a0, a0_val)]);
    let scr_k = s.k(6, mem::SCRATCH_ROW);
    let a0_k = s.k(6, 10);
    let we_scr = s.b.or(we_scr_div, we_scr_wr);
    let x_addr = s.b.and_or(6, &[(we_rd, rd_addr), (we_scr, scr_k), (we_a0, a0_k)]);
    let we_x = s.or1(&[we_rd, we_scr, we_a0]);

    // Next pc.
    let jump_go = s.and1(&[jumps, advances, go]);
    let seq_go = s.and1(&[no_jump, advances, go]);
    let stay = {
        let mv = s.b.or(jump_go, seq_go);
        s.not(mv)
    };
    let pc_next = s.b.and_or(aw, &[(jump_go, pc_jump), (seq_go, pc_seq), (stay, pc)]);
    // Next BUSY.
    let stop = s.b.or(fault, sys_exit);
    let b_trial = s.b.and(we_scr_div, nfault);
    let one6 = s.k(BUSY_BITS, 1);
    let stop_k = s.k(BUSY_BITS, BUSY_STOPPING);
    let busy_next = s.b.and_or(BUSY_BITS, &[(b_trial, busy_inc), (we_scr_wr, one6), (stop, stop_k)]);

    // Stores: lane i written iff (i - boff) mod 4 < n.
    let st_go = s.b.and(is_store, go);
    for i in 0..4u64 {
        let rel = {
            let ik = s.k(2, i);
            s.b.sub(ik, boff)
        };
        let c1 = s.eqk(rel, 0);
        let c2 = {
            let k2 = s.k(2, 2);
            s.b.cmp(CmpKind::Ltu, rel, k2)
        };
        let en = s.b.and_or(1, &[(sz1, c1), (sz2, c2), (sz4, st_go)]);
        let en = s.b.and(en, st_go);
        let data = s.b.slice(sword, 8 * i as u32, 8);
        s.b.mem_write(mem::RAM0 + i as u32, rows[i as usize], data, en);
    }
    // Register-file write.
    s.b.mem_write(mem::X, x_addr, x_data, we_x);
    // Ports.
    let out_en = s.b.and(wr_emit, go);
    let out_v = s.b.slice(lword, 0, 8);
    s.b.output(port::OUT, out_v, out_en);
    let exit_en = s.b.and(sys_exit, go);
    let exit_v = s.b.slice(a0, 0, 8);
    s.b.output(port::EXIT, exit_v, exit_en);
    s.b.output(port::FAULT, fault_code, fault);
    s.b.set_next(reg::PC, pc_next);
    s.b.set_next(reg::BUSY, busy_next);
    s.b.halt(stopping);

    let mut memories = vec![MemoryDesc { name: "X".into(), word_width: 32, addr_width: 6 }];
    memories.extend((0..4).map(|i| MemoryDesc { name: format!("RAM{i}"), word_width: 8, addr_width: aw }));
    let desc = MachineDesc::new(
        "rv32im",
        vec![RegisterDesc { name: "PC".into(), width: aw }, RegisterDesc { name: "BUSY".into(), width: BUSY_BITS }],
        memories,
        vec![
            PortDesc { name: "OUT".into(), width: 8 },
            PortDesc { name: "EXIT".into(), width: 8 },
            PortDesc { name: "FAULT".into(), width: 8 },
        ],
        s.b.circuit.clone(),
    );
    Ok(desc)
}

/// A hart run by the reference evaluator straight from the circuit, with the host's view of the ports.
#[derive(Clone, Debug)]
pub struct CircuitHart {
    /// The evaluator (description, protocol, state).
    pub reference: isa_api::Reference,
    opts: Rv32MachineOptions,
}

/// What one circuit step did, as the host sees it in the trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HartStep {
    /// The step was `HALT`.
    pub halted: bool,
    /// `BUSY` was 0 after the step: one instruction retired.
    pub retired: bool,
    /// Console byte on `OUT`.
    pub out: Option<u8>,
    /// Exit status on `EXIT`.
    pub exit: Option<u8>,
    /// Fault code on `FAULT` (raw value; see [`FaultCode::from_value`]).
    pub fault: Option<u8>,
}

impl CircuitHart {
    /// A circuit hart in the exact state of `cpu` (pc, x0..x31, RAM). The RAM geometry must match `opts`.
    pub fn from_cpu(cpu: &crate::Cpu, opts: &Rv32MachineOptions) -> Result<CircuitHart, HartError> {
        let desc = rv32im_machine(opts)?;
        let ram = cpu.ram();
        if ram.base() != opts.ram_base || ram.size() != opts.ram_size {
            return Err(HartError::RamMismatch { base: ram.base(), size: ram.size() });
        }
        let pc_off = cpu.pc().wrapping_sub(opts.ram_base);
        if cpu.pc() % 4 != 0 || pc_off >= opts.ram_size {
            return Err(HartError::BadPc(cpu.pc()));
        }
        let mut reference = isa_api::Reference::new(desc);
        reference.state.regs[reg::PC as usize] = (pc_off / 4) as u64;
        let xs: Vec<u64> = cpu.regs().iter().map(|v| *v as u64).collect();
        reference.load(mem::X, 0, &xs);
        for lane in 0..4u32 {
            let bytes: Vec<u64> = ram.bytes().iter().skip(lane as usize).step_by(4).map(|b| *b as u64).collect();
            reference.load(mem::RAM0 + lane, 0, &bytes);
        }
        Ok(CircuitHart { reference, opts: *opts })
    }

    /// Loads an ELF executable exactly as [`crate::load_elf`] does for the interpreter (pc = entry, sp = top of
    /// RAM rounded down to 16 bytes).
    pub fn load_elf(bytes: &[u8], opts: &Rv32MachineOptions) -> Result<CircuitHart, HartError> {
        opts.validate()?;
        let cpu = crate::load_elf(bytes, opts.interp_config())?;
        Self::from_cpu(&cpu, opts)
    }

    /// pc as a byte address.
    pub fn pc(&self) -> u32 {
        self.opts.ram_base.wrapping_add((self.reference.state.regs[reg::PC as usize] as u32) << 2)
    }

    /// Register `x[i]` (from the register-file memory).
    pub fn x(&self, i: usize) -> u32 {
        self.reference.state.mems[mem::X as usize].get(i).copied().unwrap_or(0) as u32
    }

    /// x0..x31.
    pub fn regs(&self) -> [u32; 32] {
        std::array::from_fn(|i| self.x(i))
    }

    /// The `BUSY` register.
    pub fn busy(&self) -> u64 {
        self.reference.state.regs[reg::BUSY as usize]
    }

    /// The byte at `addr`, if in RAM.
    pub fn ram_byte(&self, addr: u32) -> Option<u8> {
        let off = addr.checked_sub(self.opts.ram_base)?;
        if off >= self.opts.ram_size {
            return None;
        }
        Some(self.reference.state.mems[(mem::RAM0 + off % 4) as usize][(off / 4) as usize] as u8)
    }

    /// One machine step.
    pub fn step(&mut self) -> HartStep {
        let o = self.reference.step();
        if o.halted {
            return HartStep { halted: true, ..Default::default() };
        }
        let mut h = HartStep { retired: self.busy() == 0, ..Default::default() };
        for (p, v) in o.outputs {
            match p {
                port::OUT => h.out = Some(v as u8),
                port::EXIT => h.exit = Some(v as u8),
                port::FAULT => h.fault = Some(v as u8),
                _ => {}
            }
        }
        h
    }

    /// Steps until one instruction retires or the machine stops (at most `max_steps` steps); returns the
    /// console bytes written on the way, the stop (if any) and the steps taken.
    pub fn step_instruction(&mut self, max_steps: usize) -> InstrOutcome {
        let mut o = InstrOutcome::default();
        while o.steps < max_steps {
            let h = self.step();
            o.steps += 1;
            o.out.extend(h.out);
            if h.halted {
                o.halted = true;
                return o;
            }
            if h.exit.is_some() {
                o.exit = h.exit;
            }
            if h.fault.is_some() {
                o.fault = h.fault.and_then(|v| FaultCode::from_value(v as u64));
            }
            if h.retired {
                o.retired = true;
                return o;
            }
        }
        o
    }
}

/// Result of [`CircuitHart::step_instruction`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstrOutcome {
    /// One instruction retired.
    pub retired: bool,
    /// The machine halted (after an exit or a fault).
    pub halted: bool,
    /// Exit status emitted.
    pub exit: Option<u8>,
    /// Fault emitted.
    pub fault: Option<FaultCode>,
    /// Console bytes.
    pub out: Vec<u8>,
    /// Machine steps taken.
    pub steps: usize,
}

/// Why a circuit hart could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HartError {
    /// Bad RAM geometry.
    #[error(transparent)]
    Circuit(#[from] CircuitError),
    /// The ELF could not be loaded.
    #[error(transparent)]
    Elf(#[from] crate::ElfError),
    /// The interpreter's RAM differs from the circuit's.
    #[error("interpreter RAM {size:#x} bytes at {base:#010x} differs from the circuit's RAM")]
    RamMismatch { base: u32, size: u32 },
    /// pc not 4-aligned or outside RAM.
    #[error("pc {0:#010x} is misaligned or outside RAM")]
    BadPc(u32),
}
