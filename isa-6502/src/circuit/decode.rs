//! The decode tables: what each opcode decodes to, as the fields of one control word ([`ctl`]) and a word of
//! one-hot [`Flag`]s, both looked up by the fetch section; and [`Decoded`], their nodes as the sections read them.

use super::Ctx;
use crate::opcode::{AddressingMode, Mnemonic, decode};
use isa_api::circuit::NodeId;

/// Bit fields of the control word.
pub(super) mod ctl {
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

/// Read-modify-write operations ([`ctl::RMW`]).
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

/// ALU operations ([`ctl::ALU`]).
#[derive(Clone, Copy, PartialEq)]
#[repr(u64)]
pub(super) enum Alu {
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
pub(super) enum Nz {
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

/// Where C comes from ([`ctl::C`]).
#[derive(Clone, Copy)]
#[repr(u64)]
pub(super) enum CarrySrc {
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

/// Where V comes from ([`ctl::V`]).
#[derive(Clone, Copy)]
#[repr(u64)]
pub(super) enum OverflowSrc {
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
pub(super) enum Flag {
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
    /// SHY / SHX: the stored register is ANDed with the base address's high byte + 1, which also replaces the
    /// address's high byte when the index crosses a page.
    StoreHigh,
    /// The instruction reads the pointer (level B): `(zp,X)`, `(zp),Y`, `JMP ($xxxx)`, or a pull.
    PtrRead,
    /// PLA, PLP, RTS or RTI: the pointer read pulls from the stack.
    Pull,
    /// The addressing mode is `(zp,X)`, `(zp),Y`: the flags that gate the pointer read's zero-page bases (the
    /// mode field's selects come a layer later).
    ModeIzx,
    ModeIzy,
    /// Branch condition: which flag (2 bits: N, V, C, Z) and its value when taken.
    CondSel0,
    CondSel1,
    CondValue,
}

/// The code of an addressing mode in the control word's [`ctl::MODE`] field.
pub(super) const fn mode_code(m: AddressingMode) -> u64 {
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

/// How an instruction accesses its operand.
#[derive(Clone, Copy, PartialEq)]
enum Access {
    Read,
    Write,
    Modify,
    Other,
}

/// Whether instruction `m` reads, writes or modifies its operand (or none of them).
fn access_kind(m: Mnemonic) -> Access {
    use Mnemonic::*;
    match m {
        Nop | Lda | Ldx | Ldy | Lax | Lxa | Adc | Sbc | And | Ora | Eor | Cmp | Cpx | Cpy | Bit | Anc | Alr | Arr
        | Axs => Access::Read,
        Sta | Stx | Sty | Sax | Shy | Shx => Access::Write,
        Asl | Lsr | Rol | Ror | Inc | Dec | Slo | Rla | Sre | Rra | Dcp | Isc => Access::Modify,
        _ => Access::Other,
    }
}

/// The two control words of one opcode: the fields of [`ctl`], and the one-hot [`Flag`]s.
fn control_words(code: u8) -> (u64, u64) {
    let op = decode(code);
    (control_fields(op.mnemonic, op.mode, op.byte_len()), control_flags(op.mnemonic, op.mode))
}

/// The fields of [`ctl`] of an opcode (`len`: its length in bytes).
fn control_fields(m: Mnemonic, mode: AddressingMode, len: u16) -> u64 {
    use Mnemonic::*;
    let mut w = mode_code(mode) << ctl::MODE;
    w |= base_cycles(m, mode) << ctl::CYCLES;
    w |= u64::from(len) << ctl::LEN;
    if access_kind(m) == Access::Read && !matches!(mode, AddressingMode::Immediate | AddressingMode::Implied) {
        w |= 1 << ctl::READ_OP;
    }
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
        Lda | Ldx | Ldy | Lax | Lxa => Nz::Operand,
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
    w
}

/// The one-hot [`Flag`]s of an opcode.
fn control_flags(m: Mnemonic, mode: AddressingMode) -> u64 {
    use Mnemonic::*;
    let acc = mode == AddressingMode::Accumulator;
    let mut flags = 0u64;
    if matches!(mode, AddressingMode::IndexedIndirect | AddressingMode::IndirectIndexed | AddressingMode::Indirect)
        || matches!(m, Pla | Plp | Rts | Rti)
    {
        flags |= 1 << Flag::PtrRead as u32;
    }
    if matches!(m, Pla | Plp | Rts | Rti) {
        flags |= 1 << Flag::Pull as u32;
    }
    if mode == AddressingMode::IndexedIndirect {
        flags |= 1 << Flag::ModeIzx as u32;
    }
    if mode == AddressingMode::IndirectIndexed {
        flags |= 1 << Flag::ModeIzy as u32;
    }
    let mut f = |x: Flag| flags |= 1u64 << (x as u32);
    match m {
        Lda => f(Flag::LoadA),
        Ldx => f(Flag::LoadX),
        Ldy => f(Flag::LoadY),
        Lax | Lxa => {
            f(Flag::LoadA);
            f(Flag::LoadX);
        }
        Shy => {
            f(Flag::Store);
            f(Flag::StoreY);
            f(Flag::StoreHigh);
        }
        Shx => {
            f(Flag::Store);
            f(Flag::StoreX);
            f(Flag::StoreHigh);
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
    flags
}

/// The control words of all 256 opcodes (the decode tables the circuit looks up): fields, then flags.
pub(super) fn control_tables() -> (Vec<u64>, Vec<u64>) {
    (0..=255u8).map(control_words).unzip()
}

/// The decoded control word and flags of the opcode (`control_tables`), as the sections read them.
#[derive(Clone, Copy)]
pub(super) struct Decoded {
    pub(super) cw: NodeId,
    pub(super) fw: NodeId,
}

impl Decoded {
    /// Bits `lo..lo + w` of the control word (`ctl::*`).
    pub(super) fn field(self, cx: &mut Ctx, lo: u32, w: u32) -> NodeId {
        cx.s.slice(self.cw, lo, w)
    }
    /// Flag `f` of the opcode.
    pub(super) fn flag(self, cx: &mut Ctx, f: Flag) -> NodeId {
        cx.s.bit(self.fw, f as u32)
    }
}
