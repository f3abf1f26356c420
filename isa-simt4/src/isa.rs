//! The SIMT4 instruction set: the contract between the CUDA front end ([`crate::cuda`]), the reference
//! interpreter ([`crate::interp`]) and the circuit ([`crate::circuit`]).
//!
//! # The machine
//!
//! One instruction stream drives `lanes` lanes (4 by default; 8, 16, 32 from the config). A block of threads
//! wider than the lanes runs as several *warps* (at most `warps`): warp `w` lane `l` is thread
//! `tid = w * lanes + l` of the block. Per lane and warp: 32 registers of 32 bits (`r0` reads 0 and is never
//! written by a program; `r31` is the lane's *activity counter*, see below). Uniform state: `PC` (12 bits,
//! instruction index), `WARP` (the running warp), `BUSY` (6 bits: the micro-step of a micro-coded instruction,
//! the lane a store or atomic is at or the step a division is at; 0 between instructions). Per lane (not per
//! warp: a division completes within its warp's turn) two 32-bit division registers `DQ` and `DR`, see below;
//! only division micro-steps read or change them.
//! Memories: the program (4096 words of 64 bits), shared memory (`shared_words` words of 32 bits), global
//! memory (`global_words` words of 32 bits), per-warp saved PCs (`WPC`). All memory is word-addressed.
//!
//! # Activity counters (divergence and reconvergence)
//!
//! Divergence uses one counter per lane (Keryell and Paris, "Activity counter: new optimization for the
//! dynamic scheduling of SIMD control flow", ICPP 1993) held in the lane's `r31` of the running warp. A lane is
//! *active* when its counter is 0. Structured control flow nests *levels*: entering a level (`IF`) an inactive
//! lane counts one level deeper; leaving it (`ENDIF`) one level shallower, so a lane that went inactive `k`
//! levels up wakes when the `k`-th `ENDIF` closes. `BRK` parks active lanes `k` levels up: the front end uses it
//! for a loop's exit test, `break`, `continue` and `return` (it knows how many levels each crosses). `JNONE`/
//! `JANY` branch on whether any lane is active: a body no lane runs is skipped, a loop ends when no lane is
//! left in it, so loops whose trip counts differ per lane, nested divergence and early returns need no stack.
//!
//! # Encoding (one 64-bit word per instruction)
//!
//! | bits | field |
//! |---|---|
//! | 0..6 | opcode ([`Opcode`]) |
//! | 6..11 | `rd` |
//! | 11..16 | `rs1` |
//! | 16..21 | `rs2` |
//! | 21 | `imm_b`: operand `b` is `imm` instead of `R[rs2]` |
//! | 32..64 | `imm` (32 bits) |
//!
//! Unused fields are 0. A word whose opcode is not in [`Opcode`] (e.g. 0, an empty program row) is an illegal
//! instruction: the machine faults ([`FaultKind::Illegal`]).
//!
//! # Semantics (per lane `l` of warp `w = WARP`, `R` = the lane's registers of warp `w`)
//!
//! `a = R[rs1]`, `b = imm_b ? imm : R[rs2]`, `act = (R[31] & 0xFF) == 0`. Arithmetic is modulo 2^32.
//!
//! - ALU ops write `rd = f(a, b)` in active lanes, `PC + 1`: `ADD SUB MUL` (low 32 bits), `MULHI` (high 32
//!   bits of the signed 64-bit product), `MULHU` (unsigned), `AND OR XOR`, `SHL SHR SRA` (shift amount `b` as an
//!   unsigned 32-bit number; an amount >= 32 gives 0 for `SHL`/`SHR` and 32 copies of the sign bit for `SRA`,
//!   as PTX's `shl`/`shr` clamp; C and OpenCL leave it undefined or take it mod 32, so portable kernels avoid
//!   it), `SLT SLTU SEQ SNE` (1 or 0), `MIN MAX` (signed), `MINU MAXU`, `CMOV` (`rd = a != 0 ? b : rd`), `TID`
//!   (`rd = w * lanes + l`, operands unused).
//! - Division (micro-coded): `DIV DIVU REM REMU` write `rd = a / b` (`DIV` signed, `DIVU` unsigned) or
//!   `rd = a % b` (`REM`, `REMU`) in active lanes, with C's truncation toward zero and the RISC-V M rules for
//!   what C leaves undefined: `x / 0 = -1` (all ones) and `x % 0 = x` (signed and unsigned),
//!   `INT_MIN / -1 = INT_MIN`, `INT_MIN % -1 = 0`. They run radix-4 restoring division on magnitudes over
//!   [`DIV_STEPS`] = 18 micro-steps, `BUSY = 0 ..= 17`, the `PC` held until the last. Per active lane `l`, with
//!   `|x|` = `x` for `DIVU`/`REMU` and the absolute value of `x` as a signed number for `DIV`/`REM` (so
//!   `|INT_MIN| = 2^31`), and `d = |b|`:
//!   - `BUSY = 0`: `DQ = |a|`, `DR = 0`.
//!   - `BUSY = 1 ..= 16`: `t = DR * 4 + (DQ >> 30)` (exact, 34 bits); the digit `q` is the largest of 0..=3
//!     with `q * d <= t` (`q = 3` when `d = 0`); `DR = t - q * d` (its low 32 bits), `DQ = (DQ << 2) | q`
//!     (32 bits).
//!   - `BUSY = 17` (the last): `rd` = for `DIVU` `DQ`, for `REMU` `DR`, for `DIV` `DQ` negated when `a` and
//!     `b` differ in sign and `b != 0`, for `REM` `DR` negated when `a < 0`; the division registers keep
//!     their values; `PC + 1`.
//!
//!   Every other micro-step writes only the active lanes' division registers and `BUSY = BUSY + 1`; `a` and `b`
//!   are read at every step (no register changes in between). Inactive lanes change nothing (their
//!   division registers keep their values). After the 16 steps `DQ` and `DR` are the quotient and remainder
//!   of the magnitudes (with `d = 0`: `DQ` all ones, `DR = |a|`).
//! - Memory ops address word `base + R[rs1]` where `base = imm & 0xFFFF` and the access is in bounds when
//!   `R[rs1] < len = imm >> 16` (unsigned: a negative index is out of bounds). An active lane out of bounds
//!   faults ([`FaultKind::Bounds`]) with its lane and `R[rs1]`; nothing of that instruction's lane happens.
//!   `LDS`/`LDG`: `rd = shared/global[addr]` in every active lane, one step. `STS`/`STG`: `mem[addr] = R[rs2]`;
//!   `ATOMS`/`ATOMG`: `rd = mem[addr]; mem[addr] += R[rs2]` (the old value). Stores and atomics are micro-coded
//!   over `BUSY = 0 .. lanes-1`: step `BUSY = l` does lane `l`'s access if it is active (so the lanes of a warp
//!   store, and add, in lane order; the last lane wins a store conflict); the last micro-step advances `PC`.
//!   A lane's bounds are checked at its own micro-step.
//! - Counter ops, in every lane (active or not), `c = R[31] & 0xFF`, `PC + 1`:
//!   `IF rs1` (with `imm & 1`: the condition is true): `c' = c == 0 ? (a != 0 || imm & 1 ? 0 : 1) : c + 1`;
//!   `ELSE`: `c' = c == 0 ? 1 : c == 1 ? 0 : c`; `ENDIF`: `c' = c == 0 ? 0 : c - 1`;
//!   `BRK rs1, imm = k`: `c' = c == 0 && a == 0 ? k : c` (with `rs1 = r0` every active lane parks);
//!   `CRESET imm = n`: `c' = w * lanes + l < n ? 0 : 1` (a new block: threads past the block size stay off).
//!   `R[31]` is written as `c'` (zero-extended); counters stay below 256 (the front end limits nesting).
//! - Uniform control: `JMP imm`: `PC = imm`. `JNONE imm`: `PC = imm` when no lane is active, else `PC + 1`.
//!   `JANY imm`: `PC = imm` when some lane is active, else `PC + 1`.
//!   `BAR imm = n` (a barrier, `n <= warps` warps in the block): with `n <= 1`, `PC + 1`; else `WPC[w] = PC + 1`,
//!   `WARP = (w + 1) mod n`, `PC = WPC[WARP]` (warps start with `WPC = 0`, the program's first instruction).
//!   Warps run in turn from barrier to barrier; every warp of a block must execute the same sequence of `BAR`s
//!   (the front end keeps barriers out of code a warp can skip).
//!   `HALT`: the machine stops (the step writes `HALT`).
//!
//! Faults halt the machine after one step that writes the fault word on the `FAULT` port ([`Fault::word`]).

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};

