//! The 2A03 (NMOS 6502 without BCD) as an `isa-api` circuit: one instruction per machine step.
//!
//! The semantics follow the NESdev wiki's CPU pages ("CPU addressing modes", "CPU unofficial opcodes", "Status
//! flags", "CPU interrupts") and the cycle tables of `6502_cpu.txt`; the interpreter [`crate::Cpu`] is the oracle
//! (`tests/circuit.rs` runs both, and both against nestest's log and Tom Harte's tests).
//!
//! # State
//!
//! | item | kind | width | meaning |
//! |---|---|---|---|
//! | `PC` | register | 16 | address of the next opcode |
//! | `A`, `X`, `Y`, `S` | registers | 8 | accumulator, index registers, stack pointer (next push at $0100 + S) |
//! | `P` | register | 8 | N V 1 B D I Z C, stored with bit 5 = 1 and B = 0 (as the interpreter keeps it) |
//! | `CYC` | register | 32 | CPU cycles since power-on (modulo 2^32): the NES host clocks its PPU and APU from it |
//! | `BUSY` | register | 8 | micro-step: 0 after a step that retired an instruction or took an interrupt; 1 after the boot step; 255 = stopping (the next step halts) |
//! | `RUN` | register | 1 | 0 until the boot step has loaded the initial registers from `INIT` |
//! | `NMI_LEVEL` | register | 1 | the NMI input's level at the previous step (an NMI is its rising edge) |
//! | `POLL_I` | register | 2 | bit 0: the last instruction was CLI, SEI or PLP; bit 1: I before it (the next interrupt poll sees that I) |
//! | `M0`..`M3` | memories, 16,384 x 8 | | the 64 KiB address space in four byte banks: bank k holds the bytes at `addr % 4 == k`, row `addr / 4` |
//! | `INIT` | memory, 16 x 8 | | the state the boot step loads: PC lo, PC hi, A, X, Y, S, P, CYC (4 bytes, low first) |
//! | `OUT` | port, 8, console | | a store to the console address (when configured) |
//! | `EXIT` | port, 8, exit | | a store to the exit address (when configured): the exit status; the machine halts |
//! | `FAULT` | port, 24, fault | | opcode (bits 0..8) and PC (bits 8..24) of a JAM or unstable opcode; the machine halts |
//! | `NMI`, `IRQ` | inputs, 1 | | the interrupt lines the host drives |
//!
//! # Why four banks
//!
//! A Gated DeltaNet memory takes at most one write per step, and a read costs one block of heads per 256 rows.
//! Up to four consecutive bytes (an opcode and its operands; three stack bytes; a pointer) lie in four
//! different banks, so one read of each bank at the right row fetches them all for the heads of one 64 KiB
//! read, and JSR's two and BRK's three pushes are one write per bank. An instruction is therefore one step:
//! fetch (level A: the opcode and two operand bytes), the pointer read (level B: a zero-page pointer, JMP's
//! indirect pointer, the bytes an RTS/RTI/PLA/PLP pulls, or an interrupt vector), the data read (level C:
//! the byte at the effective address), then the ALU and the writes.
//!
//! The dummy reads and the first write of a read-modify-write do not reach RAM-like memory and are not modelled;
//! their cycles are counted.

use crate::opcode::{AddressingMode, Mnemonic, decode};
use isa_api::circuit::{CircuitBuilder, CmpKind, NodeId, ShiftKind, SumTerm};
use isa_api::{MachineDesc, MemoryDesc, PortDesc, PortRole, RegisterDesc};

/// How the machine is built.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Mos6502Options {
    /// A store to this address writes a console byte on port `OUT` instead of memory.
    pub console: Option<u16>,
    /// A store to this address ends the program with the stored byte as exit status (port `EXIT`).
    pub exit: Option<u16>,
}

/// Register indices, in the description's order.
pub mod reg {
    pub const PC: u32 = 0;
    pub const A: u32 = 1;
    pub const X: u32 = 2;
    pub const Y: u32 = 3;
    pub const S: u32 = 4;
    pub const P: u32 = 5;
    pub const CYC: u32 = 6;
    pub const BUSY: u32 = 7;
    pub const RUN: u32 = 8;
    pub const NMI_LEVEL: u32 = 9;
    pub const POLL_I: u32 = 10;
}

/// Memory indices: the four byte banks, then `INIT`.
pub mod mem {
    pub const BANKS: [u32; 4] = [0, 1, 2, 3];
    pub const INIT: u32 = 4;
}

/// Input port indices.
pub mod input {
    pub const NMI: u32 = 0;
    pub const IRQ: u32 = 1;
}

/// Rows of `INIT`: where the boot step finds each register.
pub mod init_row {
    pub const PC_LO: u64 = 0;
    pub const PC_HI: u64 = 1;
    pub const A: u64 = 2;
    pub const X: u64 = 3;
    pub const Y: u64 = 4;
    pub const S: u64 = 5;
    pub const P: u64 = 6;
    /// Four bytes, low first.
    pub const CYC: u64 = 7;
}

/// `BUSY` after a stop (exit or fault): the next step halts.
pub const BUSY_STOPPING: u64 = 255;

/// Bank address width: 16,384 rows of each of the four banks.
const ROW_BITS: u32 = 14;

// ---- the control word: what the opcode decodes to (one table lookup) ----------------------------------------

/// Bit fields of the control word.
mod ctl {
    /// Addressing mode code (4 bits, [`super::mode_code`]).
    pub const MODE: u32 = 0;
    /// Base cycle count (4 bits).
    pub const CYCLES: u32 = 4;
    /// Instruction length in bytes (2 bits).
    pub const LEN: u32 = 8;
    /// A read operation: indexed modes that cross a page take a cycle more.
    pub const READ_OP: u32 = 10;
    /// Read-modify-write operation (3 bits): 0 none, ASL, LSR, ROL, ROR, INC, DEC.
    pub const RMW: u32 = 11;
    /// ALU operation (4 bits, [`super::Alu`]).
    pub const ALU: u32 = 14;
    /// Source of N and Z (4 bits, [`super::Nz`]).
    pub const NZ: u32 = 18;
    /// Source of C (3 bits, [`super::CarrySrc`]).
    pub const C: u32 = 22;
    /// Source of V (3 bits, [`super::OverflowSrc`]).
    pub const V: u32 = 25;
    /// Stack pointer change (8 bits, modulo 256).
    pub const S_DELTA: u32 = 28;
    /// Bits of the first word; the one-hot [`super::Flag`]s are the second word.
    pub const WIDTH: u32 = 36;
}

