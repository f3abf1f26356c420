//! The NMOS 6502 opcode matrix: for each of the 256 opcodes its mnemonic and addressing mode.
//!
//! Source: the NESdev wiki pages "CPU unofficial opcodes" (the full 16x16 matrix, with the unofficial names used
//! here: LAX SAX DCP ISC SLO RLA SRE RRA ANC ALR ARR AXS, the NOP family, JAM and the unstable ones) and
//! "CPU addressing modes". Cycle counts are not tabulated: the interpreter performs every bus access of the
//! instruction (dummy reads included) and one bus access is one cycle, so the counts, page-crossing and
//! taken-branch penalties included, follow from the accesses (see [`crate::cpu`]).
//!
//! Tested by the unit tests below (151 official opcodes, the operand lengths) and by `tests/processortests.rs`.

use std::fmt;

/// An instruction's operation, by its standard 6502 name (unofficial ones by the NESdev wiki's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
#[rustfmt::skip]
pub enum Mnemonic {
    // Official.
    Adc, And, Asl, Bcc, Bcs, Beq, Bit, Bmi, Bne, Bpl, Brk, Bvc, Bvs, Clc, Cld, Cli, Clv, Cmp, Cpx, Cpy, Dec, Dex,
    Dey, Eor, Inc, Inx, Iny, Jmp, Jsr, Lda, Ldx, Ldy, Lsr, Nop, Ora, Pha, Php, Pla, Plp, Rol, Ror, Rti, Rts, Sbc,
    Sec, Sed, Sei, Sta, Stx, Sty, Tax, Tay, Tsx, Txa, Txs, Tya,
    // Unofficial and stable: what nestest and Tom Harte's tests exercise.
    Lax, Sax, Dcp, Isc, Slo, Rla, Sre, Rra, Anc, Alr, Arr, Axs,
    // Unofficial and unstable: the result depends on the chip and on analog effects. LXA, SHY and SHX behave
    // consistently on the NES's 2A03, where blargg's instr_test-v5 checks them, and are supported; the others
    // fault.
    Xaa, Lxa, Las, Tas, Shy, Shx, Ahx,
    /// The twelve opcodes that lock the NMOS 6502 up until reset (also called KIL or HLT).
    Jam,
}

impl Mnemonic {
    /// The upper-case three-letter name, as assemblers and the NESdev wiki spell it.
    #[rustfmt::skip]
    pub const fn name(self) -> &'static str {
        use Mnemonic::*;
        match self {
            Adc => "ADC", And => "AND", Asl => "ASL", Bcc => "BCC", Bcs => "BCS", Beq => "BEQ", Bit => "BIT",
            Bmi => "BMI", Bne => "BNE", Bpl => "BPL", Brk => "BRK", Bvc => "BVC", Bvs => "BVS", Clc => "CLC",
            Cld => "CLD", Cli => "CLI", Clv => "CLV", Cmp => "CMP", Cpx => "CPX", Cpy => "CPY", Dec => "DEC",
            Dex => "DEX", Dey => "DEY", Eor => "EOR", Inc => "INC", Inx => "INX", Iny => "INY", Jmp => "JMP",
            Jsr => "JSR", Lda => "LDA", Ldx => "LDX", Ldy => "LDY", Lsr => "LSR", Nop => "NOP", Ora => "ORA",
            Pha => "PHA", Php => "PHP", Pla => "PLA", Plp => "PLP", Rol => "ROL", Ror => "ROR", Rti => "RTI",
            Rts => "RTS", Sbc => "SBC", Sec => "SEC", Sed => "SED", Sei => "SEI", Sta => "STA", Stx => "STX",
            Sty => "STY", Tax => "TAX", Tay => "TAY", Tsx => "TSX", Txa => "TXA", Txs => "TXS", Tya => "TYA",
            Lax => "LAX", Sax => "SAX", Dcp => "DCP", Isc => "ISC", Slo => "SLO", Rla => "RLA", Sre => "SRE",
            Rra => "RRA", Anc => "ANC", Alr => "ALR", Arr => "ARR", Axs => "AXS", Xaa => "XAA", Lxa => "LXA",
            Las => "LAS", Tas => "TAS", Shy => "SHY", Shx => "SHX", Ahx => "AHX", Jam => "JAM",
        }
    }

    /// Whether the interpreter refuses this operation with a [`crate::Fault`]: JAM and the unstable opcodes.
    pub const fn is_unsupported(self) -> bool {
        use Mnemonic::*;
        matches!(self, Xaa | Las | Tas | Ahx | Jam)
    }
}