/// Registers per lane and warp.
pub const REGS: u32 = 32;
/// The activity-counter register.
pub const COUNTER_REG: u32 = 31;
/// Program rows (the `PC` is 12 bits).
pub const PROGRAM_WORDS: u32 = 4096;
/// Bits of `PC`.
pub const PC_BITS: u32 = 12;
/// Bits of `BUSY` (the micro-step: a store's lane, below 32, or a division's step, below [`DIV_STEPS`]).
pub const BUSY_BITS: u32 = 6;
/// Micro-steps of a division or remainder (`DIV`, `DIVU`, `REM`, `REMU`): one loads the division registers,
/// [`DIV_ITERATIONS`] find two quotient bits each, one writes `rd`.
pub const DIV_STEPS: u32 = 18;
/// Radix-4 iteration steps of a division (`BUSY = 1 ..= DIV_ITERATIONS`).
pub const DIV_ITERATIONS: u32 = 16;

/// Opcodes (bits 0..6 of an instruction word).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum Opcode {
    Add = 1,
    Sub = 2,
    Mul = 3,
    Mulhi = 4,
    Mulhu = 5,
    And = 6,
    Or = 7,
    Xor = 8,
    Shl = 9,
    Shr = 10,
    Sra = 11,
    Slt = 12,
    Sltu = 13,
    Seq = 14,
    Sne = 15,
    Min = 16,
    Max = 17,
    Minu = 18,
    Maxu = 19,
    Cmov = 20,
    Tid = 21,
    Div = 22,
    Divu = 23,
    Lds = 24,
    Ldg = 25,
    Sts = 26,
    Stg = 27,
    Atoms = 28,
    Atomg = 29,
    Rem = 30,
    Remu = 31,
    Jmp = 32,
    Jnone = 33,
    Jany = 34,
    If = 35,
    Else = 36,
    Endif = 37,
    Brk = 38,
    Creset = 39,
    Bar = 40,
    Halt = 41,
}