#[derive(Clone, Copy)]
#[repr(u64)]
enum Rmw {
    None = 0,
    Asl,
    Lsr,
    Rol,
    Ror,
    Inc,
    Dec,
}

#[derive(Clone, Copy, PartialEq)]
#[repr(u64)]
enum Alu {
    None = 0,
    Ora,
    And,
    Eor,
    Adc,
    Sbc,
    Cmp,
    Cpx,
    Cpy,
    Bit,
    Anc,
    Alr,
    Arr,
    Axs,
}

/// Where N and Z come from.
#[derive(Clone, Copy)]
#[repr(u64)]
enum Nz {
    Keep = 0,
    /// The ALU's value for A.
    AluA,
    /// The adder (compares, AXS).
    Adder,
    /// The operand (loads).
    Operand,
    /// The read-modify-write result.
    Rmw,
    /// The new X (TAX, TSX, INX, DEX).
    NewX,
    /// The new Y (TAY, INY, DEY).
    NewY,
    /// The new A (TXA, TYA, PLA).
    NewA,
    /// BIT: Z from A AND operand, N from the operand's bit 7.
    Bit,
}

#[derive(Clone, Copy)]
#[repr(u64)]
enum CarrySrc {
    Keep = 0,
    /// The bit a shift or rotate moved out.
    Shift,
    /// The adder's carry out (ADC, SBC, compares, AXS).
    Adder,
    Clear,
    Set,
    /// ANC: bit 7 of the result.
    Bit7,
    /// ALR: bit 0 of A AND operand.
    AndBit0,
    /// ARR: bit 6 of the result.
    Bit6,
}

#[derive(Clone, Copy)]
#[repr(u64)]
enum OverflowSrc {
    Keep = 0,
    Adder,
    /// BIT: the operand's bit 6.
    Operand6,
    Clear,
    /// ARR: bit 6 XOR bit 5 of the result.
    Arr,
}

/// One-hot control flags (bit `flag` of the second control word).
#[derive(Clone, Copy)]
#[repr(u32)]
enum Flag {
    LoadA,
    LoadX,
    LoadY,
    Store,
    StoreX,
    StoreY,
    StoreAx,
    RmwMem,
    RmwAcc,
    Branch,
    Tax,
    Tay,
    Txa,
    Tya,
    Tsx,
    Txs,
    Inx,
    Iny,
    Dex,
    Dey,
    Cli,
    Sei,
    Cld,
    Sed,
    Pha,
    Php,
    Pla,
    Plp,
    JmpAbs,
    JmpInd,
    Jsr,
    Rts,
    Rti,
    Brk,
    Unsupported,
    /// Branch condition: which flag (2 bits: N, V, C, Z) and its value when taken.
    CondSel0,
    CondSel1,
    CondValue,
}

const fn mode_code(m: AddressingMode) -> u64 {
    use AddressingMode::*;
    match m {
        Implied => 0,
        Accumulator => 1,
        Immediate => 2,
        ZeroPage => 3,
        ZeroPageX => 4,
        ZeroPageY => 5,
        Absolute => 6,
        AbsoluteX => 7,
        AbsoluteY => 8,
        Indirect => 9,
        IndexedIndirect => 10,
        IndirectIndexed => 11,
        Relative => 12,
    }
}