impl fmt::Display for Mnemonic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How an instruction finds its operand (NESdev wiki, "CPU addressing modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressingMode {
    /// No operand, or the operand is implied by the operation (`CLC`, `PHA`, `RTS`, `BRK`).
    Implied,
    /// The accumulator (`ASL A`).
    Accumulator,
    /// The byte after the opcode (`LDA #$10`).
    Immediate,
    /// An address in page zero (`LDA $10`).
    ZeroPage,
    /// A page-zero address plus X, wrapping within page zero (`LDA $10,X`).
    ZeroPageX,
    /// A page-zero address plus Y, wrapping within page zero (`LDX $10,Y`).
    ZeroPageY,
    /// A 16-bit address (`LDA $1234`).
    Absolute,
    /// A 16-bit address plus X; reads take one more cycle when the sum crosses a page (`LDA $1234,X`).
    AbsoluteX,
    /// A 16-bit address plus Y; reads take one more cycle when the sum crosses a page (`LDA $1234,Y`).
    AbsoluteY,
    /// `JMP ($1234)`: the target is read from the pointer, whose high byte comes from the same page (the NMOS
    /// `JMP ($xxFF)` bug).
    Indirect,
    /// `(zp,X)`: the pointer at page-zero address operand+X, both pointer bytes within page zero.
    IndexedIndirect,
    /// `(zp),Y`: the pointer at the page-zero operand (both bytes within page zero), plus Y; reads take one
    /// more cycle when the sum crosses a page.
    IndirectIndexed,
    /// A signed 8-bit branch offset from the address of the next instruction.
    Relative,
}

impl AddressingMode {
    /// How many operand bytes follow the opcode (0, 1 or 2).
    pub const fn operand_len(self) -> u16 {
        use AddressingMode::*;
        match self {
            Implied | Accumulator => 0,
            Immediate | ZeroPage | ZeroPageX | ZeroPageY | IndexedIndirect | IndirectIndexed | Relative => 1,
            Absolute | AbsoluteX | AbsoluteY | Indirect => 2,
        }
    }
}

/// One decoded opcode: what it does and how it addresses its operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Opcode {
    /// The opcode byte.
    pub code: u8,
    /// The operation.
    pub mnemonic: Mnemonic,
    /// The addressing mode.
    pub mode: AddressingMode,
}

impl Opcode {
    /// Whether this opcode is one of the 151 documented by MOS. The unofficial duplicates of official operations
    /// (`SBC #` at $EB, the NOPs other than $EA) are not.
    pub const fn is_official(self) -> bool {
        use Mnemonic::*;
        match self.mnemonic {
            Nop => self.code == 0xEA,
            Sbc => self.code != 0xEB,
            Lax | Sax | Dcp | Isc | Slo | Rla | Sre | Rra | Anc | Alr | Arr | Axs => false,
            Xaa | Lxa | Las | Tas | Shy | Shx | Ahx | Jam => false,
            _ => true,
        }
    }

    /// The instruction's length in bytes: the opcode plus its operand.
    pub const fn byte_len(self) -> u16 {
        1 + self.mode.operand_len()
    }
}

/// Decodes an opcode byte. Every byte decodes; JAM and the unstable opcodes decode to mnemonics that the
/// interpreter refuses ([`Mnemonic::is_unsupported`]).
pub const fn decode(code: u8) -> Opcode {
    let (mnemonic, mode) = MATRIX[code as usize];
    Opcode { code, mnemonic, mode }
}

use AddressingMode::{
    Absolute as Abs, AbsoluteX as Abx, AbsoluteY as Aby, Accumulator as Acc, Immediate as Imm, Implied as Imp,
    IndexedIndirect as Izx, Indirect as Ind, IndirectIndexed as Izy, Relative as Rel, ZeroPage as Zp, ZeroPageX as Zpx,
    ZeroPageY as Zpy,
};
use Mnemonic::*;