impl Opcode {
    /// Every opcode, in numeric order.
    pub const ALL: [Opcode; 41] = [
        Opcode::Add,
        Opcode::Sub,
        Opcode::Mul,
        Opcode::Mulhi,
        Opcode::Mulhu,
        Opcode::And,
        Opcode::Or,
        Opcode::Xor,
        Opcode::Shl,
        Opcode::Shr,
        Opcode::Sra,
        Opcode::Slt,
        Opcode::Sltu,
        Opcode::Seq,
        Opcode::Sne,
        Opcode::Min,
        Opcode::Max,
        Opcode::Minu,
        Opcode::Maxu,
        Opcode::Cmov,
        Opcode::Tid,
        Opcode::Div,
        Opcode::Divu,
        Opcode::Lds,
        Opcode::Ldg,
        Opcode::Sts,
        Opcode::Stg,
        Opcode::Atoms,
        Opcode::Atomg,
        Opcode::Rem,
        Opcode::Remu,
        Opcode::Jmp,
        Opcode::Jnone,
        Opcode::Jany,
        Opcode::If,
        Opcode::Else,
        Opcode::Endif,
        Opcode::Brk,
        Opcode::Creset,
        Opcode::Bar,
        Opcode::Halt,
    ];

    /// The opcode numbered `v`, if any.
    pub fn from_u8(v: u8) -> Option<Opcode> {
        Self::ALL.iter().copied().find(|o| *o as u8 == v)
    }

    /// Lower-case mnemonic (`add`, `atomg`, ...).
    pub fn mnemonic(self) -> String {
        format!("{self:?}").to_lowercase()
    }