/// The base cycle count of an opcode (no page crossing, branch not taken), from `6502_cpu.txt`'s tables:
/// reads take 2 (immediate) / 3 (zp) / 4 (zp,X; abs; abs,X; abs,Y) / 5 ((zp),Y) / 6 ((zp,X)); writes one
/// more for the indexed absolute and (zp),Y forms; read-modify-writes 5 / 6 / 6 / 7 / 8; and the fixed
/// counts of the stack and jump instructions.
fn base_cycles(m: Mnemonic, mode: AddressingMode) -> u64 {
    use AddressingMode::*;
    use Mnemonic::*;
    let kind = access_kind(m);
    match m {
        Brk => 7,
        Jsr | Rts | Rti => 6,
        Pha | Php => 3,
        Pla | Plp => 4,
        Jmp => {
            if mode == Indirect {
                5
            } else {
                3
            }
        }
        _ => match (kind, mode) {
            (_, Implied | Accumulator | Immediate | Relative) => 2,
            (Access::Read, ZeroPage) | (Access::Write, ZeroPage) => 3,
            (Access::Read, ZeroPageX | ZeroPageY | Absolute | AbsoluteX | AbsoluteY) => 4,
            (Access::Write, ZeroPageX | ZeroPageY | Absolute) => 4,
            (Access::Write, AbsoluteX | AbsoluteY) => 5,
            (Access::Read, IndirectIndexed) => 5,
            (Access::Read | Access::Write, IndexedIndirect) | (Access::Write, IndirectIndexed) => 6,
            (Access::Modify, ZeroPage) => 5,
            (Access::Modify, ZeroPageX | Absolute) => 6,
            (Access::Modify, AbsoluteX | AbsoluteY) => 7,
            (Access::Modify, IndexedIndirect | IndirectIndexed) => 8,
            _ => 0,
        },
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Access {
    Read,
    Write,
    Modify,
    Other,
}

fn access_kind(m: Mnemonic) -> Access {
    use Mnemonic::*;
    match m {
        Nop | Lda | Ldx | Ldy | Lax | Adc | Sbc | And | Ora | Eor | Cmp | Cpx | Cpy | Bit | Anc | Alr | Arr | Axs => {
            Access::Read
        }
        Sta | Stx | Sty | Sax => Access::Write,
        Asl | Lsr | Rol | Ror | Inc | Dec | Slo | Rla | Sre | Rra | Dcp | Isc => Access::Modify,
        _ => Access::Other,
    }
}

/// The two control words of one opcode: the fields of [`ctl`], and the one-hot [`Flag`]s.
fn control_words(code: u8) -> (u64, u64) {
    use Mnemonic::*;
    let op = decode(code);
    let (m, mode) = (op.mnemonic, op.mode);
    let mut w = mode_code(mode) << ctl::MODE;
    w |= base_cycles(m, mode) << ctl::CYCLES;
    w |= u64::from(op.byte_len()) << ctl::LEN;
    if access_kind(m) == Access::Read && mode != AddressingMode::Immediate {
        w |= 1 << ctl::READ_OP;
    }
    let acc = mode == AddressingMode::Accumulator;
    let rmw = match m {
        Asl | Slo => Rmw::Asl,
        Lsr | Sre => Rmw::Lsr,
        Rol | Rla => Rmw::Rol,
        Ror | Rra => Rmw::Ror,
        Inc | Isc => Rmw::Inc,
        Dec | Dcp => Rmw::Dec,
        _ => Rmw::None,
    };
    w |= (rmw as u64) << ctl::RMW;
    let alu = match m {
        Ora | Slo => Alu::Ora,
        And | Rla => Alu::And,
        Eor | Sre => Alu::Eor,
        Adc | Rra => Alu::Adc,
        Sbc | Isc => Alu::Sbc,
        Cmp | Dcp => Alu::Cmp,
        Cpx => Alu::Cpx,
        Cpy => Alu::Cpy,
        Bit => Alu::Bit,
        Anc => Alu::Anc,
        Alr => Alu::Alr,
        Arr => Alu::Arr,
        Axs => Alu::Axs,
        _ => Alu::None,
    };
    w |= (alu as u64) << ctl::ALU;
    let nz = match m {
        Ora | And | Eor | Adc | Sbc | Anc | Alr | Arr | Slo | Rla | Sre | Rra | Isc => Nz::AluA,
        Cmp | Cpx | Cpy | Axs | Dcp => Nz::Adder,
        Lda | Ldx | Ldy | Lax => Nz::Operand,
        Asl | Lsr | Rol | Ror | Inc | Dec => Nz::Rmw,
        Tax | Tsx | Inx | Dex => Nz::NewX,
        Tay | Iny | Dey => Nz::NewY,
        Txa | Tya | Pla => Nz::NewA,
        Bit => Nz::Bit,
        _ => Nz::Keep,
    };
    w |= (nz as u64) << ctl::NZ;
    let c = match m {
        Asl | Lsr | Rol | Ror | Slo | Rla | Sre => CarrySrc::Shift,
        Adc | Sbc | Cmp | Cpx | Cpy | Axs | Rra | Dcp | Isc => CarrySrc::Adder,
        Clc => CarrySrc::Clear,
        Sec => CarrySrc::Set,
        Anc => CarrySrc::Bit7,
        Alr => CarrySrc::AndBit0,
        Arr => CarrySrc::Bit6,
        _ => CarrySrc::Keep,
    };
    w |= (c as u64) << ctl::C;
    let v = match m {
        Adc | Sbc | Rra | Isc => OverflowSrc::Adder,
        Bit => OverflowSrc::Operand6,
        Clv => OverflowSrc::Clear,
        Arr => OverflowSrc::Arr,
        _ => OverflowSrc::Keep,
    };
    w |= (v as u64) << ctl::V;
    let s_delta: u8 = match m {
        Pla | Plp => 1,
        Rts => 2,
        Rti => 3,
        Pha | Php => 0xFF,
        Jsr => 0xFE,
        Brk => 0xFD,
        _ => 0,
    };
    w |= u64::from(s_delta) << ctl::S_DELTA;
    let mut flags = 0u64;
    let mut f = |x: Flag| flags |= 1u64 << (x as u32);
    match m {
        Lda => f(Flag::LoadA),
        Ldx => f(Flag::LoadX),
        Ldy => f(Flag::LoadY),
        Lax => {
            f(Flag::LoadA);
            f(Flag::LoadX);
        }
        Sta => f(Flag::Store),
        Stx => {
            f(Flag::Store);
            f(Flag::StoreX);
        }
        Sty => {
            f(Flag::Store);
            f(Flag::StoreY);
        }
        Sax => {
            f(Flag::Store);
            f(Flag::StoreAx);
        }
        Asl | Lsr | Rol | Ror if acc => f(Flag::RmwAcc),
        Asl | Lsr | Rol | Ror | Inc | Dec | Slo | Rla | Sre | Rra | Dcp | Isc => f(Flag::RmwMem),
        Bpl | Bmi | Bvc | Bvs | Bcc | Bcs | Bne | Beq => {
            f(Flag::Branch);
            // Condition flag: 0 N, 1 V, 2 C, 3 Z; value when taken.
            let (sel, value) = match m {
                Bpl => (0, 0),
                Bmi => (0, 1),
                Bvc => (1, 0),
                Bvs => (1, 1),
                Bcc => (2, 0),
                Bcs => (2, 1),
                Bne => (3, 0),
                _ => (3, 1),
            };
            if sel & 1 != 0 {
                f(Flag::CondSel0);
            }
            if sel & 2 != 0 {
                f(Flag::CondSel1);
            }
            if value != 0 {
                f(Flag::CondValue);
            }
        }
        Tax => f(Flag::Tax),
        Tay => f(Flag::Tay),
        Txa => f(Flag::Txa),
        Tya => f(Flag::Tya),
        Tsx => f(Flag::Tsx),
        Txs => f(Flag::Txs),
        Inx => f(Flag::Inx),
        Iny => f(Flag::Iny),
        Dex => f(Flag::Dex),
        Dey => f(Flag::Dey),
        Cli => f(Flag::Cli),
        Sei => f(Flag::Sei),
        Cld => f(Flag::Cld),
        Sed => f(Flag::Sed),
        Pha => f(Flag::Pha),
        Php => f(Flag::Php),
        Pla => f(Flag::Pla),
        Plp => f(Flag::Plp),
        Jmp if mode == AddressingMode::Indirect => f(Flag::JmpInd),
        Jmp => f(Flag::JmpAbs),
        Jsr => f(Flag::Jsr),
        Rts => f(Flag::Rts),
        Rti => f(Flag::Rti),
        Brk => f(Flag::Brk),
        x if x.is_unsupported() => f(Flag::Unsupported),
        _ => {}
    }
    (w, flags)
}

/// The control words of all 256 opcodes (the decode tables the circuit looks up): fields, then flags.
fn control_tables() -> (Vec<u64>, Vec<u64>) {
    (0..=255u8).map(control_words).unzip()
}

// ---- circuit helpers ----------------------------------------------------------------------------------------

/// Small word-level helpers over the builder.
struct Gates<'a> {
    s: &'a mut CircuitBuilder,
    one: NodeId,
    zero: NodeId,
}

impl<'a> Gates<'a> {
    fn new(s: &'a mut CircuitBuilder) -> Self {
        let one = s.konst(1, 1);
        let zero = s.konst(1, 0);
        Gates { s, one, zero }
    }
    fn k(&mut self, width: u32, value: u64) -> NodeId {
        self.s.konst_masked(width, value)
    }
    fn and1(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.s.and(a, b)
    }
    fn or1(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.s.or(a, b)
    }
    fn not1(&mut self, a: NodeId) -> NodeId {
        self.s.not(a)
    }
    /// `a + konst` modulo 2^width(a).
    fn add_k(&mut self, a: NodeId, konst: u64) -> NodeId {
        let w = self.s.width(a);
        let m = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
        self.s.sum(w, &[SumTerm { node: a, shift: 0, neg: false }], konst & m)
    }
    /// The OR over one-hot cases, with `default` when none is selected.
    fn pick(&mut self, width: u32, cases: &[(NodeId, NodeId)], default: NodeId) -> NodeId {
        let sels: Vec<NodeId> = cases.iter().map(|c| c.0).collect();
        let any = self.s.any(&sels);
        let none = self.not1(any);
        let mut all = cases.to_vec();
        all.push((none, default));
        self.s.and_or(width, &all)
    }
    /// One-hot decode of a small field: `out[v] = (x == v)`.
    fn one_hot(&mut self, x: NodeId, n: u64) -> Vec<NodeId> {
        (0..n).map(|v| self.s.eq_const(x, v)).collect()
    }
    fn bit(&mut self, x: NodeId, i: u32) -> NodeId {
        self.s.bit(x, i)
    }
    /// `hi:lo` as a 16-bit word.
    fn word(&mut self, lo: NodeId, hi: NodeId) -> NodeId {
        self.s.concat(&[lo, hi])
    }
}

/// Reads `n` (1..=4) bytes at `base, base+1, ...` from the four banks in one read of each bank. With
/// `page_wrap` the increments stay within `base`'s page (zero-page pointers, `JMP ($xxFF)`, the stack), else
/// they wrap at 64 KiB.
fn read_run(g: &mut Gates, base: NodeId, n: usize, page_wrap: bool) -> Vec<NodeId> {
    let lo2 = g.s.slice(base, 0, 2);
    let row = g.s.slice(base, 2, ROW_BITS);
    let row_next = if page_wrap {
        let in_page = g.s.slice(row, 0, 6);
        let page = g.s.slice(row, 6, ROW_BITS - 6);
        let inc = g.add_k(in_page, 1);
        g.s.concat(&[inc, page])
    } else {
        g.add_k(row, 1)
    };
    let words: Vec<NodeId> = (0..4u64)
        .map(|k| {
            // Bank k holds byte i = (k - lo2) mod 4 of the run; it lies in the next row when k < lo2.
            let r = if n == 1 {
                row
            } else {
                let kk = g.k(2, k);
                let next = g.s.cmp(CmpKind::Ltu, kk, lo2);
                g.s.select(next, row_next, row)
            };
            g.s.load(mem::BANKS[k as usize], 8, r)
        })
        .collect();
    let lo_is = g.one_hot(lo2, 4);
    (0..n)
        .map(|i| {
            let cases: Vec<(NodeId, NodeId)> = (0..4).map(|j| (lo_is[j], words[(j + i) % 4])).collect();
            g.s.and_or(8, &cases)
        })
        .collect()
}

/// Writes `bytes[i]` at `base - i` (descending, within `base`'s page: stack pushes) for `i < count`, or one
/// byte at `base`: one write per bank. `count` is a 2-bit node (0..=3), `enable` gates all of it.
fn write_run(g: &mut CircuitBuilder, base: NodeId, bytes: [NodeId; 3], count: NodeId, enable: NodeId) {
    let mut g = Gates::new(g);
    let lo2 = g.s.slice(base, 0, 2);
    let row = g.s.slice(base, 2, ROW_BITS);
    let in_page = g.s.slice(row, 0, 6);
    let page = g.s.slice(row, 6, ROW_BITS - 6);
    let dec = g.add_k(in_page, 63);
    let row_prev = g.s.concat(&[dec, page]);
    let lo_is = g.one_hot(lo2, 4);
    for k in 0..4usize {
        // Bank k holds byte i = (lo2 - k) mod 4, one row down when k > lo2.
        let cases: Vec<(NodeId, NodeId)> = (0..4).map(|j| (lo_is[j], j)).map(|(sel, j)| (sel, (j + 4 - k) % 4)).map(|(sel, i)| {
            let v = if i < 3 { bytes[i] } else { g.zero8() };
            (sel, v)
        }).collect();
        let data = g.s.and_or(8, &cases);
        // Index of the byte this bank takes, as a 2-bit value, to compare with count.
        let idx_cases: Vec<(NodeId, NodeId)> = (0..4).map(|j| {
            let i = ((j + 4 - k) % 4) as u64;
            let c = g.k(2, i);
            (lo_is[j], c)
        }).collect();
        let idx = g.s.and_or(2, &idx_cases);
        let within = g.s.cmp(CmpKind::Ltu, idx, count);
        let en = g.and1(within, enable);
        let kk = g.k(2, k as u64);
        let below = g.s.cmp(CmpKind::Ltu, lo2, kk);
        let r = g.s.select(below, row_prev, row);
        g.s.mem_write(mem::BANKS[k], r, data, en);
    }
}

impl Gates<'_> {
    fn zero8(&mut self) -> NodeId {
        self.k(8, 0)
    }
}