/// The opcode matrix, one row per high nibble ($x0-$xF), as on the NESdev wiki's "CPU unofficial opcodes" page.
#[rustfmt::skip]
const MATRIX: [(Mnemonic, AddressingMode); 256] = [
    // $00-$0F
    (Brk, Imp), (Ora, Izx), (Jam, Imp), (Slo, Izx), (Nop, Zp),  (Ora, Zp),  (Asl, Zp),  (Slo, Zp),
    (Php, Imp), (Ora, Imm), (Asl, Acc), (Anc, Imm), (Nop, Abs), (Ora, Abs), (Asl, Abs), (Slo, Abs),
    // $10-$1F
    (Bpl, Rel), (Ora, Izy), (Jam, Imp), (Slo, Izy), (Nop, Zpx), (Ora, Zpx), (Asl, Zpx), (Slo, Zpx),
    (Clc, Imp), (Ora, Aby), (Nop, Imp), (Slo, Aby), (Nop, Abx), (Ora, Abx), (Asl, Abx), (Slo, Abx),
    // $20-$2F
    (Jsr, Abs), (And, Izx), (Jam, Imp), (Rla, Izx), (Bit, Zp),  (And, Zp),  (Rol, Zp),  (Rla, Zp),
    (Plp, Imp), (And, Imm), (Rol, Acc), (Anc, Imm), (Bit, Abs), (And, Abs), (Rol, Abs), (Rla, Abs),
    // $30-$3F
    (Bmi, Rel), (And, Izy), (Jam, Imp), (Rla, Izy), (Nop, Zpx), (And, Zpx), (Rol, Zpx), (Rla, Zpx),
    (Sec, Imp), (And, Aby), (Nop, Imp), (Rla, Aby), (Nop, Abx), (And, Abx), (Rol, Abx), (Rla, Abx),
    // $40-$4F
    (Rti, Imp), (Eor, Izx), (Jam, Imp), (Sre, Izx), (Nop, Zp),  (Eor, Zp),  (Lsr, Zp),  (Sre, Zp),
    (Pha, Imp), (Eor, Imm), (Lsr, Acc), (Alr, Imm), (Jmp, Abs), (Eor, Abs), (Lsr, Abs), (Sre, Abs),
    // $50-$5F
    (Bvc, Rel), (Eor, Izy), (Jam, Imp), (Sre, Izy), (Nop, Zpx), (Eor, Zpx), (Lsr, Zpx), (Sre, Zpx),
    (Cli, Imp), (Eor, Aby), (Nop, Imp), (Sre, Aby), (Nop, Abx), (Eor, Abx), (Lsr, Abx), (Sre, Abx),
    // $60-$6F
    (Rts, Imp), (Adc, Izx), (Jam, Imp), (Rra, Izx), (Nop, Zp),  (Adc, Zp),  (Ror, Zp),  (Rra, Zp),
    (Pla, Imp), (Adc, Imm), (Ror, Acc), (Arr, Imm), (Jmp, Ind), (Adc, Abs), (Ror, Abs), (Rra, Abs),
    // $70-$7F
    (Bvs, Rel), (Adc, Izy), (Jam, Imp), (Rra, Izy), (Nop, Zpx), (Adc, Zpx), (Ror, Zpx), (Rra, Zpx),
    (Sei, Imp), (Adc, Aby), (Nop, Imp), (Rra, Aby), (Nop, Abx), (Adc, Abx), (Ror, Abx), (Rra, Abx),
    // $80-$8F
    (Nop, Imm), (Sta, Izx), (Nop, Imm), (Sax, Izx), (Sty, Zp),  (Sta, Zp),  (Stx, Zp),  (Sax, Zp),
    (Dey, Imp), (Nop, Imm), (Txa, Imp), (Xaa, Imm), (Sty, Abs), (Sta, Abs), (Stx, Abs), (Sax, Abs),
    // $90-$9F
    (Bcc, Rel), (Sta, Izy), (Jam, Imp), (Ahx, Izy), (Sty, Zpx), (Sta, Zpx), (Stx, Zpy), (Sax, Zpy),
    (Tya, Imp), (Sta, Aby), (Txs, Imp), (Tas, Aby), (Shy, Abx), (Sta, Abx), (Shx, Aby), (Ahx, Aby),
    // $A0-$AF
    (Ldy, Imm), (Lda, Izx), (Ldx, Imm), (Lax, Izx), (Ldy, Zp),  (Lda, Zp),  (Ldx, Zp),  (Lax, Zp),
    (Tay, Imp), (Lda, Imm), (Tax, Imp), (Lxa, Imm), (Ldy, Abs), (Lda, Abs), (Ldx, Abs), (Lax, Abs),
    // $B0-$BF
    (Bcs, Rel), (Lda, Izy), (Jam, Imp), (Lax, Izy), (Ldy, Zpx), (Lda, Zpx), (Ldx, Zpy), (Lax, Zpy),
    (Clv, Imp), (Lda, Aby), (Tsx, Imp), (Las, Aby), (Ldy, Abx), (Lda, Abx), (Ldx, Aby), (Lax, Aby),
    // $C0-$CF
    (Cpy, Imm), (Cmp, Izx), (Nop, Imm), (Dcp, Izx), (Cpy, Zp),  (Cmp, Zp),  (Dec, Zp),  (Dcp, Zp),
    (Iny, Imp), (Cmp, Imm), (Dex, Imp), (Axs, Imm), (Cpy, Abs), (Cmp, Abs), (Dec, Abs), (Dcp, Abs),
    // $D0-$DF
    (Bne, Rel), (Cmp, Izy), (Jam, Imp), (Dcp, Izy), (Nop, Zpx), (Cmp, Zpx), (Dec, Zpx), (Dcp, Zpx),
    (Cld, Imp), (Cmp, Aby), (Nop, Imp), (Dcp, Aby), (Nop, Abx), (Cmp, Abx), (Dec, Abx), (Dcp, Abx),
    // $E0-$EF
    (Cpx, Imm), (Sbc, Izx), (Nop, Imm), (Isc, Izx), (Cpx, Zp),  (Sbc, Zp),  (Inc, Zp),  (Isc, Zp),
    (Inx, Imp), (Sbc, Imm), (Nop, Imp), (Sbc, Imm), (Cpx, Abs), (Sbc, Abs), (Inc, Abs), (Isc, Abs),
    // $F0-$FF
    (Beq, Rel), (Sbc, Izy), (Jam, Imp), (Isc, Izy), (Nop, Zpx), (Sbc, Zpx), (Inc, Zpx), (Isc, Zpx),
    (Sed, Imp), (Sbc, Aby), (Nop, Imp), (Isc, Aby), (Nop, Abx), (Sbc, Abx), (Inc, Abx), (Isc, Abx),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_are_151_official_opcodes_and_56_official_mnemonics() {
        let official: Vec<Opcode> = (0..=255u8).map(decode).filter(|op| op.is_official()).collect();
        assert_eq!(official.len(), 151);
        let mut mnemonics: Vec<&str> = official.iter().map(|op| op.mnemonic.name()).collect();
        mnemonics.sort_unstable();
        mnemonics.dedup();
        assert_eq!(mnemonics.len(), 56);
    }

    #[test]
    fn twelve_jams_and_eight_unstable_opcodes() {
        let jams: Vec<u8> = (0..=255u8).filter(|&c| decode(c).mnemonic == Jam).collect();
        assert_eq!(jams, [0x02, 0x12, 0x22, 0x32, 0x42, 0x52, 0x62, 0x72, 0x92, 0xB2, 0xD2, 0xF2]);
        let unstable: Vec<u8> =
            (0..=255u8).filter(|&c| decode(c).mnemonic.is_unsupported() && decode(c).mnemonic != Jam).collect();
        assert_eq!(unstable, [0x8B, 0x93, 0x9B, 0x9F, 0xBB]);
    }

    #[test]
    fn lengths_of_some_well_known_instructions() {
        assert_eq!(decode(0x00).byte_len(), 1); // BRK (its padding byte is skipped by the execution, not the length)
        assert_eq!(decode(0xA9).byte_len(), 2); // LDA #
        assert_eq!(decode(0x6C).byte_len(), 3); // JMP (ind)
        assert_eq!(decode(0xB1).mode, AddressingMode::IndirectIndexed);
        assert_eq!(decode(0x96).mode, AddressingMode::ZeroPageY); // STX zp,Y
    }
}