    /// ALU ops: write `rd` in active lanes, one step (the divisions are not among them: [`Self::is_div`]).
    pub fn is_alu(self) -> bool {
        (self as u8) <= Opcode::Tid as u8
    }
    /// Division and remainder (`DIV`, `DIVU`, `REM`, `REMU`): micro-coded over [`DIV_STEPS`] steps, they write
    /// `rd` in active lanes at the last.
    pub fn is_div(self) -> bool {
        matches!(self, Opcode::Div | Opcode::Divu | Opcode::Rem | Opcode::Remu)
    }
    /// Signed division and remainder (`DIV`, `REM`).
    pub fn is_signed_div(self) -> bool {
        matches!(self, Opcode::Div | Opcode::Rem)
    }
    /// Memory ops (loads, stores, atomics).
    pub fn is_memory(self) -> bool {
        (Opcode::Lds as u8..=Opcode::Atomg as u8).contains(&(self as u8))
    }
    /// Ops micro-coded over the lanes (stores and atomics).
    pub fn is_serial(self) -> bool {
        matches!(self, Opcode::Sts | Opcode::Stg | Opcode::Atoms | Opcode::Atomg)
    }
    /// Ops on shared memory (the others of [`Self::is_memory`] are on global memory).
    pub fn is_shared(self) -> bool {
        matches!(self, Opcode::Lds | Opcode::Sts | Opcode::Atoms)
    }
}

/// One decoded instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Instr {
    pub op: Opcode,
    pub rd: u8,
    pub rs1: u8,
    pub rs2: u8,
    /// Operand `b` is [`Instr::imm`] instead of `R[rs2]`.
    pub imm_b: bool,
    pub imm: u32,
}

impl Instr {
    /// An instruction with every field 0 but the opcode.
    pub fn new(op: Opcode) -> Self {
        Self { op, rd: 0, rs1: 0, rs2: 0, imm_b: false, imm: 0 }
    }
    /// `op rd, rs1, rs2`.
    pub fn rrr(op: Opcode, rd: u8, rs1: u8, rs2: u8) -> Self {
        Self { op, rd, rs1, rs2, imm_b: false, imm: 0 }
    }
    /// `op rd, rs1, imm` (operand `b` is the immediate).
    pub fn rri(op: Opcode, rd: u8, rs1: u8, imm: u32) -> Self {
        Self { op, rd, rs1, rs2: 0, imm_b: true, imm }
    }
    /// A memory op: `rd` (loads, atomics), index register `rs1`, data register `rs2` (stores, atomics), the
    /// array's `base` word and `len` words.
    pub fn mem(op: Opcode, rd: u8, rs1: u8, rs2: u8, base: u16, len: u16) -> Self {
        Self { op, rd, rs1, rs2, imm_b: false, imm: u32::from(base) | u32::from(len) << 16 }
    }
    /// An op with only an immediate (`JMP`, `JNONE`, `JANY`, `CRESET`, `BAR`, ...).
    pub fn imm(op: Opcode, imm: u32) -> Self {
        Self { op, rd: 0, rs1: 0, rs2: 0, imm_b: false, imm }
    }
    /// The 64-bit instruction word.
    pub fn encode(&self) -> u64 {
        u64::from(self.op as u8)
            | u64::from(self.rd & 31) << 6
            | u64::from(self.rs1 & 31) << 11
            | u64::from(self.rs2 & 31) << 16
            | u64::from(self.imm_b) << 21
            | u64::from(self.imm) << 32
    }
    /// Decode a word; `None` for an illegal opcode.
    pub fn decode(word: u64) -> Option<Instr> {
        let op = Opcode::from_u8((word & 63) as u8)?;
        Some(Instr {
            op,
            rd: ((word >> 6) & 31) as u8,
            rs1: ((word >> 11) & 31) as u8,
            rs2: ((word >> 16) & 31) as u8,
            imm_b: (word >> 21) & 1 == 1,
            imm: (word >> 32) as u32,
        })
    }
}

impl std::fmt::Display for Instr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = self.op.mnemonic();
        let b = if self.imm_b { format!("{}", self.imm as i32) } else { format!("r{}", self.rs2) };
        match self.op {
            o if o == Opcode::Tid => write!(f, "{m} r{}", self.rd),
            o if o.is_alu() || o.is_div() => write!(f, "{m} r{}, r{}, {b}", self.rd, self.rs1),
            o if o.is_memory() => {
                write!(f, "{m} r{}, [r{} + {} < {}], r{}", self.rd, self.rs1, self.imm & 0xFFFF, self.imm >> 16, self.rs2)
            }
            Opcode::If | Opcode::Brk => write!(f, "{m} r{}, {}", self.rs1, self.imm),
            Opcode::Else | Opcode::Endif | Opcode::Halt => write!(f, "{m}"),
            _ => write!(f, "{m} {}", self.imm),
        }
    }
}