/// The machine description of the 2A03 with `opts`' console and exit addresses.
pub fn mos6502_machine(opts: &Mos6502Options) -> MachineDesc {
    let mut b = CircuitBuilder::new();
    let mut g = Gates::new(&mut b);
    let one = g.one;

    // ---- state ----
    let pc = g.s.reg(reg::PC, 16);
    let a = g.s.reg(reg::A, 8);
    let x = g.s.reg(reg::X, 8);
    let y = g.s.reg(reg::Y, 8);
    let sp = g.s.reg(reg::S, 8);
    let p = g.s.reg(reg::P, 8);
    let cyc = g.s.reg(reg::CYC, 32);
    let busy = g.s.reg(reg::BUSY, 8);
    let run = g.s.reg(reg::RUN, 1);
    let nmi_level = g.s.reg(reg::NMI_LEVEL, 1);
    let poll_i = g.s.reg(reg::POLL_I, 2);
    let nmi_in = g.s.input(input::NMI, 1);
    let irq_in = g.s.input(input::IRQ, 1);
    let flag_c = g.bit(p, 0);
    let flag_z = g.bit(p, 1);
    let flag_i = g.bit(p, 2);
    let flag_d = g.bit(p, 3);
    let flag_v = g.bit(p, 6);
    let flag_n = g.bit(p, 7);

    // ---- step kind: boot, stop, interrupt, instruction ----
    let booting = g.not1(run);
    let stopping = g.s.eq_const(busy, BUSY_STOPPING);
    let active = {
        let ns = g.not1(stopping);
        g.and1(run, ns)
    };
    let nmi_edge = {
        let was_low = g.not1(nmi_level);
        g.and1(nmi_in, was_low)
    };
    let poll_valid = g.bit(poll_i, 0);
    let poll_old_i = g.bit(poll_i, 1);
    let masked = g.s.select(poll_valid, poll_old_i, flag_i);
    let irq_take = {
        let unmasked = g.not1(masked);
        let no_nmi = g.not1(nmi_edge);
        let t = g.and1(irq_in, unmasked);
        g.and1(t, no_nmi)
    };
    let int_any = g.or1(nmi_edge, irq_take);
    let take_int = g.and1(active, int_any);
    let no_int = g.not1(int_any);
    let instr = g.and1(active, no_int);

    // ---- level A: fetch the opcode and two operand bytes ----
    let fetched = read_run(&mut g, pc, 3, false);
    let (b0, b1, b2) = (fetched[0], fetched[1], fetched[2]);
    let (fields_table, flags_table) = control_tables();
    let cw = g.s.lookup(ctl::WIDTH, fields_table, b0);
    let fw = g.s.lookup(Flag::CondValue as u32 + 1, flags_table, b0);
    let field = |g: &mut Gates, lo: u32, w: u32| g.s.slice(cw, lo, w);
    let flag = |g: &mut Gates, f: Flag| g.s.bit(fw, f as u32);
    let mode = field(&mut g, ctl::MODE, 4);
    let modes = g.one_hot(mode, 13);
    let m_acc = modes[1];
    let m_imm = modes[2];
    let (m_zp, m_zpx, m_zpy, m_abs, m_abx, m_aby) = (modes[3], modes[4], modes[5], modes[6], modes[7], modes[8]);
    let (m_izx, m_izy) = (modes[10], modes[11]);
    let f_unsupported = flag(&mut g, Flag::Unsupported);
    let fault = g.and1(instr, f_unsupported);
    let exec = {
        let ok = g.not1(f_unsupported);
        g.and1(instr, ok)
    };

    // ---- addresses that need no pointer ----
    let zero8 = g.zero8();
    let op16 = g.word(b1, b2);
    let zpx = g.s.add(b1, x);
    let zpy = g.s.add(b1, y);
    let ea_zp = g.word(b1, zero8);
    let ea_zpx = g.word(zpx, zero8);
    let ea_zpy = g.word(zpy, zero8);
    // base + index with the carry out of the low byte (a page crossing).
    let index = |g: &mut Gates, lo: NodeId, hi: NodeId, idx: NodeId| -> (NodeId, NodeId) {
        let lo9 = g.s.zext(lo, 9);
        let idx9 = g.s.zext(idx, 9);
        let sum = g.s.add(lo9, idx9);
        let low = g.s.slice(sum, 0, 8);
        let carry = g.s.bit(sum, 8);
        let z7 = g.k(8, 0);
        let high = g.s.add_c(hi, z7, carry);
        (g.word(low, high), carry)
    };
    let (ea_abx, cross_abx) = index(&mut g, b1, b2, x);
    let (ea_aby, cross_aby) = index(&mut g, b1, b2, y);

    // ---- level B: the pointer read (zero-page pointers, JMP's pointer, pulls, vectors) ----
    let f_pla = flag(&mut g, Flag::Pla);
    let f_plp = flag(&mut g, Flag::Plp);
    let f_rts = flag(&mut g, Flag::Rts);
    let f_rti = flag(&mut g, Flag::Rti);
    let f_brk = flag(&mut g, Flag::Brk);
    let f_jmp_ind = flag(&mut g, Flag::JmpInd);
    let pulls = g.s.any(&[f_pla, f_plp, f_rts, f_rti]);
    let sp1 = g.add_k(sp, 1);
    let one8 = g.k(8, 1);
    let pull_base = g.word(sp1, one8);
    let irq_vec = g.k(16, 0xFFFE);
    let nmi_vec = g.k(16, 0xFFFA);
    let int_vec = g.s.select(nmi_edge, nmi_vec, irq_vec);
    let ptr_instr = g.pick(16, &[(m_izx, ea_zpx), (m_izy, ea_zp), (f_jmp_ind, op16), (pulls, pull_base), (f_brk, irq_vec)], irq_vec);
    let ptr_base = g.s.select(take_int, int_vec, ptr_instr);
    let ptr = read_run(&mut g, ptr_base, 3, true);
    let (p0, p1, p2) = (ptr[0], ptr[1], ptr[2]);
    let ptr16 = g.word(p0, p1);
    let (ea_izy, cross_izy) = index(&mut g, p0, p1, y);

    // ---- level C: the data read at the effective address ----
    let ea = g.pick(
        16,
        &[(m_zp, ea_zp), (m_zpx, ea_zpx), (m_zpy, ea_zpy), (m_abs, op16), (m_abx, ea_abx), (m_aby, ea_aby), (m_izx, ptr16), (m_izy, ea_izy)],
        op16,
    );
    let dm = read_run(&mut g, ea, 1, false)[0];
    let operand = g.pick(8, &[(m_imm, b1), (m_acc, a)], dm);

    // ---- read-modify-write stage ----
    let rmw = field(&mut g, ctl::RMW, 3);
    let rmw_is = g.one_hot(rmw, 7);
    let shl = g.s.shift_const(ShiftKind::Shl, operand, 1);
    let shr = g.s.shift_const(ShiftKind::Shr, operand, 1);
    let c7 = {
        let c8 = g.s.zext(flag_c, 8);
        g.s.shift_const(ShiftKind::Shl, c8, 7)
    };
    let c8 = g.s.zext(flag_c, 8);
    let rol = g.s.or(shl, c8);
    let ror = g.s.or(shr, c7);
    let inc = g.add_k(operand, 1);
    let dec = g.add_k(operand, 0xFF);
    let rmw_val = g.s.and_or(8, &[(rmw_is[1], shl), (rmw_is[2], shr), (rmw_is[3], rol), (rmw_is[4], ror), (rmw_is[5], inc), (rmw_is[6], dec), (rmw_is[0], operand)]);
    let op_b7 = g.bit(operand, 7);
    let op_b0 = g.bit(operand, 0);
    let left = g.or1(rmw_is[1], rmw_is[3]);
    let shift_c = g.s.select(left, op_b7, op_b0);
    // Carry into the ALU: RRA's ADC takes the carry its ROR moved out.
    let is_ror = rmw_is[4];
    let alu_cin = g.s.select(is_ror, shift_c, flag_c);

    // ---- ALU stage on A and the (modified) operand ----
    let alu = field(&mut g, ctl::ALU, 4);
    let alu_is = g.one_hot(alu, 14);
    let o = rmw_val;
    let ax = g.s.and(a, x);
    let a_or = g.s.or(a, o);
    let a_and = g.s.and(a, o);
    let a_eor = g.s.xor(a, o);
    // One 9-bit adder: ADC (A + o + C), SBC (A + !o + C), compares (reg + !o + 1), AXS ((A & X) + !o + 1).
    let is_sbc = alu_is[Alu::Sbc as usize];
    let is_cmp = alu_is[Alu::Cmp as usize];
    let is_cpx = alu_is[Alu::Cpx as usize];
    let is_cpy = alu_is[Alu::Cpy as usize];
    let is_axs = alu_is[Alu::Axs as usize];
    let compare = g.s.any(&[is_cmp, is_cpx, is_cpy, is_axs]);
    let invert = g.or1(is_sbc, compare);
    let not_o = g.s.not(o);
    let addend = g.s.select(invert, not_o, o);
    let add_left = g.pick(8, &[(is_cpx, x), (is_cpy, y), (is_axs, ax)], a);
    let cin = g.s.select(compare, one, alu_cin);
    let left9 = g.s.zext(add_left, 9);
    let addend9 = g.s.zext(addend, 9);
    let sum9 = g.s.add_c(left9, addend9, cin);
    let sum = g.s.slice(sum9, 0, 8);
    let sum_c = g.bit(sum9, 8);
    let sum_v = {
        let t1 = g.s.xor(a, addend);
        let t1n = g.s.not(t1);
        let t2 = g.s.xor(a, sum);
        let t = g.s.and(t1n, t2);
        g.bit(t, 7)
    };
    let alr = g.s.shift_const(ShiftKind::Shr, a_and, 1);
    let arr = {
        let sh = g.s.shift_const(ShiftKind::Shr, a_and, 1);
        g.s.or(sh, c7)
    };
    let is_adc = alu_is[Alu::Adc as usize];
    let alu_a = g.s.and_or(
        8,
        &[
            (alu_is[Alu::Ora as usize], a_or),
            (alu_is[Alu::And as usize], a_and),
            (alu_is[Alu::Eor as usize], a_eor),
            (is_adc, sum),
            (is_sbc, sum),
            (alu_is[Alu::Anc as usize], a_and),
            (alu_is[Alu::Alr as usize], alr),
            (alu_is[Alu::Arr as usize], arr),
        ],
    );
    let writes_alu_a = g.s.any(&[
        alu_is[Alu::Ora as usize],
        alu_is[Alu::And as usize],
        alu_is[Alu::Eor as usize],
        is_adc,
        is_sbc,
        alu_is[Alu::Anc as usize],
        alu_is[Alu::Alr as usize],
        alu_is[Alu::Arr as usize],
    ]);

    // ---- registers ----
    let f_load_a = flag(&mut g, Flag::LoadA);
    let f_load_x = flag(&mut g, Flag::LoadX);
    let f_load_y = flag(&mut g, Flag::LoadY);
    let f_rmw_acc = flag(&mut g, Flag::RmwAcc);
    let f_txa = flag(&mut g, Flag::Txa);
    let f_tya = flag(&mut g, Flag::Tya);
    let f_tax = flag(&mut g, Flag::Tax);
    let f_tay = flag(&mut g, Flag::Tay);
    let f_tsx = flag(&mut g, Flag::Tsx);
    let f_txs = flag(&mut g, Flag::Txs);
    let f_inx = flag(&mut g, Flag::Inx);
    let f_iny = flag(&mut g, Flag::Iny);
    let f_dex = flag(&mut g, Flag::Dex);
    let f_dey = flag(&mut g, Flag::Dey);
    let x_inc = g.add_k(x, 1);
    let x_dec = g.add_k(x, 0xFF);
    let y_inc = g.add_k(y, 1);
    let y_dec = g.add_k(y, 0xFF);
    let a_new = g.pick(8, &[(writes_alu_a, alu_a), (f_load_a, operand), (f_rmw_acc, rmw_val), (f_txa, x), (f_tya, y), (f_pla, p0)], a);
    let x_new = g.pick(8, &[(f_load_x, operand), (f_tax, a), (f_tsx, sp), (f_inx, x_inc), (f_dex, x_dec), (is_axs, sum)], x);
    let y_new = g.pick(8, &[(f_load_y, operand), (f_tay, a), (f_iny, y_inc), (f_dey, y_dec)], y);
    let s_delta = field(&mut g, ctl::S_DELTA, 8);
    let s_moved = g.s.add(sp, s_delta);
    let s_new = g.s.select(f_txs, x, s_moved);

    // ---- flags ----
    let nz_src = field(&mut g, ctl::NZ, 4);
    let nz_is = g.one_hot(nz_src, 9);
    let nz_val = g.s.and_or(
        8,
        &[
            (nz_is[Nz::AluA as usize], alu_a),
            (nz_is[Nz::Adder as usize], sum),
            (nz_is[Nz::Operand as usize], operand),
            (nz_is[Nz::Rmw as usize], rmw_val),
            (nz_is[Nz::NewX as usize], x_new),
            (nz_is[Nz::NewY as usize], y_new),
            (nz_is[Nz::NewA as usize], a_new),
            (nz_is[Nz::Bit as usize], a_and),
        ],
    );
    let nz_keep = nz_is[Nz::Keep as usize];
    let nz_bit = nz_is[Nz::Bit as usize];
    let val_zero = g.s.eq_const(nz_val, 0);
    let val_neg = g.bit(nz_val, 7);
    let o_b7 = g.bit(o, 7);
    let n_calc = g.s.select(nz_bit, o_b7, val_neg);
    let n_new = g.s.select(nz_keep, flag_n, n_calc);
    let z_new = g.s.select(nz_keep, flag_z, val_zero);
    let c_src = field(&mut g, ctl::C, 3);
    let c_is = g.one_hot(c_src, 8);
    let a_and_b0 = g.bit(a_and, 0);
    let alu_b7 = g.bit(alu_a, 7);
    let alu_b6 = g.bit(alu_a, 6);
    let alu_b5 = g.bit(alu_a, 5);
    let c_new = g.s.and_or(
        1,
        &[
            (c_is[CarrySrc::Keep as usize], flag_c),
            (c_is[CarrySrc::Shift as usize], shift_c),
            (c_is[CarrySrc::Adder as usize], sum_c),
            (c_is[CarrySrc::Set as usize], one),
            (c_is[CarrySrc::Bit7 as usize], alu_b7),
            (c_is[CarrySrc::AndBit0 as usize], a_and_b0),
            (c_is[CarrySrc::Bit6 as usize], alu_b6),
        ],
    );
    let v_src = field(&mut g, ctl::V, 3);
    let v_is = g.one_hot(v_src, 5);
    let o_b6 = g.bit(o, 6);
    let arr_v = g.s.xor(alu_b6, alu_b5);
    let v_new = g.s.and_or(
        1,
        &[
            (v_is[OverflowSrc::Keep as usize], flag_v),
            (v_is[OverflowSrc::Adder as usize], sum_v),
            (v_is[OverflowSrc::Operand6 as usize], o_b6),
            (v_is[OverflowSrc::Arr as usize], arr_v),
        ],
    );
    let f_cli = flag(&mut g, Flag::Cli);
    let f_sei = flag(&mut g, Flag::Sei);
    let f_cld = flag(&mut g, Flag::Cld);
    let f_sed = flag(&mut g, Flag::Sed);
    let i_set = g.or1(f_sei, f_brk);
    let i_new = g.pick(1, &[(f_cli, g.zero), (i_set, one)], flag_i);
    let d_new = g.pick(1, &[(f_cld, g.zero), (f_sed, one)], flag_d);
    let zero = g.zero;
    let p_calc = g.s.concat(&[c_new, z_new, i_new, d_new, zero, one, v_new, n_new]);
    let pulled_p = {
        let m = g.k(8, 0xCF);
        let t = g.s.and(p0, m);
        let u = g.k(8, 0x20);
        g.s.or(t, u)
    };
    let pulled_p_rti = {
        let m = g.k(8, 0xCF);
        let t = g.s.and(p0, m);
        let u = g.k(8, 0x20);
        g.s.or(t, u)
    };
    let p_new = g.pick(8, &[(f_plp, pulled_p), (f_rti, pulled_p_rti)], p_calc);

    // ---- program counter ----
    let len = field(&mut g, ctl::LEN, 2);
    let len16 = g.s.zext(len, 16);
    let pc_seq = g.s.add(pc, len16);
    let f_branch = flag(&mut g, Flag::Branch);
    let cond_sel = {
        let s0 = flag(&mut g, Flag::CondSel0);
        let s1 = flag(&mut g, Flag::CondSel1);
        g.s.concat(&[s0, s1])
    };
    let cond_is = g.one_hot(cond_sel, 4);
    let cond_flag = g.s.and_or(1, &[(cond_is[0], flag_n), (cond_is[1], flag_v), (cond_is[2], flag_c), (cond_is[3], flag_z)]);
    let cond_value = flag(&mut g, Flag::CondValue);
    let cond_met = g.s.eq(cond_flag, cond_value);
    let taken = g.and1(f_branch, cond_met);
    let offset = g.s.sext(b1, 16);
    let target = g.s.add(pc_seq, offset);
    let br_cross = {
        let h1 = g.s.slice(pc_seq, 8, 8);
        let h2 = g.s.slice(target, 8, 8);
        g.s.cmp(CmpKind::Ne, h1, h2)
    };
    let f_jmp_abs = flag(&mut g, Flag::JmpAbs);
    let f_jsr = flag(&mut g, Flag::Jsr);
    let jump_abs = g.or1(f_jmp_abs, f_jsr);
    let rts_target = g.add_k(ptr16, 1);
    let rti_target = g.word(p1, p2);
    let pc_new = g.pick(
        16,
        &[(taken, target), (jump_abs, op16), (f_jmp_ind, ptr16), (f_rts, rts_target), (f_rti, rti_target), (f_brk, ptr16)],
        pc_seq,
    );


    // ---- cycles ----
    let base_cyc = field(&mut g, ctl::CYCLES, 4);
    let read_op = g.s.bit(cw, ctl::READ_OP);
    let crossed = {
        let t1 = g.and1(m_abx, cross_abx);
        let t2 = g.and1(m_aby, cross_aby);
        let t3 = g.and1(m_izy, cross_izy);
        let any = g.s.any(&[t1, t2, t3]);
        g.and1(any, read_op)
    };
    let br_far = g.and1(taken, br_cross);
    let term = |node: NodeId| SumTerm { node, shift: 0, neg: false };
    let cyc_exec = g.s.sum(32, &[term(cyc), term(base_cyc), term(crossed), term(taken), term(br_far)], 0);
    let cyc_int = g.add_k(cyc, 7);

    // ---- stores, read-modify-writes and pushes: one write run ----
    let f_store = flag(&mut g, Flag::Store);
    let f_store_x = flag(&mut g, Flag::StoreX);
    let f_store_y = flag(&mut g, Flag::StoreY);
    let f_store_ax = flag(&mut g, Flag::StoreAx);
    let f_rmw_mem = flag(&mut g, Flag::RmwMem);
    let f_pha = flag(&mut g, Flag::Pha);
    let f_php = flag(&mut g, Flag::Php);
    let store_val = g.pick(8, &[(f_store_x, x), (f_store_y, y), (f_store_ax, ax)], a);
    let mut diverted = Vec::new();
    let mut port_writes = Vec::new();
    let mut exits = None;
    for (addr, kind) in [(opts.console, 1), (opts.exit, 2)] {
        if let Some(addr) = addr {
            let hit = g.s.eq_const(ea, u64::from(addr));
            let st = g.and1(f_store, hit);
            let en = g.and1(exec, st);
            diverted.push(st);
            port_writes.push((kind, en));
            if kind == 2 {
                exits = Some(en);
            }
        }
    }
    let ea_write = {
        let w = g.or1(f_store, f_rmw_mem);
        if diverted.is_empty() {
            w
        } else {
            let d = g.s.any(&diverted);
            let nd = g.not1(d);
            g.and1(w, nd)
        }
    };
    let ea_data = g.s.select(f_store, store_val, rmw_val);
    let pushed_p = {
        let bu = g.k(8, 0x30);
        g.s.or(p, bu)
    };
    let pc2 = g.add_k(pc, 2);
    let ret_lo = g.s.slice(pc2, 0, 8);
    let ret_hi = g.s.slice(pc2, 8, 8);
    let pc_lo = g.s.slice(pc, 0, 8);
    let pc_hi = g.s.slice(pc, 8, 8);
    let jsr_brk = g.or1(f_jsr, f_brk);
    let w0_exec = g.s.and_or(8, &[(ea_write, ea_data), (f_pha, a), (f_php, pushed_p), (jsr_brk, ret_hi)]);
    let w1_exec = g.s.and_or(8, &[(jsr_brk, ret_lo)]);
    let w2_exec = g.s.and_or(8, &[(f_brk, pushed_p)]);
    let w0 = g.s.select(take_int, pc_hi, w0_exec);
    let w1 = g.s.select(take_int, pc_lo, w1_exec);
    let w2 = g.s.select(take_int, p, w2_exec);
    let one_byte = g.s.any(&[ea_write, f_pha, f_php]);
    let count_exec = {
        let c1 = g.k(2, 1);
        let c2 = g.k(2, 2);
        let c3 = g.k(2, 3);
        let c0 = g.k(2, 0);
        g.pick(2, &[(one_byte, c1), (f_jsr, c2), (f_brk, c3)], c0)
    };
    let three = g.k(2, 3);
    let count = g.s.select(take_int, three, count_exec);
    let stack_base = g.word(sp, one8);
    let push_base = {
        let pushes = g.s.any(&[f_pha, f_php, f_jsr, f_brk, take_int]);
        g.s.select(pushes, stack_base, ea)
    };
    let write_en = g.or1(exec, take_int);
    drop(g);
    write_run(&mut b, push_base, [w0, w1, w2], count, write_en);
    let mut g = Gates::new(&mut b);

    // ---- the boot step: registers from INIT ----
    let init = |g: &mut Gates, row: u64| {
        let r = g.k(4, row);
        g.s.load(mem::INIT, 8, r)
    };
    let i_pcl = init(&mut g, init_row::PC_LO);
    let i_pch = init(&mut g, init_row::PC_HI);
    let i_pc = g.word(i_pcl, i_pch);
    let i_a = init(&mut g, init_row::A);
    let i_x = init(&mut g, init_row::X);
    let i_y = init(&mut g, init_row::Y);
    let i_s = init(&mut g, init_row::S);
    let i_p_raw = init(&mut g, init_row::P);
    let i_p = {
        let m = g.k(8, 0xCF);
        let t = g.s.and(i_p_raw, m);
        let u = g.k(8, 0x20);
        g.s.or(t, u)
    };
    let i_cyc_bytes: Vec<NodeId> = (0..4).map(|k| init(&mut g, init_row::CYC + k)).collect();
    let i_cyc = g.s.concat(&i_cyc_bytes);

    // ---- next values: boot, interrupt, instruction, else (a fault, a stop) keep ----
    let keeps = {
        let any = g.s.any(&[booting, take_int, exec]);
        g.not1(any)
    };
    let fin = |g: &mut Gates, w: u32, boot: NodeId, int: NodeId, ex: NodeId, keep: NodeId| {
        g.s.and_or(w, &[(booting, boot), (take_int, int), (exec, ex), (keeps, keep)])
    };
    let s_int = g.add_k(sp, 0xFD);
    let p_int = {
        let i = g.k(8, 0x04);
        g.s.or(p, i)
    };
    let ptr16_int = ptr16;
    let pc_next = fin(&mut g, 16, i_pc, ptr16_int, pc_new, pc);
    let a_next = fin(&mut g, 8, i_a, a, a_new, a);
    let x_next = fin(&mut g, 8, i_x, x, x_new, x);
    let y_next = fin(&mut g, 8, i_y, y, y_new, y);
    let s_next = fin(&mut g, 8, i_s, s_int, s_new, sp);
    let p_next = fin(&mut g, 8, i_p, p_int, p_new, p);
    let cyc_next = fin(&mut g, 32, i_cyc, cyc_int, cyc_exec, cyc);
    let stop = match exits {
        Some(e) => g.or1(fault, e),
        None => fault,
    };
    let busy_next = {
        let b255 = g.k(8, BUSY_STOPPING);
        let b1 = g.k(8, 1);
        let b0 = g.k(8, 0);
        g.pick(8, &[(stop, b255), (booting, b1)], b0)
    };
    let poll_next = {
        let sets = g.s.any(&[f_cli, f_sei, f_plp]);
        let valid = g.and1(exec, sets);
        let old = g.and1(valid, flag_i);
        g.s.concat(&[valid, old])
    };
    let one_bit = g.one;
    let s = g.s;
    s.set_next(reg::PC, pc_next);
    s.set_next(reg::A, a_next);
    s.set_next(reg::X, x_next);
    s.set_next(reg::Y, y_next);
    s.set_next(reg::S, s_next);
    s.set_next(reg::P, p_next);
    s.set_next(reg::CYC, cyc_next);
    s.set_next(reg::BUSY, busy_next);
    s.set_next(reg::RUN, one_bit);
    s.set_next(reg::NMI_LEVEL, nmi_in);
    s.set_next(reg::POLL_I, poll_next);

    // ---- ports ----
    let fault_code = s.concat(&[b0, pc]);
    let mut ports = vec![PortDesc::new("FAULT", 24).with_role(PortRole::Fault)];
    s.output(0, fault_code, fault);
    for (kind, en) in port_writes {
        let (name, role) = if kind == 1 { ("OUT", PortRole::Console) } else { ("EXIT", PortRole::Exit) };
        s.output(ports.len() as u32, store_val, en);
        ports.push(PortDesc::new(name, 8).with_role(role));
    }
    s.halt(stopping);

    let r = |name: &str, width: u32| RegisterDesc { name: name.into(), width };
    let registers = vec![
        r("PC", 16),
        r("A", 8),
        r("X", 8),
        r("Y", 8),
        r("S", 8),
        r("P", 8),
        r("CYC", 32),
        r("BUSY", 8),
        r("RUN", 1),
        r("NMI_LEVEL", 1),
        r("POLL_I", 2),
    ];
    let mut memories: Vec<MemoryDesc> =
        (0..4).map(|k| MemoryDesc { name: format!("M{k}"), word_width: 8, addr_width: ROW_BITS }).collect();
    memories.push(MemoryDesc { name: "INIT".into(), word_width: 8, addr_width: 4 });
    let mut desc = MachineDesc::new("mos6502", registers, memories, ports, b.finish());
    desc.face.inputs = vec![PortDesc::new("NMI", 1), PortDesc::new("IRQ", 1)];
    desc.face.micro_step = Some(reg::BUSY);
    desc
}