/// What went wrong in a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[repr(u8)]
pub enum FaultKind {
    /// An active lane's index was not below the array's length.
    Bounds = 1,
    /// The word at `PC` is not an instruction.
    Illegal = 2,
}

/// A machine fault, as the `FAULT` port writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    pub kind: FaultKind,
    /// Instruction index.
    pub pc: u32,
    /// The faulting lane (0 for an illegal instruction).
    pub lane: u32,
    /// The faulting warp.
    pub warp: u32,
    /// The out-of-bounds index `R[rs1]` (the opcode bits for an illegal instruction).
    pub index: u32,
}

impl Fault {
    /// The port word: bits 0..12 `pc`, 12..17 `lane`, 17..22 `warp`, 22..24 `kind`, 32..64 `index`.
    pub fn word(&self) -> u64 {
        u64::from(self.pc & 0xFFF)
            | u64::from(self.lane & 31) << 12
            | u64::from(self.warp & 31) << 17
            | u64::from(self.kind as u8 & 3) << 22
            | u64::from(self.index) << 32
    }
    /// Decode a port word (`None`: not a fault kind).
    pub fn from_word(w: u64) -> Option<Fault> {
        let kind = match (w >> 22) & 3 {
            1 => FaultKind::Bounds,
            2 => FaultKind::Illegal,
            _ => return None,
        };
        Some(Fault { kind, pc: (w & 0xFFF) as u32, lane: ((w >> 12) & 31) as u32, warp: ((w >> 17) & 31) as u32, index: (w >> 32) as u32 })
    }
}

/// The machine's shape (from `[machine]` in the config).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Simt4Config {
    /// Lanes: 4, 8, 16 or 32.
    pub lanes: u32,
    /// Most warps in a block: a power of two, 1..=32.
    pub warps: u32,
    /// Shared-memory words: a power of two, 128..=65536.
    pub shared_words: u32,
    /// Global-memory words: a power of two, 128..=65536.
    pub global_words: u32,
}

impl Default for Simt4Config {
    fn default() -> Self {
        Self { lanes: 4, warps: 8, shared_words: 128, global_words: 4096 }
    }
}

impl Simt4Config {
    /// Check the ranges above; the error names the bad key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if ![4, 8, 16, 32].contains(&self.lanes) {
            return Err(ConfigError::Lanes(self.lanes));
        }
        if !self.warps.is_power_of_two() || self.warps > 32 {
            return Err(ConfigError::Warps(self.warps));
        }
        for (key, value) in [("shared_words", self.shared_words), ("global_words", self.global_words)] {
            if !value.is_power_of_two() || !(128..=65536).contains(&value) {
                return Err(ConfigError::Words { key, value });
            }
        }
        Ok(())
    }
    /// Most threads in a block.
    pub fn max_threads(&self) -> u32 {
        self.lanes * self.warps
    }
    /// Address bits of a lane's register memory (`warp * 32 + reg`).
    pub fn reg_addr_bits(&self) -> u32 {
        self.warps.trailing_zeros() + 5
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        for op in Opcode::ALL {
            let i = Instr { op, rd: 5, rs1: 31, rs2: 17, imm_b: true, imm: 0xDEAD_BEEF };
            assert_eq!(Instr::decode(i.encode()), Some(i));
        }
        assert_eq!(Instr::decode(0), None);
        assert_eq!(Instr::decode(63), None);
        assert_eq!(Opcode::ALL.len(), Opcode::ALL.iter().map(|o| *o as u8).collect::<std::collections::HashSet<_>>().len());
    }

    #[test]
    fn fault_word_round_trip() {
        let f = Fault { kind: FaultKind::Bounds, pc: 4095, lane: 31, warp: 7, index: 0xFFFF_FFFF };
        assert_eq!(Fault::from_word(f.word()), Some(f));
        assert_eq!(Fault::from_word(0), None);
    }

    #[test]
    fn config_ranges() {
        assert!(Simt4Config::default().validate().is_ok());
        assert!(Simt4Config { lanes: 6, ..Default::default() }.validate().unwrap_err().to_string().contains("lanes"));
        assert!(Simt4Config { global_words: 100, ..Default::default() }.validate().unwrap_err().to_string().contains("global_words"));
        assert_eq!(Simt4Config::default().reg_addr_bits(), 8);
    }
}
