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
//! | `NMI_PEND` | register | 1 | an NMI edge came too late for the poll that could have seen it: the next poll services it |
//! | `POLL_I` | register | 2 | bit 0: the last instruction was CLI, SEI or PLP; bit 1: I before it (the next interrupt poll sees that I) |
//! | `POLL` | register | 3 | where the next boundary's poll looks ([`crate::Poll::code`]): 0 an instruction's second-to-last cycle, 1 a cycle earlier (a taken branch on its page), 2 none after BRK or an IRQ sequence (a recent NMI hijacks its vector), 3 none, 4 after an OAM DMA whose store's poll saw an interrupt |
//! | `M0`..`M3` | memories, 16,384 x 8 | | the 64 KiB address space in four byte banks: bank k holds the bytes at `addr % 4 == k`, row `addr / 4` |
//! | `INIT` | memory, 16 x 8 | | the state the boot step loads: PC lo, PC hi, A, X, Y, S, P, CYC (4 bytes, low first) |
//! | `OUT` | port, 8, console | | a store to the console address (when configured) |
//! | `EXIT` | port, 8, exit | | a store to the exit address (when configured): the exit status; the machine halts |
//! | `FAULT` | port, 24, fault | | opcode (bits 0..8) and PC (bits 8..24) of a JAM or unstable opcode; the machine halts |
//! | `NMI` | input, 3 | | a new NMI edge's age in cycles before the boundary (0 none, 1-3, 4 = four or more): [`crate::Lines::nmi_age`] |
//! | `IRQ` | input, 2 | | the IRQ level at the two poll points (bit 0: an instruction's, bit 1: a cycle earlier): [`crate::Lines::irq`] |
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
    /// The NES memory map instead of a flat one: RAM mirrored through $1FFF, the PPU ($2000-$3FFF) and APU/IO
    /// ($4000-$5FFF) registers as IO ranges, the PRG ROM ($8000-$FFFF) read from memory, its stores on port
    /// `IO_WRITE` (the cartridge's mapper registers, the host's).
    pub nes: bool,
    /// NES map: the PRG ROM the memory holds and how its banks switch.
    pub prg: PrgRom,
}

/// The NES map's PRG ROM: how much the machine's memory holds and the board's PRG banking (the CPU side of the
/// cartridge's mapper, which the circuit runs; CHR banks and mirroring stay the host's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrgRom {
    /// KiB of PRG ROM in memory: a power of two from 32 to 512 (32 where $8000-$FFFF never moves: a 16 KiB ROM
    /// is there twice).
    pub kib: u32,
    /// How stores to $8000-$FFFF move the banks.
    pub banking: PrgBanking,
}

impl Default for PrgRom {
    fn default() -> Self {
        PrgRom { kib: 32, banking: PrgBanking::Fixed }
    }
}

/// PRG banking boards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrgBanking {
    /// $8000-$FFFF shows the same 32 KiB throughout (NROM, CNROM; other boards until their first switch).
    Fixed,
    /// UxROM (mapper 2): a store to $8000-$FFFF selects the 16 KiB bank at $8000 (the value modulo the bank
    /// count, no bus conflicts); $C000-$FFFF holds the last bank.
    Uxrom,
    /// MMC3 (mapper 4), its PRG side: a store to an even address of $8000-$9FFF sets the bank select (the register
    /// the next data write sets, bits 0-2, and the PRG mode, bit 6); to an odd one, the selected register (`R6`
    /// and `R7` are PRG banks, modulo the bank count). 8 KiB windows: $8000 `R6` (mode 0) or the second-last
    /// bank (mode 1), $A000 `R7`, $C000 the other of the two, $E000 the last bank. The other registers ($A000
    /// mirroring, $C000-$FFFF the scanline IRQ, `R0`-`R5` CHR) are the host's.
    Mmc3,
    /// MMC1 (mapper 1, 32-512 KiB), its PRG side: a store to $8000-$FFFF with bit 7 set resets the serial
    /// port (and sets PRG mode 3); else bit 0 shifts in, and the fifth such store writes the five bits to the
    /// register its address names: control ($8000-$9FFF; bits 2-3 the PRG mode) or PRG bank ($E000-$FFFF, bits
    /// 0-3). A read-modify-write's first (unmodified) write is the one that counts: the second, on the next
    /// cycle, is ignored. 16 KiB windows: mode 0-1 32 KiB at `bank & !1`; mode 2 the first bank at $8000 and
    /// `bank` at $C000; mode 3 `bank` at $8000 and the last at $C000. On 512 KiB boards (SUROM) bit 4 of CHR
    /// bank 0 ($A000-$BFFF) selects the 256 KiB half every window shows, the "first" and "last" banks included
    /// (NESdev wiki, "MMC1": SUROM). The CHR registers are otherwise the host's.
    Mmc1,
}

impl PrgRom {
    /// Rows of each of `PRG_EVEN` and `PRG_ODD` (address bits): `kib` KiB as 32-bit words, half each.
    pub fn row_bits(&self) -> u32 {
        self.kib.trailing_zeros() + 7
    }
    /// Bits of a 16 KiB bank number.
    fn bank16_bits(&self) -> u32 {
        self.kib.trailing_zeros() - 4
    }
    /// Bits of MMC1's PRG bank register (at most 4: a 512 KiB board's fifth bank bit is `MMC1_OUTER`).
    fn mmc1_prg_bits(&self) -> u32 {
        self.bank16_bits().min(4)
    }
    /// Whether this is a 512 KiB MMC1 board (SUROM), with the `MMC1_OUTER` register.
    fn mmc1_outer(&self) -> bool {
        self.banking == PrgBanking::Mmc1 && self.bank16_bits() > 4
    }
    /// Bits of an 8 KiB bank number.
    fn bank8_bits(&self) -> u32 {
        self.kib.trailing_zeros() - 3
    }
    /// Bits of a bank number of the board's window size (16 KiB for UxROM and MMC1, 8 KiB for MMC3).
    fn window_bank_bits(&self) -> u32 {
        if self.banking == PrgBanking::Mmc3 { self.bank8_bits() } else { self.bank16_bits() }
    }
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
    pub const NMI_PEND: u32 = 9;
    pub const POLL_I: u32 = 10;
    pub const POLL: u32 = 11;
    /// NES map: the page an OAM DMA copies (the value stored to $4014).
    pub const DMA_PAGE: u32 = 12;
    /// NES map: the next group of four bytes of the OAM DMA (0..64).
    pub const DMA_ROW: u32 = 13;
    /// NES map: the DMA takes 514 cycles (its store ended on an even cycle), else 513.
    pub const DMA_LONG: u32 = 14;
    /// NES map with UxROM banking: the 16 KiB bank at $8000.
    pub const PRG_BANK: u32 = 15;
    /// NES map with MMC3 banking: the bank select's register index (bits 0-2) and PRG mode (bit 3).
    pub const MMC3_SELECT: u32 = 15;
    /// NES map with MMC3 banking: the PRG bank registers `R6` and `R7`.
    pub const MMC3_R6: u32 = 16;
    pub const MMC3_R7: u32 = 17;
    /// NES map with MMC1 banking: the serial port's bits so far (4) and their count (0-4), the PRG mode (control
    /// bits 2-3) and the PRG bank (bits 0-3).
    pub const MMC1_SHIFT: u32 = 15;
    pub const MMC1_COUNT: u32 = 16;
    pub const MMC1_MODE: u32 = 17;
    pub const MMC1_PRG: u32 = 18;
    /// NES map with 512 KiB MMC1 banking (SUROM): the 256 KiB half, bit 4 of the last write to CHR bank 0.
    pub const MMC1_OUTER: u32 = 19;
}

/// Memory indices: the four byte banks, then `INIT`; in the NES map, then the PRG ROM's two halves.
pub mod mem {
    pub const BANKS: [u32; 4] = [0, 1, 2, 3];
    pub const INIT: u32 = 4;
    /// NES map: the PRG ROM's 32-bit words at even word addresses (`$8000 + 8 r .. + 3` at row `r`, the
    /// lowest byte first).
    pub const PRG_EVEN: u32 = 5;
    /// NES map: the PRG ROM's 32-bit words at odd word addresses (`$8004 + 8 r .. + 3` at row `r`).
    pub const PRG_ODD: u32 = 6;
    /// NES map with MMC3 or MMC1 banking: the first word of each bank of the board's window size (row = bank),
    /// for a fetch whose next word lies in the next window.
    pub const PRG_FIRST: u32 = 7;
}

/// Input port indices.
pub mod input {
    pub const NMI: u32 = 0;
    pub const IRQ: u32 = 1;
    /// NES map: the host's answer to the IO read the machine requested on port `IO_READ`.
    pub const IO_DATA: u32 = 2;
}

/// `BUSY` while an instruction waits for the host's answer to an IO read (NES map): the next step runs it
/// with the answer as its operand.
pub const BUSY_IO_WAIT: u64 = 2;

/// `BUSY` during an OAM DMA (NES map): a store to $4014 starts it; 64 steps each read four bytes of the page
/// and write them on port `OAM_DMA`; the last adds the DMA's 513 or 514 cycles ([`crate::oam_dma_cycles`]) and
/// retires the store.
pub const BUSY_DMA: u64 = 3;

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

/// NES map: bank address width. The banks hold only the 10 KiB of RAM, at a compact address
/// ([`nes_bank_address`]): PRG RAM ($6000-$7FFF) at 0x0000-0x1FFF, the 2 KiB of RAM at 0x2000-0x27FF (2,560 of
/// the 4,096 rows of each bank). The PRG ROM is in its own memories, four bytes a row.
const NES_ROW_BITS: u32 = 12;


/// NES map: where the byte at CPU address `addr` lives in the four banks (bank `c % 4`, row `c / 4` of the
/// compact address `c`): RAM ($0000-$1FFF, mirrored every 2 KiB) at 0x2000 + `addr % 0x800`, PRG RAM
/// ($6000-$7FFF) at `addr - 0x6000`; `None` for the IO registers ($2000-$5FFF) and the PRG ROM ($8000-).
pub fn nes_bank_address(addr: u16) -> Option<u16> {
    match addr {
        0x0000..=0x1FFF => Some(0x2000 | (addr & 0x07FF)),
        0x6000..=0x7FFF => Some(addr - 0x6000),
        _ => None,
    }
}

/// The CPU address of the byte a bank write names (memory `mem` of [`mem::BANKS`], row `row`): in the NES map
/// the inverse of [`nes_bank_address`] (RAM at its first mirror), else `row * 4 + mem`.
pub fn bank_byte_address(opts: &Mos6502Options, mem: u32, row: u64) -> u16 {
    let c = ((row << 2) | u64::from(mem)) as u16;
    match (opts.nes, c) {
        (false, _) => c,
        (true, 0x2000..) => c & 0x07FF,
        (true, _) => 0x6000 + c,
    }
}

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
    /// SHY / SHX: the stored register is ANDed with the base address's high byte + 1, which also replaces the
    /// address's high byte when the index crosses a page.
    StoreHigh,
    /// The instruction reads the pointer (level B): `(zp,X)`, `(zp),Y`, `JMP ($xxxx)`, or a pull.
    PtrRead,
    /// PLA, PLP, RTS or RTI: the pointer read pulls from the stack.
    Pull,
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
        Nop | Lda | Ldx | Ldy | Lax | Lxa | Adc | Sbc | And | Ora | Eor | Cmp | Cpx | Cpy | Bit | Anc | Alr | Arr
        | Axs => Access::Read,
        Sta | Stx | Sty | Sax | Shy | Shx => Access::Write,
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
    if access_kind(m) == Access::Read && !matches!(mode, AddressingMode::Immediate | AddressingMode::Implied) {
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
    let mut flags = 0u64;
    if matches!(mode, AddressingMode::IndexedIndirect | AddressingMode::IndirectIndexed | AddressingMode::Indirect)
        || matches!(m, Pla | Plp | Rts | Rti)
    {
        flags |= 1 << Flag::PtrRead as u32;
    }
    if matches!(m, Pla | Plp | Rts | Rti) {
        flags |= 1 << Flag::Pull as u32;
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
    (w, flags)
}

/// The control words of all 256 opcodes (the decode tables the circuit looks up): fields, then flags.
fn control_tables() -> (Vec<u64>, Vec<u64>) {
    (0..=255u8).map(control_words).unzip()
}

// ---- circuit helpers ----------------------------------------------------------------------------------------

/// Small word-level helpers over the builder. Every multiplexer is a one-hot select ([`Op::OneHot`]: one
/// threshold layer), its cases exclusive by construction.
///
/// [`Op::OneHot`]: isa_api::Op::OneHot
struct Gates<'a> {
    s: &'a mut CircuitBuilder,
    one: NodeId,
    zero: NodeId,
    /// Row address width of the four byte banks ([`ROW_BITS`], or [`NES_ROW_BITS`] in the NES map).
    row_bits: u32,
    /// NES map: the PRG ROM, and its banking registers (UxROM: `PRG_BANK`; MMC3: `MMC3_SELECT`, `R6`, `R7`).
    prg: PrgRom,
    prg_regs: Vec<NodeId>,
}

impl<'a> Gates<'a> {
    fn new(s: &'a mut CircuitBuilder, row_bits: u32) -> Self {
        let one = s.konst(1, 1);
        let zero = s.konst(1, 0);
        Gates { s, one, zero, row_bits, prg: PrgRom::default(), prg_regs: Vec::new() }
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
    /// The value of the (exclusive) case whose select is 1, else `default`.
    fn pick(&mut self, width: u32, cases: &[(NodeId, NodeId)], default: NodeId) -> NodeId {
        let sels: Vec<NodeId> = cases.iter().map(|c| c.0).collect();
        let any = self.s.any(&sels);
        let none = self.not1(any);
        let mut all = cases.to_vec();
        all.push((none, default));
        self.s.one_hot(width, &all)
    }
    /// `x == value` for each value below `n` (a one-hot decode of a small field).
    fn one_hot(&mut self, x: NodeId, n: u64) -> Vec<NodeId> {
        (0..n).map(|v| self.s.eq_const(x, v)).collect()
    }
    /// `x == value AND NOT veto`, as one equality over `x` and `veto`.
    fn eq_unless(&mut self, x: NodeId, value: u64, veto: NodeId) -> NodeId {
        let w = self.s.width(x);
        let c = self.s.concat(&[x, veto]);
        self.s.eq_const(c, value & ((1u64 << w) - 1))
    }
    fn bit(&mut self, x: NodeId, i: u32) -> NodeId {
        self.s.bit(x, i)
    }
    /// `hi:lo` as a 16-bit word.
    fn word(&mut self, lo: NodeId, hi: NodeId) -> NodeId {
        self.s.concat(&[lo, hi])
    }
    fn zero8(&mut self) -> NodeId {
        self.k(8, 0)
    }
}

/// The four banks' words read at the rows that hold `n` (1..=4) bytes at `base, base+1, ...`, and the one-hot
/// of `base % 4`. With `page_wrap` the increments stay within `base`'s page (zero-page pointers, `JMP ($xxFF)`,
/// the stack), else they wrap at 64 KiB. Byte `i` is word `(j + i) % 4` when `base % 4 == j`.
fn read_banks(g: &mut Gates, base: NodeId, n: usize, page_wrap: bool) -> ([NodeId; 4], Vec<NodeId>) {
    let rb = g.row_bits;
    let lo2 = g.s.slice(base, 0, 2);
    let row = g.s.slice(base, 2, rb);
    let lo_is = g.one_hot(lo2, 4);
    let row_next = next_row(g, row, n, page_wrap);
    let words = [0u64, 1, 2, 3].map(|k| {
        // Bank k holds byte i = (k - lo2) mod 4 of the run; it lies in the next row when k < lo2.
        let r = if n == 1 || k == 3 {
            row
        } else {
            let kk = g.k(2, k);
            let next = g.s.cmp(CmpKind::Ltu, kk, lo2);
            let stay = g.not1(next);
            g.s.one_hot(rb, &[(next, row_next), (stay, row)])
        };
        g.s.load(mem::BANKS[k as usize], 8, r)
    });
    (words, lo_is)
}

/// [`read_run`] at one of several candidate bases (`cases`: an exclusive select and a base each, exactly one
/// select on): each candidate's bank rows are computed beside the others and the select picks rows, so the
/// read waits for the selects and the candidates, not for a picked base.
fn read_run_of(g: &mut Gates, cases: &[(NodeId, NodeId)], n: usize, page_wrap: bool) -> Vec<NodeId> {
    let rb = g.row_bits;
    let mut rows: [Vec<(NodeId, NodeId)>; 4] = Default::default();
    let mut lo2s = Vec::new();
    for &(sel, base) in cases {
        let lo2 = g.s.slice(base, 0, 2);
        let row = g.s.slice(base, 2, rb);
        let row_next = if page_wrap {
            let in_page = g.s.slice(row, 0, 6);
            let page = g.s.slice(row, 6, rb - 6);
            let inc = g.add_k(in_page, 1);
            g.s.concat(&[inc, page])
        } else {
            g.add_k(row, 1)
        };
        for (k, bank_rows) in rows.iter_mut().enumerate() {
            let r = if k == 3 {
                row
            } else {
                let kk = g.k(2, k as u64);
                let next = g.s.cmp(CmpKind::Ltu, kk, lo2);
                let stay = g.not1(next);
                g.s.one_hot(rb, &[(next, row_next), (stay, row)])
            };
            bank_rows.push((sel, r));
        }
        lo2s.push((sel, lo2));
    }
    let words: Vec<NodeId> = (0..4).map(|k| {
        let r = g.s.one_hot(rb, &rows[k]);
        g.s.load(mem::BANKS[k], 8, r)
    }).collect();
    let lo2 = g.s.one_hot(2, &lo2s);
    let lo_is = g.one_hot(lo2, 4);
    (0..n)
        .map(|i| {
            let cases: Vec<(NodeId, NodeId)> = (0..4).map(|j| (lo_is[j], words[(j + i) % 4])).collect();
            g.s.one_hot(8, &cases)
        })
        .collect()
}

/// [`read_banks`], rotated into the `n` bytes of the run.
fn read_run(g: &mut Gates, base: NodeId, n: usize, page_wrap: bool) -> Vec<NodeId> {
    let (words, lo_is) = read_banks(g, base, n, page_wrap);
    (0..n)
        .map(|i| {
            let cases: Vec<(NodeId, NodeId)> = (0..4).map(|j| (lo_is[j], words[(j + i) % 4])).collect();
            g.s.one_hot(8, &cases)
        })
        .collect()
}

/// Writes `bytes[i]` at `base - i` (descending, within `base`'s page: stack pushes) for `i < count`, or one
/// byte at `base`: one write per bank. `count` is a 2-bit node (0..=3), `enable` gates all of it and `veto`
/// (late: a store diverted to a port, an IO register or ROM) cancels it, in the same gate.
fn write_run(g: &mut Gates, base: NodeId, bytes: [NodeId; 3], count: NodeId, enable: NodeId, veto: NodeId) {
    let rb = g.row_bits;
    let lo2 = g.s.slice(base, 0, 2);
    let row = g.s.slice(base, 2, rb);
    let in_page = g.s.slice(row, 0, 6);
    let page = g.s.slice(row, 6, rb - 6);
    let dec = g.add_k(in_page, 63);
    let row_prev = g.s.concat(&[dec, page]);
    let lo_is = g.one_hot(lo2, 4);
    let zero = g.zero8();
    for k in 0..4usize {
        // Bank k holds byte i = (lo2 - k) mod 4, one row down when k > lo2.
        let data_cases: Vec<(NodeId, NodeId)> = (0..4).map(|j| (lo_is[j], bytes.get((j + 4 - k) % 4).copied().unwrap_or(zero))).collect();
        let data = g.s.one_hot(8, &data_cases);
        let idx_cases: Vec<(NodeId, NodeId)> = (0..4)
            .map(|j| {
                let c = g.k(2, ((j + 4 - k) % 4) as u64);
                (lo_is[j], c)
            })
            .collect();
        let idx = g.s.one_hot(2, &idx_cases);
        let within = g.s.cmp(CmpKind::Ltu, idx, count);
        let c = g.s.concat(&[within, enable, veto]);
        let en = g.s.eq_const(c, 0b011);
        let r = if k == 0 {
            row
        } else {
            let kk = g.k(2, k as u64);
            let below = g.s.cmp(CmpKind::Ltu, lo2, kk);
            let same = g.not1(below);
            g.s.one_hot(rb, &[(below, row_prev), (same, row)])
        };
        g.s.mem_write(mem::BANKS[k], r, data, en);
    }
}

/// NES map: the compact bank address (16 bits) of CPU address `addr` ([`nes_bank_address`]; 0 for IO and ROM).
fn nes_compact(g: &mut Gates, addr: NodeId) -> NodeId {
    let hi3 = g.s.slice(addr, 13, 3);
    let in_ram = g.s.eq_const(hi3, 0);
    let in_prg_ram = g.s.eq_const(hi3, 3);
    let (ram_c, prg_ram_c) = nes_compact_parts(g, addr);
    g.s.one_hot(16, &[(in_ram, ram_c), (in_prg_ram, prg_ram_c)])
}

/// NES map: `addr`'s compact bank address were it in RAM (0x2000 + `addr % 0x800`) and were it in PRG RAM
/// (`addr % 0x2000`), 16 bits each.
fn nes_compact_parts(g: &mut Gates, addr: NodeId) -> (NodeId, NodeId) {
    let low11 = g.s.slice(addr, 0, 11);
    let at_ram = g.k(5, 0x2000 >> 11);
    let ram_c = g.s.concat(&[low11, at_ram]);
    let low13 = g.s.slice(addr, 0, 13);
    let z3 = g.k(3, 0);
    let prg_ram_c = g.s.concat(&[low13, z3]);
    (ram_c, prg_ram_c)
}

/// The row after `row` (a bank row of `g.row_bits` bits) for a run of `n` bytes: `row` itself for one byte; within
/// its page (64 rows) with `page_wrap`; else modulo the banks' size.
fn next_row(g: &mut Gates, row: NodeId, n: usize, page_wrap: bool) -> NodeId {
    let rb = g.row_bits;
    if n == 1 {
        row
    } else if page_wrap {
        let in_page = g.s.slice(row, 0, 6);
        let page = g.s.slice(row, 6, rb - 6);
        let inc = g.add_k(in_page, 1);
        g.s.concat(&[inc, page])
    } else {
        g.add_k(row, 1)
    }
}

/// NES map: the memories a read of `n` bytes at one of several bases reads, and its bytes.
struct NesRead {
    /// The four banks' words (one byte each) at the rows of the selected base's RAM bytes.
    banks: [NodeId; 4],
    /// The PRG ROM's even and odd words at the rows of the selected base's ROM bytes.
    prg: [NodeId; 2],
    /// Byte `i` at `base + i` (`0` where the selected base is an IO register, or no base is selected).
    bytes: Vec<NodeId>,
    /// The selects of [`nes_byte_cases`].
    ram_is: Vec<NodeId>,
    rom_is: Vec<NodeId>,
}

/// NES map: `n` (1..=3) bytes at one of several candidate bases (`cases`: an exclusive select and a 16-bit
/// CPU address each, at most one select on), from the RAM banks at the base's compact address
/// ([`nes_bank_address`]) or from the PRG ROM, by the base's region; with `page_wrap` the bytes stay within the
/// base's page. Every candidate's rows are computed beside the others and the selects pick rows, as in
/// [`read_run_of`]; one select per byte then takes the RAM bank or the ROM word lane that holds it.
///
/// The PRG ROM's word `w` (bytes `$8000 + 4w ..`) is in `PRG_EVEN` (`w` even) or `PRG_ODD` at row `w / 2`: the
/// bytes at `base ..= base + 2` are in `base`'s word and the next, one of each parity. Byte `i` lies at
/// position `p = base % 8 + i` of the eight bytes from `base & !7`: `PRG_EVEN`'s lanes for `p < 4`, `PRG_ODD`'s
/// for `4 <= p < 8`, and the next row of `PRG_EVEN` for `p >= 8`.
fn nes_read_run_of(g: &mut Gates, cases: &[(NodeId, NodeId)], n: usize, page_wrap: bool) -> NesRead {
    let rb = g.row_bits;
    // A 1-bit lookup over `key`'s bits (its table from a predicate on the key's value).
    let lookup = |g: &mut Gates, key: NodeId, f: &dyn Fn(u64) -> bool| {
        let w = g.s.width(key);
        let table: Vec<u64> = (0..1u64 << w).map(|v| u64::from(f(v))).collect();
        g.s.lookup(1, table, key)
    };
    let mut bank_rows: [Vec<(NodeId, NodeId)>; 4] = Default::default();
    let (mut even_rows, mut odd_rows) = (Vec::new(), Vec::new());
    for &(sel, base) in cases {
        // Every row select is one lookup over the candidate's select and its address bits: (select, base % 4,
        // top three bits) for the banks (RAM at top 0, PRG RAM at top 3), (select, bit 15) for the ROM.
        let lo2 = g.s.slice(base, 0, 2);
        let hi3 = g.s.slice(base, 13, 3);
        let key = g.s.concat(&[sel, lo2, hi3]);
        let (ram_c, prg_ram_c) = nes_compact_parts(g, base);
        for (top, compact) in [(0u64, ram_c), (3, prg_ram_c)] {
            let row = g.s.slice(compact, 2, rb);
            let row_next = next_row(g, row, n, page_wrap);
            for (k, rows) in bank_rows.iter_mut().enumerate() {
                let k = k as u64;
                let here = move |v: u64| v & 1 == 1 && v >> 3 == top;
                if n == 1 || k == 3 {
                    let s = lookup(g, key, &here);
                    rows.push((s, row));
                } else {
                    // Bank k holds byte (k - base % 4) mod 4 of the run, in the next row when k < base % 4.
                    let next = lookup(g, key, &move |v| here(v) && k < (v >> 1) & 3);
                    let stay = lookup(g, key, &move |v| here(v) && k >= (v >> 1) & 3);
                    rows.push((next, row_next));
                    rows.push((stay, row));
                }
            }
        }
        // ROM: the odd row is `base`'s; the even row is the next one when `base`'s word is odd.
        let rom = {
            let b15 = g.bit(base, 15);
            let c = g.s.concat(&[sel, b15]);
            g.s.eq_const(c, 0b11)
        };
        let (even_row, odd_row) = prg_rows(g, base, n, page_wrap);
        even_rows.push((rom, even_row));
        odd_rows.push((rom, odd_row));
    }
    let banks = [0usize, 1, 2, 3].map(|k| {
        let r = g.s.one_hot(rb, &bank_rows[k]);
        g.s.load(mem::BANKS[k], 8, r)
    });
    // One candidate: its rows as they are (the byte selects already ignore them outside the ROM).
    let prb = g.prg.row_bits();
    let pick = |g: &mut Gates, rows: &[(NodeId, NodeId)]| if let [(_, r)] = rows { *r } else { g.s.one_hot(prb, rows) };
    let er = pick(g, &even_rows);
    let or = pick(g, &odd_rows);
    let prg = [g.s.load(mem::PRG_EVEN, 32, er), g.s.load(mem::PRG_ODD, 32, or)];
    // The byte selects, from (select, base % 8, top three bits) of the selected candidate: one lookup over the
    // raw bits for one candidate; for several, over the picked base's bits (every candidate list here has one
    // select on). RAM: bank `j` holds byte 0 when `base % 4 == j`; ROM: position `k = base % 8`.
    // MMC3: a fetch whose next word is in the next 8 KiB window (`addr[12:2]` all ones) takes that word, the next
    // window's bank's first, from PRG_FIRST; bit 7 of the select key says so.
    let mut first = None;
    let key = match cases {
        [(sel, base)] => {
            let lo3 = g.s.slice(*base, 0, 3);
            let hi3 = g.s.slice(*base, 13, 3);
            let windowed = matches!(g.prg.banking, PrgBanking::Mmc3 | PrgBanking::Mmc1);
            if windowed && n > 1 && !page_wrap && !g.prg_regs.is_empty() {
                let (cross, row) = if g.prg.banking == PrgBanking::Mmc3 {
                    let w = g.s.slice(*base, 2, 11);
                    (g.s.eq_const(w, 0x7FF), mmc3_bank(g, *base, 1))
                } else {
                    // From $BFFC-$BFFF into the $C000 window (from $FFFF the address space wraps to RAM).
                    let w = g.s.slice(*base, 2, 13);
                    (g.s.eq_const(w, 0xFFF), mmc1_bank(g, *base, true))
                };
                first = Some(g.s.load(mem::PRG_FIRST, 32, row));
                g.s.concat(&[*sel, lo3, hi3, cross])
            } else {
                g.s.concat(&[*sel, lo3, hi3])
            }
        }
        _ => {
            let lo3s: Vec<(NodeId, NodeId)> = cases.iter().map(|&(sel, base)| (sel, g.s.slice(base, 0, 3))).collect();
            let hi3s: Vec<(NodeId, NodeId)> = cases.iter().map(|&(sel, base)| (sel, g.s.slice(base, 13, 3))).collect();
            let lo3 = g.s.one_hot(3, &lo3s);
            let hi3 = g.s.one_hot(3, &hi3s);
            let one = g.one;
            g.s.concat(&[one, lo3, hi3])
        }
    };
    let is_ram = |hi: u64| hi == 0 || hi == 3;
    let ram_is = (0..4u64).map(|j| lookup(g, key, &move |v| v & 1 == 1 && (v >> 1) & 3 == j && is_ram((v >> 4) & 7))).collect::<Vec<_>>();
    let rom_is = (0..8u64).map(|k| lookup(g, key, &move |v| v & 1 == 1 && (v >> 1) & 7 == k && v >> 6 & 3 == 1)).collect::<Vec<_>>();
    // With PRG_FIRST: the same positions when the next word crosses into the next window.
    let rom_x = match first {
        Some(_) => (0..8u64).map(|k| lookup(g, key, &move |v| v & 1 == 1 && (v >> 1) & 7 == k && v >> 6 == 3)).collect::<Vec<_>>(),
        None => Vec::new(),
    };
    let bytes = (0..n)
        .map(|i| {
            let mut cases = nes_byte_cases(g, &banks, prg, &ram_is, &rom_is, i);
            if let Some(f) = first {
                // Positions 8.. are the next window's first word; the others as without crossing.
                cases.extend(nes_byte_cases(g, &banks, [f, prg[1]], &[], &rom_x, i).into_iter().enumerate().map(|(k, c)| {
                    if k + i >= 8 { c } else { (c.0, nes_lane(g, prg, k + i)) }
                }));
            }
            g.s.one_hot(8, &cases)
        })
        .collect();
    NesRead { banks, prg, bytes, ram_is, rom_is }
}

/// NES map: byte `p` (0..12) of the PRG ROM's even word then odd word then even word (see [`nes_read_run_of`]).
fn nes_lane(g: &mut Gates, prg: [NodeId; 2], p: usize) -> NodeId {
    let (word, lane) = match p {
        0..=3 => (prg[0], p),
        4..=7 => (prg[1], p - 4),
        _ => (prg[0], p - 8),
    };
    g.s.slice(word, 8 * lane as u32, 8)
}

/// NES map: the rows of `PRG_EVEN` and `PRG_ODD` that hold the bytes at `base .. base + n` ($8000-$FFFF; see
/// [`nes_read_run_of`]), through the board's banks. The odd row is `base`'s word's; the even row is the next
/// one when `base`'s word is odd (within `base`'s page with `page_wrap`).
///
/// With UxROM banking the row is the 16 KiB bank's number above `addr[13:3]`: `PRG_BANK` at $8000-$BFFF, the last
/// bank (every bit 1) at $C000-$FFFF, so each bank bit is `PRG_BANK`'s bit OR `addr[14]`. A fetch at
/// $BFFC-$BFFF whose next word is at $C000 takes the even word's bank bits from the last bank too (OR the one
/// equality saying so), and its row bits wrap to 0: both computed beside the odd row's, no deeper.
fn prg_rows(g: &mut Gates, base: NodeId, n: usize, page_wrap: bool) -> (NodeId, NodeId) {
    let t = |node: NodeId| SumTerm { node, shift: 0, neg: false };
    let b2 = g.bit(base, 2);
    // The row's bits within a bank (all of them without banking).
    let low_bits = match g.prg.banking {
        PrgBanking::Fixed => g.prg.row_bits(),
        PrgBanking::Uxrom | PrgBanking::Mmc1 => 11,
        PrgBanking::Mmc3 => 10,
    };
    let odd_low = g.s.slice(base, 3, low_bits);
    let even_low = if n == 1 {
        odd_low
    } else if page_wrap {
        let in_page = g.s.slice(base, 3, 5);
        let page = g.s.slice(base, 8, low_bits - 5);
        let inc = g.s.sum(5, &[t(in_page), t(b2)], 0);
        g.s.concat(&[inc, page])
    } else {
        g.s.sum(low_bits, &[t(odd_low), t(b2)], 0)
    };
    match (g.prg.banking, g.prg_regs.first().copied()) {
        (PrgBanking::Mmc1, Some(_)) => {
            let bank = mmc1_bank(g, base, false);
            (g.s.concat(&[even_low, bank]), g.s.concat(&[odd_low, bank]))
        }
        (PrgBanking::Mmc3, Some(_)) => {
            // The word after a window's last word is in the next window, at another bank: such a fetch takes
            // it from PRG_FIRST (see `nes_read_run_of`); here both rows are in `base`'s window.
            let bank = mmc3_bank(g, base, 0);
            (g.s.concat(&[even_low, bank]), g.s.concat(&[odd_low, bank]))
        }
        (PrgBanking::Uxrom, Some(bank)) => {
            let a14 = g.bit(base, 14);
            // The fetch's next word crosses from $BFFF into the fixed bank.
            let cross = if n == 1 || page_wrap {
                None
            } else {
                let w = g.s.slice(base, 2, 12);
                Some(g.s.eq_const(w, 0xFFF))
            };
            let (mut odd_bits, mut even_bits) = (Vec::new(), Vec::new());
            for j in 0..g.prg.bank16_bits() {
                let bj = g.bit(bank, j);
                odd_bits.push(g.or1(bj, a14));
                even_bits.push(match cross {
                    Some(c) => g.s.any(&[bj, a14, c]),
                    None => g.or1(bj, a14),
                });
            }
            let mut odd = vec![odd_low];
            odd.extend(odd_bits);
            let mut even = vec![even_low];
            even.extend(even_bits);
            (g.s.concat(&even), g.s.concat(&odd))
        }
        _ => (even_low, odd_low),
    }
}

/// NES map: the board's PRG bank registers (UxROM: `PRG_BANK`; MMC3: `MMC3_SELECT`, `R6`, `R7`; MMC1: `MMC1_SHIFT`,
/// `MMC1_COUNT`, `MMC1_MODE`, `MMC1_PRG` and on 512 KiB boards `MMC1_OUTER`), in [`reg`]'s order.
fn prg_bank_registers(s: &mut CircuitBuilder, prg: PrgRom) -> Vec<NodeId> {
    match prg.banking {
        PrgBanking::Fixed => Vec::new(),
        PrgBanking::Uxrom => vec![s.reg(reg::PRG_BANK, prg.bank16_bits())],
        PrgBanking::Mmc3 => {
            let bb = prg.bank8_bits();
            vec![s.reg(reg::MMC3_SELECT, 4), s.reg(reg::MMC3_R6, bb), s.reg(reg::MMC3_R7, bb)]
        }
        PrgBanking::Mmc1 => {
            let mut regs = vec![s.reg(reg::MMC1_SHIFT, 4), s.reg(reg::MMC1_COUNT, 3), s.reg(reg::MMC1_MODE, 2), s.reg(reg::MMC1_PRG, prg.mmc1_prg_bits())];
            if prg.mmc1_outer() {
                regs.push(s.reg(reg::MMC1_OUTER, 1));
            }
            regs
        }
    }
}

/// NES map: a store to $8000-$FFFF, as the PRG banking registers see it.
#[derive(Clone, Copy)]
struct RomStore {
    /// The step stores to $8000-$FFFF (1 bit).
    rom_store: NodeId,
    /// The effective address (16 bits).
    ea: NodeId,
    /// The value of the store, or of a read-modify-write's last write (8 bits).
    data: NodeId,
    /// The instruction is a plain store (1 bit): else a read-modify-write, whose first write is `operand`.
    f_store: NodeId,
    /// The plain store's value (8 bits).
    store_val: NodeId,
    /// The byte read at `ea`: a read-modify-write's first, unmodified write (8 bits).
    operand: NodeId,
}

/// NES map: the next values of the board's PRG bank registers `regs` ([`prg_bank_registers`]) after `w`.
fn prg_banking_next(s: &mut CircuitBuilder, banking: PrgBanking, regs: &[NodeId], w: RomStore) {
    let RomStore { rom_store, ea, data, f_store, store_val, operand } = w;
    match (banking, regs) {
        (PrgBanking::Uxrom, &[bank]) => {
            // UxROM: any such store selects the bank.
            let value = s.slice(data, 0, s.width(bank));
            let next = s.select(rom_store, value, bank);
            s.set_next(reg::PRG_BANK, next);
        }
        (PrgBanking::Mmc3, &[select, r6, r7]) => {
            // MMC3: $8000-$9FFF even sets the select, odd the selected register (only R6 and R7 are PRG's).
            let (a0, a13, a14) = (s.bit(ea, 0), s.bit(ea, 13), s.bit(ea, 14));
            let c = s.concat(&[rom_store, a0, a13, a14]);
            let to_select = s.eq_const(c, 0b0001);
            let d_lo = s.slice(data, 0, 3);
            let d_mode = s.bit(data, 6);
            let sel_value = s.concat(&[d_lo, d_mode]);
            let sel_next = s.select(to_select, sel_value, select);
            s.set_next(reg::MMC3_SELECT, sel_next);
            let index = s.slice(select, 0, 3);
            for (r, node, k) in [(reg::MMC3_R6, r6, 6u64), (reg::MMC3_R7, r7, 7)] {
                let c = s.concat(&[rom_store, a0, a13, a14, index]);
                let write = s.eq_const(c, 0b0011 | (k << 4));
                let value = s.slice(data, 0, s.width(node));
                let next = s.select(write, value, node);
                s.set_next(r, next);
            }
        }
        (PrgBanking::Mmc1, &[shift, count, mode, prg, ref outer @ ..]) => {
            // MMC1: a read-modify-write's first write, the unmodified byte, is the one that counts. Every
            // next value is one lookup (or one select) over the store, bits 7 and 0 of its byte, the count and
            // the address's window, so the serial port adds no depth after the store's decision.
            let data = s.select(f_store, store_val, operand);
            let (b7, b0) = (s.bit(data, 7), s.bit(data, 0));
            let (a13, a14) = (s.bit(ea, 13), s.bit(ea, 14));
            // key bits: store, b7, count (3), b0, then per use.
            let key = s.concat(&[rom_store, b7, count, b0]);
            let field = |v: u64| (v & 1 == 1, (v >> 1) & 1 == 1, (v >> 2) & 7, (v >> 5) & 1);
            let mut bits = Vec::new();
            for i in 0..4u64 {
                let old = s.bit(shift, i as u32);
                let k = s.concat(&[key, old]);
                let table: Vec<u64> = (0..128u64)
                    .map(|v| {
                        let (st, b7, cnt, b0) = field(v);
                        let old = v >> 6;
                        match (st, b7, cnt) {
                            (false, _, _) => old,
                            (true, true, _) | (true, false, 4) => 0,
                            (true, false, c) if c == i => b0,
                            _ => old,
                        }
                    })
                    .collect();
                bits.push(s.lookup(1, table, k));
            }
            let shift_next = s.concat(&bits);
            s.set_next(reg::MMC1_SHIFT, shift_next);
            let count_table: Vec<u64> = (0..64u64)
                .map(|v| {
                    let (st, b7, cnt, _) = field(v);
                    match (st, b7, cnt) {
                        (false, _, c) => c,
                        (true, true, _) | (true, false, 4) => 0,
                        (true, false, c) => (c + 1) & 7,
                    }
                })
                .collect();
            let count_next = s.lookup(3, count_table, key);
            s.set_next(reg::MMC1_COUNT, count_next);
            // The fifth bit writes control ($8000-$9FFF) or the PRG bank ($E000-$FFFF); bit 7 sets mode 3.
            let wkey = s.concat(&[key, a13, a14]);
            let sel = |s: &mut CircuitBuilder, f: &dyn Fn(bool, bool, u64, u64) -> bool| {
                let table: Vec<u64> = (0..256u64).map(|v| {
                    let (st, b7, cnt, _) = field(v);
                    u64::from(f(st, b7, cnt, v >> 6))
                }).collect();
                s.lookup(1, table, wkey)
            };
            let reset = sel(s, &|st, b7, _, _| st && b7);
            let to_control = sel(s, &|st, b7, cnt, w| st && !b7 && cnt == 4 && w == 0);
            let keep_mode = sel(s, &|st, b7, cnt, w| !(st && (b7 || (cnt == 4 && w == 0))));
            if let [outer] = outer {
                // SUROM: the fifth bit of a write to CHR bank 0 ($A000-$BFFF) is the 256 KiB half.
                let to_chr0 = sel(s, &|st, b7, cnt, w| st && !b7 && cnt == 4 && w == 1);
                let outer_next = s.select(to_chr0, b0, *outer);
                s.set_next(reg::MMC1_OUTER, outer_next);
            }
            let to_prg = sel(s, &|st, b7, cnt, w| st && !b7 && cnt == 4 && w == 3);
            let keep_prg = sel(s, &|st, b7, cnt, w| !(st && !b7 && cnt == 4 && w == 3));
            let three = s.konst(2, 3);
            let written_mode = s.slice(shift, 2, 2);
            let mode_next = s.one_hot(2, &[(reset, three), (to_control, written_mode), (keep_mode, mode)]);
            s.set_next(reg::MMC1_MODE, mode_next);
            let written_prg = s.slice(shift, 0, s.width(prg));
            let prg_next = s.one_hot(s.width(prg), &[(to_prg, written_prg), (keep_prg, prg)]);
            s.set_next(reg::MMC1_PRG, prg_next);
        }
        _ => {}
    }
}

/// NES map: the step's bus signals that the IO ports carry.
#[derive(Clone, Copy)]
struct NesBus {
    /// `ea` is in $8000-$FFFF (1 bit).
    rom: NodeId,
    /// The byte read at `ea` (a read-modify-write's first, unmodified write).
    operand: NodeId,
    /// The instruction is a plain store (1 bit); its value `store_val`, else the read-modify-write's `rmw_val`.
    f_store: NodeId,
    store_val: NodeId,
    rmw_val: NodeId,
    /// The effective address (16 bits).
    ea: NodeId,
    /// The step writes an IO register or the mapper (1 bit).
    io_write: NodeId,
    /// The IO read's request (address and the cycle within the instruction, 20 bits), sent when `stall` is set.
    io_read_word: NodeId,
    stall: NodeId,
    /// The step copies four OAM DMA bytes (1 bit).
    dma_step: NodeId,
}

/// NES map: the ports `IO_WRITE`, `IO_READ` and `OAM_DMA` (appended to `ports`) and the IO ranges that name
/// them. `read` is the data read (its PRG ROM words feed the DMA), `dwords` the four banks' bytes at the
/// DMA's row.
fn nes_ports(s: &mut CircuitBuilder, ports: &mut Vec<PortDesc>, banking: PrgBanking, read: &NesRead, dwords: &[NodeId], w: NesBus) -> Vec<isa_api::IoRange> {
    let NesBus { rom, operand, f_store, store_val, rmw_val, ea, io_write, io_read_word, stall, dma_step } = w;
    let mut io_ranges = Vec::new();
    // MMC1 takes a read-modify-write's first (unmodified) write to $8000-$FFFF and ignores the second: the
    // host's board gets that one.
    let data = if banking == PrgBanking::Mmc1 {
        let rmw_data = s.select(rom, operand, rmw_val);
        s.select(f_store, store_val, rmw_data)
    } else {
        s.select(f_store, store_val, rmw_val)
    };
    let word = s.concat(&[ea, data]);
    let (write_port, read_port) = (ports.len() as u32, ports.len() as u32 + 1);
    s.output(write_port, word, io_write);
    ports.push(PortDesc::new("IO_WRITE", 24));
    s.output(read_port, io_read_word, stall);
    ports.push(PortDesc::new("IO_READ", 20));
    // Four bytes of the page: the banks' (RAM, PRG RAM), or one PRG ROM word; 0 on the IO pages.
    let oam = {
        let lo3 = s.slice(ea, 0, 3);
        let hi3 = s.slice(ea, 13, 3);
        let key = s.concat(&[lo3, hi3]);
        let table = |f: &dyn Fn(u64, u64) -> bool| (0..64u64).map(|v| u64::from(f(v & 7, v >> 3))).collect::<Vec<u64>>();
        let ram = s.lookup(1, table(&|_, hi| hi == 0 || hi == 3), key);
        let even = s.lookup(1, table(&|lo, hi| hi >= 4 && lo < 4), key);
        let odd = s.lookup(1, table(&|lo, hi| hi >= 4 && lo >= 4), key);
        let banks = s.concat(dwords);
        s.one_hot(32, &[(ram, banks), (even, read.prg[0]), (odd, read.prg[1])])
    };
    s.output(read_port + 1, oam, dma_step);
    ports.push(PortDesc::new("OAM_DMA", 32));
    for (name, base, size) in [("PPU", 0x2000, 0x2000), ("APU_IO", 0x4000, 0x2000)] {
        io_ranges.push(isa_api::IoRange {
            name: name.into(),
            base,
            size,
            write_port: Some(write_port),
            read_request_port: Some(read_port),
            read_port: Some(input::IO_DATA),
        });
    }
    // The PRG ROM reads from memory; its stores go to the cartridge's mapper on the same port.
    io_ranges.push(isa_api::IoRange { name: "MAPPER".into(), base: 0x8000, size: 0x8000, write_port: Some(write_port), read_request_port: None, read_port: None });
    io_ranges
}

/// NES map, MMC1: the 16 KiB bank of `base`'s window (or with `next`, of the $C000 window), one select per bit
/// over (`addr[14]`, the PRG mode): mode 0-1 `bank & !1` and `bank | 1`; mode 2 the first bank and `bank`; mode 3
/// `bank` and the last. A 512 KiB board's top bit is `MMC1_OUTER` in every mode.
fn mmc1_bank(g: &mut Gates, base: NodeId, next: bool) -> NodeId {
    let (mode, bank) = (g.prg_regs[2], g.prg_regs[3]);
    let bb = g.prg.mmc1_prg_bits();
    let a14 = if next { g.one } else { g.bit(base, 14) };
    let key = g.s.concat(&[a14, mode]);
    let sels: Vec<NodeId> = (0..8u64).map(|v| g.s.eq_const(key, v)).collect();
    let mut bits = Vec::new();
    for j in 0..bb {
        let bj = g.bit(bank, j);
        let mut cases = Vec::new();
        for v in 0..8u64 {
            let (hi, mode) = (v & 1, v >> 1);
            // None: 0; Some(None): 1; Some(Some(b)): bank bit j.
            let src: Option<Option<NodeId>> = match (mode, hi, j) {
                (0 | 1, 0, 0) => None,
                (0 | 1, 1, 0) => Some(None),
                (0 | 1, _, _) | (2, 1, _) | (3, 0, _) => Some(Some(bj)),
                (2, 0, _) => None,
                _ => Some(None),
            };
            match src {
                Some(Some(b)) => cases.push((sels[v as usize], b)),
                Some(None) => cases.push((sels[v as usize], g.one)),
                None => {}
            }
        }
        bits.push(g.s.one_hot(1, &cases));
    }
    if let Some(&outer) = g.prg_regs.get(4) {
        bits.push(outer);
    }
    g.s.concat(&bits)
}

/// NES map, MMC3: the 8 KiB bank of the window `ahead` windows after `base`'s (modulo 4), one select per bit
/// over (`addr[13]`, `addr[14]`, the PRG mode): $8000 `R6` or the second-last bank, $A000 `R7`, $C000 the second-last
/// bank or `R6`, $E000 the last.
fn mmc3_bank(g: &mut Gates, base: NodeId, ahead: u64) -> NodeId {
    let (select, r6, r7) = (g.prg_regs[0], g.prg_regs[1], g.prg_regs[2]);
    let bb = g.prg.bank8_bits();
    let banks = 1u64 << bb;
    let (second_last, last) = (banks - 2, banks - 1);
    let a13 = g.bit(base, 13);
    let a14 = g.bit(base, 14);
    let mode = g.bit(select, 3);
    let key = g.s.concat(&[a13, a14, mode]);
    let sels: Vec<NodeId> = (0..8u64).map(|v| g.s.eq_const(key, v)).collect();
    let mut bits = Vec::new();
    for j in 0..bb {
        let mut cases = Vec::new();
        for v in 0..8u64 {
            let (w, mode) = (((v & 3) + ahead) % 4, v >> 2);
            let constant = |c: u64| if (c >> j) & 1 == 1 { Some(None) } else { None };
            let src: Option<Option<NodeId>> = match (w, mode) {
                (0, 0) | (2, 1) => Some(Some(r6)),
                (1, _) => Some(Some(r7)),
                (0, _) | (2, _) => constant(second_last),
                _ => constant(last),
            };
            match src {
                Some(Some(reg)) => {
                    let b = g.bit(reg, j);
                    cases.push((sels[v as usize], b));
                }
                Some(None) => cases.push((sels[v as usize], g.one)),
                None => {}
            }
        }
        bits.push(g.s.one_hot(1, &cases));
    }
    g.s.concat(&bits)
}

/// NES map: the cases of byte `i` of a run: the bank words (`ram_is[j]`: the run starts in bank `j`) and the
/// PRG ROM's even and odd words' lanes (`rom_is[k]`: the run starts at position `k` of its eight bytes; see
/// [`nes_read_run_of`]), at most one select on.
fn nes_byte_cases(g: &mut Gates, banks: &[NodeId; 4], prg: [NodeId; 2], ram_is: &[NodeId], rom_is: &[NodeId], i: usize) -> Vec<(NodeId, NodeId)> {
    let mut cases: Vec<(NodeId, NodeId)> = ram_is.iter().enumerate().map(|(j, &sel)| (sel, banks[(j + i) % 4])).collect();
    for (k, &sel) in rom_is.iter().enumerate() {
        let byte = nes_lane(g, prg, k + i);
        cases.push((sel, byte));
    }
    cases
}

/// The registers of the machine built with `opts`, in [`reg`]'s order.
fn register_descs(opts: &Mos6502Options) -> Vec<RegisterDesc> {
    let r = |name: &str, width: u32| RegisterDesc { name: name.into(), width };
    let mut registers = vec![
        r("PC", 16),
        r("A", 8),
        r("X", 8),
        r("Y", 8),
        r("S", 8),
        r("P", 8),
        r("CYC", 32),
        r("BUSY", 8),
        r("RUN", 1),
        r("NMI_PEND", 1),
        r("POLL_I", 2),
        r("POLL", 3),
    ];
    if opts.nes {
        registers.extend([r("DMA_PAGE", 8), r("DMA_ROW", 6), r("DMA_LONG", 1)]);
        match opts.prg.banking {
            PrgBanking::Fixed => {}
            PrgBanking::Uxrom => registers.push(r("PRG_BANK", opts.prg.bank16_bits())),
            PrgBanking::Mmc3 => {
                let bb = opts.prg.bank8_bits();
                registers.extend([r("MMC3_SELECT", 4), r("MMC3_R6", bb), r("MMC3_R7", bb)]);
            }
            PrgBanking::Mmc1 => {
                registers.extend([r("MMC1_SHIFT", 4), r("MMC1_COUNT", 3), r("MMC1_MODE", 2), r("MMC1_PRG", opts.prg.mmc1_prg_bits())]);
                if opts.prg.mmc1_outer() {
                    registers.push(r("MMC1_OUTER", 1));
                }
            }
        }
    }
    registers
}

/// The memories of the machine built with `opts` (rows of `row_bits` in the byte banks), in [`mem`]'s order.
fn memory_descs(opts: &Mos6502Options, row_bits: u32) -> Vec<MemoryDesc> {
    let mut memories: Vec<MemoryDesc> =
        (0..4).map(|k| MemoryDesc { name: format!("M{k}"), word_width: 8, addr_width: row_bits }).collect();
    memories.push(MemoryDesc { name: "INIT".into(), word_width: 8, addr_width: 4 });
    if opts.nes {
        for name in ["PRG_EVEN", "PRG_ODD"] {
            memories.push(MemoryDesc { name: name.into(), word_width: 32, addr_width: opts.prg.row_bits() });
        }
        if matches!(opts.prg.banking, PrgBanking::Mmc3 | PrgBanking::Mmc1) {
            memories.push(MemoryDesc { name: "PRG_FIRST".into(), word_width: 32, addr_width: opts.prg.window_bank_bits() });
        }
    }
    memories
}

/// The 2A03's registers and input lines as the circuit reads them (see the module's table), with P's flags.
#[derive(Clone, Copy)]
struct CpuState6502 {
    pc: NodeId,
    a: NodeId,
    x: NodeId,
    y: NodeId,
    sp: NodeId,
    p: NodeId,
    cyc: NodeId,
    busy: NodeId,
    run: NodeId,
    nmi_pend: NodeId,
    poll_i: NodeId,
    poll: NodeId,
    nmi_in: NodeId,
    irq_in: NodeId,
    flag_c: NodeId,
    flag_z: NodeId,
    flag_i: NodeId,
    flag_v: NodeId,
    flag_n: NodeId,
}

/// Reads the registers and input lines.
fn cpu_state(g: &mut Gates) -> CpuState6502 {
    let pc = g.s.reg(reg::PC, 16);
    let a = g.s.reg(reg::A, 8);
    let x = g.s.reg(reg::X, 8);
    let y = g.s.reg(reg::Y, 8);
    let sp = g.s.reg(reg::S, 8);
    let p = g.s.reg(reg::P, 8);
    let cyc = g.s.reg(reg::CYC, 32);
    let busy = g.s.reg(reg::BUSY, 8);
    let run = g.s.reg(reg::RUN, 1);
    let nmi_pend = g.s.reg(reg::NMI_PEND, 1);
    let poll_i = g.s.reg(reg::POLL_I, 2);
    let poll = g.s.reg(reg::POLL, 3);
    let nmi_in = g.s.input(input::NMI, 3);
    let irq_in = g.s.input(input::IRQ, 2);
    let flag_c = g.bit(p, 0);
    let flag_z = g.bit(p, 1);
    let flag_i = g.bit(p, 2);
    let flag_v = g.bit(p, 6);
    let flag_n = g.bit(p, 7);
    CpuState6502 { pc, a, x, y, sp, p, cyc, busy, run, nmi_pend, poll_i, poll, nmi_in, irq_in, flag_c, flag_z, flag_i, flag_v, flag_n }
}

/// What the step does: boot, stop, wait for an IO answer or copy DMA bytes (NES map), take an interrupt (its
/// cases, one equality each) or run an instruction.
#[derive(Clone, Copy)]
struct StepKind {
    booting: NodeId,
    stopping: NodeId,
    waiting: NodeId,
    dma: NodeId,
    /// An interrupt sequence (7 cycles, three pushes), NMI or IRQ.
    int_seq: NodeId,
    /// Any interrupt step: a sequence, or a hijack (PC from the NMI vector, nothing else).
    take_int: NodeId,
    /// The step fetches the NMI vector (an NMI sequence or a hijack).
    nmi_vector: NodeId,
    instr: NodeId,
    dma_step: NodeId,
}

fn step_kind(g: &mut Gates, opts: &Mos6502Options, st: &CpuState6502) -> StepKind {
    let CpuState6502 { busy, run, nmi_pend, poll, nmi_in, .. } = *st;
    let zero = g.zero;
    let booting = g.not1(run);
    let stopping = g.s.eq_const(busy, BUSY_STOPPING);
    // NES map: an instruction waiting for an IO answer, or a DMA, finishes before any interrupt.
    let waiting = if opts.nes { g.s.eq_const(busy, BUSY_IO_WAIT) } else { zero };
    let dma = if opts.nes { g.s.eq_const(busy, BUSY_DMA) } else { zero };
    // The interrupt poll at a boundary (running, BUSY 0 or 1: not stopping, waiting or in a DMA), as the
    // interpreter's `Cpu::step`: after an instruction, a pending NMI or a new edge old enough for where it
    // polled (`POLL` 0: age 2, 1: age 3), else the IRQ level there, unmasked (I, or the I before a
    // CLI/SEI/PLP); after BRK or an IRQ sequence (`POLL` 2), an NMI of age 4 or pending hijacks its vector;
    // after an OAM DMA whose store saw an interrupt (`POLL` 4), NMI if any is pending, else IRQ. Each case is one
    // equality over the raw bits (two layers in all), since the pointer read's address waits for it.
    let busy_hi = g.s.slice(busy, 1, 7);
    let (nmi_seq, hijack) = {
        // bits: run, BUSY[1..8], NMI age (3), NMI_PEND, POLL (3).
        let c = g.s.concat(&[run, busy_hi, nmi_in, nmi_pend, poll]);
        let (mut seq, mut hij) = (Vec::new(), Vec::new());
        for tail in 0..128u64 {
            let (age, pend, k) = (tail & 7, (tail >> 3) & 1 == 1, tail >> 4);
            if age > u64::from(crate::Lines::NMI_AGE_MAX) {
                continue;
            }
            if nmi_seen(k, age, pend) == Some(true) {
                seq.push(g.s.eq_const(c, 1 | (tail << 8)));
            }
            if k == 2 && (pend || age >= u64::from(crate::Lines::NMI_AGE_MAX)) {
                hij.push(g.s.eq_const(c, 1 | (tail << 8)));
            }
        }
        (seq, hij)
    };
    let irq_seq = {
        let mut hits = irq_hits(g, st, &[run, busy_hi]);
        // After a DMA whose store's poll saw an interrupt: serviced now, IRQ unless an NMI is pending.
        let c = g.s.concat(&[run, busy_hi, poll]);
        hits.push(g.s.eq_const(c, 1 | (4 << 8)));
        hits
    };
    // An interrupt sequence (7 cycles, three pushes), NMI or IRQ.
    let int_seq = {
        let all: Vec<NodeId> = nmi_seq.iter().chain(&irq_seq).copied().collect();
        g.s.any(&all)
    };
    // Any interrupt step: a sequence, or a hijack (PC from the NMI vector, nothing else).
    let take_int = {
        let all: Vec<NodeId> = nmi_seq.iter().chain(&irq_seq).chain(&hijack).copied().collect();
        g.s.any(&all)
    };
    // The step fetches the NMI vector (an NMI sequence or a hijack).
    let nmi_vector = {
        let all: Vec<NodeId> = nmi_seq.iter().chain(&hijack).copied().collect();
        g.s.any(&all)
    };
    let (instr, dma_step) = {
        // bits: run, stopping, an interrupt taken, waiting, DMA.
        let c = g.s.concat(&[run, stopping, take_int, waiting, dma]);
        // Not booting, not stopping, no DMA, no interrupt taken: the step runs an instruction (or faults on it).
        let runs: Vec<NodeId> = [0b00001, 0b01001].iter().map(|&v| g.s.eq_const(c, v)).collect();
        let d = g.s.concat(&[run, stopping, dma]);
        (g.s.any(&runs), g.s.eq_const(d, 0b101))
    };
    StepKind { booting, stopping, waiting, dma, int_seq, take_int, nmi_vector, instr, dma_step }
}

/// Whether poll kind `k` (`POLL`) services an NMI of age `age` (`pend`: `NMI_PEND`); None: it is not a poll that
/// takes interrupts.
fn nmi_seen(k: u64, age: u64, pend: bool) -> Option<bool> {
    match k {
        0 => Some(pend || age >= 2),
        1 => Some(pend || age >= 3),
        4 => Some(pend || age >= 1),
        _ => None,
    }
}

/// The IRQ cases of a poll: one equality each over `head`'s bits then `POLL`, `IRQ`, `POLL_I` and I (an NMI case
/// may hold at once: `nmi_vector` then picks the NMI).
fn irq_hits(g: &mut Gates, st: &CpuState6502, head: &[NodeId]) -> Vec<NodeId> {
    let CpuState6502 { poll, poll_i, irq_in, flag_i, .. } = *st;
    // bits: head, POLL (3), IRQ (2), POLL_I valid, POLL_I old I, I.
    let pv = g.bit(poll_i, 0);
    let po = g.bit(poll_i, 1);
    let mut parts = head.to_vec();
    parts.extend([poll, irq_in, pv, po, flag_i]);
    let c = g.s.concat(&parts);
    let shift: u32 = head.iter().map(|&h| g.s.width(h)).sum();
    let low = if head.is_empty() { 0 } else { 1 };
    let mut hits = Vec::new();
    for tail in 0..256u64 {
        let (k, irq, valid, old, i) = (tail & 7, (tail >> 3) & 3, (tail >> 5) & 1, (tail >> 6) & 1, (tail >> 7) & 1);
        let masked = if valid == 1 { old == 1 } else { i == 1 };
        let level = match k {
            0 => irq & 1 == 1,
            1 => irq & 2 == 2,
            _ => false,
        };
        if level && !masked {
            hits.push(g.s.eq_const(c, low | (tail << shift)));
        }
    }
    hits
}

/// The registers the boot step loads from `INIT` (see the module's table; P with bit 5 set and B clear).
#[derive(Clone, Copy)]
struct BootState {
    pc: NodeId,
    a: NodeId,
    x: NodeId,
    y: NodeId,
    s: NodeId,
    p: NodeId,
    cyc: NodeId,
}

fn boot_state(g: &mut Gates) -> BootState {
    let init = |g: &mut Gates, row: u64| {
        let r = g.k(4, row);
        g.s.load(mem::INIT, 8, r)
    };
    let i_pcl = init(g, init_row::PC_LO);
    let i_pch = init(g, init_row::PC_HI);
    let i_pc = g.word(i_pcl, i_pch);
    let i_a = init(g, init_row::A);
    let i_x = init(g, init_row::X);
    let i_y = init(g, init_row::Y);
    let i_s = init(g, init_row::S);
    let i_p_raw = init(g, init_row::P);
    let i_p = {
        let m = g.k(8, 0xCF);
        let t = g.s.and(i_p_raw, m);
        let u = g.k(8, 0x20);
        g.s.or(t, u)
    };
    let i_cyc_bytes: Vec<NodeId> = (0..4).map(|k| init(g, init_row::CYC + k)).collect();
    let i_cyc = g.s.concat(&i_cyc_bytes);
    BootState { pc: i_pc, a: i_a, x: i_x, y: i_y, s: i_s, p: i_p, cyc: i_cyc }
}

/// The decoded control word and flags of the opcode (`control_tables`), as the sections read them.
#[derive(Clone, Copy)]
struct Decoded {
    cw: NodeId,
    fw: NodeId,
}

impl Decoded {
    /// Bits `lo..lo + w` of the control word (`ctl::*`).
    fn field(self, g: &mut Gates, lo: u32, w: u32) -> NodeId {
        g.s.slice(self.cw, lo, w)
    }
    /// Flag `f` of the opcode.
    fn flag(self, g: &mut Gates, f: Flag) -> NodeId {
        g.s.bit(self.fw, f as u32)
    }
}

/// Where the program counter can go after an instruction, and whether a branch is taken.
#[derive(Clone, Copy)]
struct PcTargets {
    /// PC + the instruction's length.
    pc_seq: NodeId,
    /// A conditional branch whose condition holds.
    taken: NodeId,
    /// The branch target: PC + 2 + the signed offset.
    target: NodeId,
    /// The branch target is on another page than `pc_seq` (one more cycle).
    br_cross: NodeId,
    f_jsr: NodeId,
    /// JMP absolute or JSR: PC from the operand.
    jump_abs: NodeId,
    /// RTS's target: the pulled address + 1; RTI's: the pulled bytes after P.
    rts_target: NodeId,
    rti_target: NodeId,
}

/// The program counter's candidates (level A's operand `b1`, level B's pointer `ptr16` and pulled bytes `p`).
fn pc_targets(g: &mut Gates, dec: Decoded, st: &CpuState6502, b1: NodeId, ptr16: NodeId, p: [NodeId; 2]) -> PcTargets {
    let CpuState6502 { pc, flag_n, flag_v, flag_c, flag_z, .. } = *st;
    let [p1, p2] = p;
    let t = |node: NodeId, shift: u32| SumTerm { node, shift, neg: false };
    let len = dec.field(g, ctl::LEN, 2);
    let len16 = g.s.zext(len, 16);
    let pc_seq = g.s.add(pc, len16);
    let f_branch = dec.flag(g, Flag::Branch);
    let cond_sel = {
        let s0 = dec.flag(g, Flag::CondSel0);
        let s1 = dec.flag(g, Flag::CondSel1);
        g.s.concat(&[s0, s1])
    };
    let cond_is = g.one_hot(cond_sel, 4);
    let cond_flag = g.s.one_hot(1, &[(cond_is[0], flag_n), (cond_is[1], flag_v), (cond_is[2], flag_c), (cond_is[3], flag_z)]);
    let cond_value = dec.flag(g, Flag::CondValue);
    let cond_met = g.s.eq(cond_flag, cond_value);
    let taken = g.and1(f_branch, cond_met);
    // The target of a branch: PC + 2 + the signed offset, as one sum (the offset's sign bit weighs -256).
    let target = {
        let lo7 = g.s.slice(b1, 0, 7);
        let sign = g.bit(b1, 7);
        g.s.sum(16, &[t(pc, 0), t(lo7, 0), SumTerm { node: sign, shift: 7, neg: true }], 2)
    };
    let br_cross = {
        let h1 = g.s.slice(pc_seq, 8, 8);
        let h2 = g.s.slice(target, 8, 8);
        g.s.cmp(CmpKind::Ne, h1, h2)
    };
    let f_jmp_abs = dec.flag(g, Flag::JmpAbs);
    let f_jsr = dec.flag(g, Flag::Jsr);
    let jump_abs = g.or1(f_jmp_abs, f_jsr);
    let rts_target = g.add_k(ptr16, 1);
    let rti_target = g.word(p1, p2);
    PcTargets { pc_seq, taken, target, br_cross, f_jsr, jump_abs, rts_target, rti_target }
}

/// The step's cycle counts.
struct Cycles {
    /// A taken branch to another page.
    br_far: NodeId,
    /// NES map: port `IO_READ`'s word, the address and (above it) the read's cycle within the instruction.
    io_read_word: NodeId,
    /// `CYC` after the instruction: its base cycles, one more for a page crossed by an indexed read, one for a
    /// taken branch and one more when it lands on another page.
    cyc_exec: NodeId,
    /// `CYC` after an interrupt sequence (7 cycles).
    cyc_int: NodeId,
}

/// The cycle counts: `crossings` are (mode, page crossed) of the indexed modes (abs,X; abs,Y; (zp),Y), `branch`
/// is (taken, to another page).
#[allow(clippy::too_many_arguments)]
fn cycles(g: &mut Gates, opts: &Mos6502Options, dec: Decoded, cyc: NodeId, crossings: [(NodeId, NodeId); 3], branch: (NodeId, NodeId), f_rmw_mem: NodeId, ea: NodeId) -> Cycles {
    let (taken, br_cross) = branch;
    let t = |node: NodeId, shift: u32| SumTerm { node, shift, neg: false };
    let base_cyc = dec.field(g, ctl::CYCLES, 4);
    let read_op = g.s.bit(dec.cw, ctl::READ_OP);
    let crossed = {
        let [(m1, c1), (m2, c2), (m3, c3)] = crossings;
        let t1 = g.and1(m1, c1);
        let t2 = g.and1(m2, c2);
        let t3 = g.and1(m3, c3);
        let any = g.s.any(&[t1, t2, t3]);
        g.and1(any, read_op)
    };
    let br_far = g.and1(taken, br_cross);
    // NES map: the cycle of an IO read within its instruction (0: the opcode fetch), for the host to clock its
    // PPU and APU up to it: a read's last cycle, or a read-modify-write's third from last (the two writes
    // follow). Port IO_READ carries it above the address.
    let io_read_word = if opts.nes {
        let read_cycle = g.s.sum(4, &[t(base_cyc, 0), t(crossed, 0), SumTerm { node: f_rmw_mem, shift: 1, neg: true }], 15);
        g.s.concat(&[ea, read_cycle])
    } else {
        ea
    };
    let cyc_exec = g.s.sum(32, &[t(cyc, 0), t(base_cyc, 0), t(crossed, 0), t(taken, 0), t(br_far, 0)], 0);
    let cyc_int = g.add_k(cyc, 7);
    Cycles { br_far, io_read_word, cyc_exec, cyc_int }
}

/// The read-modify-write stage's results.
struct RmwStage {
    /// (select, value) of each variant: ASL, LSR, ROL, ROR, INC, DEC, none (the operand).
    variants: [(NodeId, NodeId); 7],
    /// The modified operand (the operand itself when the instruction modifies nothing).
    value: NodeId,
    /// The carry a shift or rotate moves out.
    shift_c: NodeId,
    /// The ALU's carry in: ROR's out-carry for RRA, else C.
    alu_cin: NodeId,
}

/// The read-modify-write stage on `operand` (`flag_c`: the carry before the instruction).
fn rmw_stage(g: &mut Gates, d: Decoded, operand: NodeId, flag_c: NodeId) -> RmwStage {
    let rmw = d.field(g, ctl::RMW, 3);
    let rmw_is = g.one_hot(rmw, 7);
    let shl = g.s.shift_const(ShiftKind::Shl, operand, 1);
    let shr = g.s.shift_const(ShiftKind::Shr, operand, 1);
    // ROL and ROR: the old carry in the free bit, as a sum of disjoint bits (one layer, no OR gate).
    let rol = {
        let lo7 = g.s.slice(operand, 0, 7);
        g.s.concat(&[flag_c, lo7])
    };
    let ror = {
        let hi7 = g.s.slice(operand, 1, 7);
        g.s.concat(&[hi7, flag_c])
    };
    let inc = g.add_k(operand, 1);
    let dec = g.add_k(operand, 0xFF);
    let rmw_variants = [(rmw_is[1], shl), (rmw_is[2], shr), (rmw_is[3], rol), (rmw_is[4], ror), (rmw_is[5], inc), (rmw_is[6], dec), (rmw_is[0], operand)];
    let rmw_val = g.s.one_hot(8, &rmw_variants);
    let op_b7 = g.bit(operand, 7);
    let op_b0 = g.bit(operand, 0);
    let left = g.or1(rmw_is[1], rmw_is[3]);
    let shift_c = g.s.select(left, op_b7, op_b0);
    // Carry into the ALU: RRA's ADC takes the carry its ROR moved out.
    let is_ror = rmw_is[4];
    let alu_cin = g.s.select(is_ror, op_b0, flag_c);
    RmwStage { variants: rmw_variants, value: rmw_val, shift_c, alu_cin }
}

/// The ALU stage's results.
struct AluStage {
    /// A AND X (SAX, AXS).
    ax: NodeId,
    /// A AND the unmodified operand (ANC, ALR, ARR, BIT).
    a_and_op: NodeId,
    is_axs: NodeId,
    /// The 9-bit adder's low 8 bits, carry out and signed overflow.
    sum: NodeId,
    sum_c: NodeId,
    sum_v: NodeId,
    /// ARR's result before its flags.
    arr: NodeId,
    /// (decoded ALU operation, result) of each operation that writes A, not yet gated by `exec`.
    cases: Vec<(NodeId, NodeId)>,
}

/// The ALU stage on A and the (modified) operand: one 9-bit adder for ADC, SBC, the compares and AXS, the
/// logic operations and the unofficial ones.
#[allow(clippy::too_many_arguments)]
fn alu_stage(g: &mut Gates, d: Decoded, [a, x, y]: [NodeId; 3], operand: NodeId, rmw_variants: &[(NodeId, NodeId); 7], rmw_val: NodeId, alu_cin: NodeId, flag_c: NodeId) -> AluStage {
    let one = g.one;
    let t = |node: NodeId, shift: u32| SumTerm { node, shift, neg: false };
    let alu = d.field(g, ctl::ALU, 4);
    let alu_is = g.one_hot(alu, 14);
    let o = rmw_val;
    let ax = g.s.and(a, x);
    let a_or = g.s.or(a, o);
    let a_and = g.s.and(a, o);
    // ANC, ALR, ARR and BIT AND the operand itself (no read-modify-write before them): a shorter path.
    let a_and_op = g.s.and(a, operand);
    let a_eor = g.s.xor(a, o);
    // One 9-bit adder: ADC (A + o + C), SBC (A + !o + C), compares (reg + !o + 1), AXS ((A & X) + !o + 1).
    let is_sbc = alu_is[Alu::Sbc as usize];
    let is_cmp = alu_is[Alu::Cmp as usize];
    let is_cpx = alu_is[Alu::Cpx as usize];
    let is_cpy = alu_is[Alu::Cpy as usize];
    let is_axs = alu_is[Alu::Axs as usize];
    let is_adc = alu_is[Alu::Adc as usize];
    let compare = g.s.any(&[is_cmp, is_cpx, is_cpy, is_axs]);
    let invert = g.or1(is_sbc, compare);
    // The adder's operand: the read-modify-write variant, inverted for SBC and the compares, in one select.
    let addend = {
        let ni = g.not1(invert);
        let mut cases = Vec::new();
        for &(sel, v) in rmw_variants {
            let plain = g.and1(sel, ni);
            let inv = g.and1(sel, invert);
            let nv = g.s.not(v);
            cases.push((plain, v));
            cases.push((inv, nv));
        }
        g.s.one_hot(8, &cases)
    };
    let add_left = g.pick(8, &[(is_cpx, x), (is_cpy, y), (is_axs, ax)], a);
    let cin = g.s.select(compare, one, alu_cin);
    let sum9 = g.s.sum(9, &[t(add_left, 0), t(addend, 0), t(cin, 0)], 0);
    let sum = g.s.slice(sum9, 0, 8);
    let sum_c = g.bit(sum9, 8);
    // Signed overflow: both inputs of one sign, the result of the other.
    let sum_v = {
        let (a7, d7, s7) = (g.bit(a, 7), g.bit(addend, 7), g.bit(sum, 7));
        let c = g.s.concat(&[a7, d7, s7]);
        // (a7, d7, s7) = (0, 0, 1) or (1, 1, 0): one lookup, one layer.
        let table: Vec<u64> = (0..8u64).map(|i| u64::from(i == 0b100 || i == 0b011)).collect();
        g.s.lookup(1, table, c)
    };
    let alr = g.s.shift_const(ShiftKind::Shr, a_and_op, 1);
    let arr = {
        let hi7 = g.s.slice(a_and_op, 1, 7);
        g.s.concat(&[hi7, flag_c])
    };
    let cases = vec![
        (alu_is[Alu::Ora as usize], a_or),
        (alu_is[Alu::And as usize], a_and),
        (alu_is[Alu::Eor as usize], a_eor),
        (is_adc, sum),
        (is_sbc, sum),
        (alu_is[Alu::Anc as usize], a_and_op),
        (alu_is[Alu::Alr as usize], alr),
        (alu_is[Alu::Arr as usize], arr),
    ];
    AluStage { ax, a_and_op, is_axs, sum, sum_c, sum_v, arr, cases }
}

/// The ALU's values the flags read.
struct AluResults<'c> {
    sum: NodeId,
    sum_c: NodeId,
    sum_v: NodeId,
    a_and_op: NodeId,
    arr: NodeId,
    /// (decoded operation, result) of each ALU operation that writes A, not gated by `exec`.
    cases: &'c [(NodeId, NodeId)],
}

/// Each bit of P's cases (C Z I D B 1 V N), each one select of `exec AND` a decoded source, and the decoded CLI
/// and SEI (the interrupt poll's I).
struct FlagCases {
    p_bit_cases: Vec<Vec<(NodeId, NodeId)>>,
    f_cli: NodeId,
    f_sei: NodeId,
}

/// The flags: each bit of P is one select over its sources (N and Z straight from every value an instruction may
/// set them by: the adder, the operand, the read-modify-write value, the ALU's results, `transfers`; BIT's; the
/// carries, overflows, CLI/SEI/CLD/SED, and P pulled by PLP and RTI as `p0`).
fn flag_cases(g: &mut Gates, d: Decoded, exec: NodeId, alu: AluResults, transfers: &[(NodeId, NodeId)], [operand, rmw_val, shift_c, p0]: [NodeId; 4], [f_brk, f_plp, f_rti]: [NodeId; 3]) -> FlagCases {
    let AluResults { sum, sum_c, sum_v, a_and_op, arr, .. } = alu;
    let (one, zero) = (g.one, g.zero);
    let when = |g: &mut Gates, f: NodeId| g.and1(exec, f);
    let nz_src = d.field(g, ctl::NZ, 4);
    let nz_is = g.one_hot(nz_src, 9);
    let mut nz_sources: Vec<(NodeId, NodeId)> =
        vec![(nz_is[Nz::Adder as usize], sum), (nz_is[Nz::Operand as usize], operand), (nz_is[Nz::Rmw as usize], rmw_val)];
    // AluA: the ALU op's own value; NewX/NewY/NewA: the transfer's or step's source.
    nz_sources.extend(alu.cases.iter().map(|&(s, v)| (g.and1(exec, s), v)));
    nz_sources.extend_from_slice(transfers);
    let (mut z_cases, mut n_cases) = (Vec::new(), Vec::new());
    for (sel, v) in nz_sources {
        let e = when(g, sel);
        let z = g.s.eq_const(v, 0);
        let n = g.bit(v, 7);
        z_cases.push((e, z));
        n_cases.push((e, n));
    }
    // BIT: Z from A AND the operand, N from the operand's bit 7.
    let bit_sel = when(g, nz_is[Nz::Bit as usize]);
    let bit_z = g.s.eq_const(a_and_op, 0);
    let o_b7 = g.bit(operand, 7);
    z_cases.push((bit_sel, bit_z));
    n_cases.push((bit_sel, o_b7));
    let c_src = d.field(g, ctl::C, 3);
    let c_is = g.one_hot(c_src, 8);
    let a_and_b0 = g.bit(a_and_op, 0);
    let (arr_b6, arr_b5) = (g.bit(arr, 6), g.bit(arr, 5));
    let and_b7 = g.bit(a_and_op, 7);
    let mut c_cases = Vec::new();
    for (k, v) in [
        (CarrySrc::Shift, shift_c),
        (CarrySrc::Adder, sum_c),
        (CarrySrc::Clear, zero),
        (CarrySrc::Set, one),
        (CarrySrc::Bit7, and_b7),
        (CarrySrc::AndBit0, a_and_b0),
        (CarrySrc::Bit6, arr_b6),
    ] {
        let e = when(g, c_is[k as usize]);
        c_cases.push((e, v));
    }
    let v_src = d.field(g, ctl::V, 3);
    let v_is = g.one_hot(v_src, 5);
    let o_b6 = g.bit(operand, 6);
    let arr_v = g.s.xor(arr_b6, arr_b5);
    let mut v_cases = Vec::new();
    for (k, v) in [(OverflowSrc::Adder, sum_v), (OverflowSrc::Operand6, o_b6), (OverflowSrc::Clear, zero), (OverflowSrc::Arr, arr_v)] {
        let e = when(g, v_is[k as usize]);
        v_cases.push((e, v));
    }
    let f_cli = d.flag(g, Flag::Cli);
    let f_sei = d.flag(g, Flag::Sei);
    let f_cld = d.flag(g, Flag::Cld);
    let f_sed = d.flag(g, Flag::Sed);
    let i_set = g.or1(f_sei, f_brk);
    let i_cases = vec![(when(g, f_cli), zero), (when(g, i_set), one)];
    let d_cases = vec![(when(g, f_cld), zero), (when(g, f_sed), one)];
    // PLP and RTI: P from the stack, bits 4 and 5 as stored (B = 0, 1).
    let pulls_p = {
        let f = g.or1(f_plp, f_rti);
        when(g, f)
    };
    let mut p_bit_cases: Vec<Vec<(NodeId, NodeId)>> = vec![c_cases, z_cases, i_cases, d_cases, vec![], vec![], v_cases, n_cases];
    for (b, cases) in p_bit_cases.iter_mut().enumerate() {
        if b != 4 && b != 5 {
            let pulled = g.bit(p0, b as u32);
            cases.push((pulls_p, pulled));
        }
    }
    FlagCases { p_bit_cases, f_cli, f_sei }
}

/// What the write run reads besides the registers.
struct WriteInputs {
    /// The operand's high byte (SHX/SHY store the register AND it + 1).
    b2: NodeId,
    /// A AND X (SAX).
    ax: NodeId,
    /// (mode, page crossed) of abs,X and abs,Y: a page-crossing SHX/SHY writes at its value's page.
    crossings: [(NodeId, NodeId); 2],
    /// The effective address, and (NES map) its compact memory address.
    ea: NodeId,
    ea_mem: NodeId,
    /// The instruction completes this step; an interrupt sequence is taken instead; it is an NMI or IRQ
    /// sequence (three pushes).
    go: NodeId,
    take_int: NodeId,
    int_seq: NodeId,
    f_rmw_mem: NodeId,
    /// NES map: `ea` is an IO register; `ea` is in $8000-$FFFF.
    io: NodeId,
    rom: NodeId,
    f_jsr: NodeId,
    f_brk: NodeId,
    /// The read-modify-write's value.
    rmw_val: NodeId,
    /// The constant 1 (8 bits): the stack's page in the flat map.
    one8: NodeId,
}

/// What the rest of the machine reads from the write stage.
struct Writes {
    f_store: NodeId,
    /// The value a store writes (A, X, Y, A AND X, or SHX/SHY's).
    store_val: NodeId,
    /// (port kind: 1 console, 2 exit; enable) of the configured store ports.
    port_writes: Vec<(u32, NodeId)>,
    /// The exit port's enable, when configured.
    exits: Option<NodeId>,
    /// A store or a read-modify-write to memory.
    writes_ea: NodeId,
    /// A store or read-modify-write to an IO register or (NES map) the ROM: the host's.
    io_write: NodeId,
}

/// Stores, read-modify-writes and pushes: one write run of up to three bytes (a store's or read-modify-write's
/// byte, PHA/PHP's, JSR's two, BRK's and an interrupt's three), vetoed where the byte goes to a port, an IO
/// register or ROM.
fn writes(g: &mut Gates, opts: &Mos6502Options, d: Decoded, st: &CpuState6502, w: WriteInputs) -> Writes {
    let CpuState6502 { pc, a, x, y, sp, p, .. } = *st;
    let WriteInputs { b2, ax, crossings, ea, ea_mem, go, take_int, int_seq, f_rmw_mem, io, rom, f_jsr, f_brk, rmw_val, one8 } = w;
    let [(m_abx, cross_abx), (m_aby, cross_aby)] = crossings;
    let f_store = d.flag(g, Flag::Store);
    let f_store_x = d.flag(g, Flag::StoreX);
    let f_store_y = d.flag(g, Flag::StoreY);
    let f_store_ax = d.flag(g, Flag::StoreAx);
    let f_pha = d.flag(g, Flag::Pha);
    let f_php = d.flag(g, Flag::Php);
    let f_store_high = d.flag(g, Flag::StoreHigh);
    let store_val = {
        // SHY / SHX store the register AND (the base's high byte + 1).
        let hi1 = g.add_k(b2, 1);
        let (xh, yh) = (g.s.and(x, hi1), g.s.and(y, hi1));
        let c = g.s.concat(&[f_store_x, f_store_y, f_store_high]);
        let (sx, sy, shx, shy) = (g.s.eq_const(c, 0b001), g.s.eq_const(c, 0b010), g.s.eq_const(c, 0b101), g.s.eq_const(c, 0b110));
        g.pick(8, &[(sx, x), (sy, y), (f_store_ax, ax), (shx, xh), (shy, yh)], a)
    };
    // Where a page-crossing SHY / SHX writes: the stored value is the address's high byte.
    let sh_cross = {
        let crossed = g.s.one_hot(1, &[(m_abx, cross_abx), (m_aby, cross_aby)]);
        g.and1(f_store_high, crossed)
    };
    let ea_sh = {
        let lo = g.s.slice(ea, 0, 8);
        g.word(lo, store_val)
    };
    let mut diverted = Vec::new();
    let mut port_writes = Vec::new();
    let mut exits = None;
    for (addr, kind) in [(opts.console, 1), (opts.exit, 2)] {
        if let Some(addr) = addr {
            let hit = g.s.eq_const(ea, u64::from(addr));
            let st = g.and1(f_store, hit);
            let en = g.and1(go, st);
            diverted.push(st);
            port_writes.push((kind, en));
            if kind == 2 {
                exits = Some(en);
            }
        }
    }
    // Stores and read-modify-writes reach memory unless diverted to a port, an IO register or ROM.
    let writes_ea = g.or1(f_store, f_rmw_mem);
    // A store or read-modify-write whose byte goes to a port, an IO register or ROM writes no memory: a veto
    // on the write run's enables, so that the run's byte count does not wait for the address.
    let ea_veto = {
        diverted.push(io);
        diverted.push(rom);
        let d = g.s.any(&diverted);
        let ni = g.not1(take_int);
        let c = g.s.concat(&[writes_ea, d, ni]);
        g.s.eq_const(c, 0b111)
    };
    // An IO register's store, or (NES map) a store to the ROM: the cartridge's mapper registers, the host's.
    let io_write = {
        let to_host = g.or1(io, rom);
        let t = g.and1(writes_ea, to_host);
        g.and1(go, t)
    };
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
    let (st_store, st_rmw) = {
        let nt = g.not1(take_int);
        let s1 = g.and1(f_store, nt);
        let s2 = g.and1(f_rmw_mem, nt);
        (s1, s2)
    };
    let nt = g.not1(take_int);
    let pha = g.and1(f_pha, nt);
    let php = g.and1(f_php, nt);
    let jsr_brk_i = g.and1(jsr_brk, nt);
    let brk_i = g.and1(f_brk, nt);
    let w0 = g.s.one_hot(8, &[(st_store, store_val), (st_rmw, rmw_val), (pha, a), (php, pushed_p), (jsr_brk_i, ret_hi), (int_seq, pc_hi)]);
    let w1 = g.s.one_hot(8, &[(jsr_brk_i, ret_lo), (int_seq, pc_lo)]);
    let w2 = g.s.one_hot(8, &[(brk_i, pushed_p), (int_seq, p)]);
    let one_byte = g.s.any(&[writes_ea, f_pha, f_php]);
    let count = {
        let (c1, c2, c3, c0) = (g.k(2, 1), g.k(2, 2), g.k(2, 3), g.k(2, 0));
        let jsr = g.and1(f_jsr, nt);
        let brk_or_int = g.or1(brk_i, int_seq);
        let one_b = g.and1(one_byte, nt);
        g.pick(2, &[(one_b, c1), (jsr, c2), (brk_or_int, c3)], c0)
    };
    // NES map: the stack page at its compact address (RAM at 0x2000).
    let stack_base = if opts.nes {
        let page = g.k(8, 0x21);
        g.word(sp, page)
    } else {
        g.word(sp, one8)
    };
    let ea_sh = if opts.nes { nes_compact(g, ea_sh) } else { ea_sh };
    let push_base = {
        let pushes = g.s.any(&[f_pha, f_php, f_jsr, f_brk, int_seq]);
        let c = g.s.concat(&[pushes, sh_cross]);
        let (plain, high) = (g.s.eq_const(c, 0b00), g.s.eq_const(c, 0b10));
        g.s.one_hot(16, &[(pushes, stack_base), (plain, ea_mem), (high, ea_sh)])
    };
    let write_en = g.or1(go, take_int);
    write_run(g, push_base, [w0, w1, w2], count, write_en, ea_veto);
    Writes { f_store, store_val, port_writes, exits, writes_ea, io_write }
}

/// POLL: where the next boundary's poll looks. An instruction: 1 after a taken branch on its page, 2 after
/// BRK, else 0; an NMI sequence or a hijack 3, an IRQ sequence 2; the first DMA step polls as the store that
/// started it would have (4 when it sees an interrupt, else 3); boot 0; else (stall, waiting, DMA) kept.
/// `instr` is (a taken branch, to another page, BRK, the instruction completes); `dma_row` the DMA's next row.
fn poll_next(g: &mut Gates, opts: &Mos6502Options, st: &CpuState6502, kind: &StepKind, instr: [NodeId; 4], dma_row: NodeId) -> NodeId {
    let CpuState6502 { nmi_in, nmi_pend, poll, .. } = *st;
    let StepKind { booting, nmi_vector, int_seq, dma_step, .. } = *kind;
    let [taken, br_far, f_brk, exec] = instr;
    let k = |g: &mut Gates, v: u64| g.k(3, v);
    let (k0, k1, k2, k3, k4) = (k(g, 0), k(g, 1), k(g, 2), k(g, 3), k(g, 4));
    let near = g.not1(br_far);
    let early = g.and1(taken, near);
    let instr_poll = g.pick(3, &[(early, k1), (f_brk, k2)], k0);
    let irq_only = {
        let c = g.s.concat(&[int_seq, nmi_vector]);
        g.s.eq_const(c, 0b01)
    };
    let mut cases = vec![(booting, k0), (nmi_vector, k3), (irq_only, k2), (exec, instr_poll)];
    if opts.nes {
        // The first DMA step: the store's poll (POLL 0 or 1) over this boundary's lines.
        let first = {
            let c = g.s.concat(&[dma_step, dma_row]);
            g.s.eq_const(c, 1)
        };
        let c = g.s.concat(&[nmi_in, nmi_pend, poll]);
        let mut hits = irq_hits(g, st, &[]);
        for tail in 0..128u64 {
            let (age, pend, kind) = (tail & 7, (tail >> 3) & 1 == 1, tail >> 4);
            if age <= u64::from(crate::Lines::NMI_AGE_MAX) && kind <= 1 && nmi_seen(kind, age, pend) == Some(true) {
                hits.push(g.s.eq_const(c, tail));
            }
        }
        let sees = g.s.any(&hits);
        let due = g.s.select(sees, k4, k3);
        cases.push((first, due));
    }
    g.pick(3, &cases, poll)
}

/// Level C: the effective address and the byte read there.
struct DataRead {
    /// The effective address (16 bits; 0 in a mode without one), and its address in the byte banks (the NES
    /// map's compact one).
    ea: NodeId,
    ea_mem: NodeId,
    /// NES map: `ea` is an IO register (PPU, APU and pads, expansion area); `ea` is in $8000-$FFFF.
    io: NodeId,
    rom: NodeId,
    /// NES map: the read (banks, PRG ROM words, selects).
    nes_data: Option<NesRead>,
    /// The four banks' words at `ea`'s row.
    dwords: [NodeId; 4],
    /// The operand: the immediate byte, A, the host's IO answer, or the byte at `ea`.
    operand: NodeId,
}

/// Level C: the effective address from the modes' cases (`ea_cases`: mode select, address), the data read
/// there, and the operand (`[m_imm, m_acc]`: the immediate and accumulator modes, which read `b1` and `a`).
fn data_read(g: &mut Gates, opts: &Mos6502Options, ea_cases: &[(NodeId, NodeId)], [m_imm, m_acc]: [NodeId; 2], a: NodeId, b1: NodeId) -> DataRead {
    let zero = g.zero;
    // No default: a mode without an effective address leaves it 0 (nothing reads or writes it then).
    let ea = g.s.one_hot(16, ea_cases);
    // NES map: RAM mirrored through $1FFF; IO registers at $2000-$3FFF and $4000-$401F; ROM from $8000.
    let (ea_mem, io, rom, io_parts) = if opts.nes {
        // The IO registers: the PPU's at $2000-$3FFF, the APU's and pads' at $4000-$401F, and the cartridge's
        // expansion area up to $5FFF (open bus on these boards: the host answers).
        let hi3 = g.s.slice(ea, 13, 3);
        let ea_mem = nes_compact(g, ea);
        let is_ppu = g.s.eq_const(hi3, 1);
        let is_apu = g.s.eq_const(hi3, 2);
        (ea_mem, g.or1(is_ppu, is_apu), g.bit(ea, 15), vec![is_ppu, is_apu])
    } else {
        (ea, zero, zero, vec![])
    };
    // NES map: RAM, PRG RAM and ROM read in one level (the memory modes only: the immediate and A take no
    // memory select).
    let nes_data = opts.nes.then(|| {
        let c = g.s.concat(&[m_imm, m_acc]);
        let mem_mode = g.s.eq_const(c, 0);
        nes_read_run_of(g, &[(mem_mode, ea)], 1, false)
    });
    let dwords = match &nes_data {
        Some(r) => r.banks,
        None => read_banks(g, ea_mem, 1, false).0,
    };
    // The operand: the immediate byte, A, the host's IO answer, or the byte of the bank `ea % 4` names (one
    // select).
    let operand = {
        let mut cases = vec![(m_imm, b1), (m_acc, a)];
        if let Some(r) = &nes_data {
            cases.extend(nes_byte_cases(g, &r.banks, r.prg, &r.ram_is, &r.rom_is, 0));
        } else {
            // Each select is one equality over the address's low bits and the mode.
            let ea_lo2 = g.s.slice(ea, 0, 2);
            let c = g.s.concat(&[ea_lo2, m_imm, m_acc]);
            let mut c_cases = vec![(m_imm, b1), (m_acc, a)];
            for (k, &word) in dwords.iter().enumerate() {
                let sel = g.s.eq_const(c, k as u64);
                c_cases.push((sel, word));
            }
            cases = c_cases;
        }
        if opts.nes {
            // An IO register (PPU or APU/IO, never both) in a memory mode: the host's answer.
            let io_data = g.s.input(input::IO_DATA, 8);
            let mut parts = vec![m_imm, m_acc];
            parts.extend(&io_parts);
            let c4 = g.s.concat(&parts);
            let table: Vec<u64> = (0..16u64).map(|i| u64::from(i & 3 == 0 && (i >> 2 == 1 || i >> 2 == 2))).collect();
            let sel = g.s.lookup(1, table, c4);
            cases.push((sel, io_data));
        }
        g.s.one_hot(8, &cases)
    };
    DataRead { ea, ea_mem, io, rom, nes_data, dwords, operand }
}

/// The instruction cases of A, X and Y (each select `exec AND` a decoded flag), S's moved value and TXS's flag,
/// and the transfers and steps whose values set N and Z.
struct RegisterCases {
    a_cases: Vec<(NodeId, NodeId)>,
    x_cases: Vec<(NodeId, NodeId)>,
    y_cases: Vec<(NodeId, NodeId)>,
    /// S plus the instruction's stack delta (pushes and pulls).
    s_moved: NodeId,
    f_txs: NodeId,
    /// (decoded flag, value) of TAX, TSX, INX, DEX, TAY, INY, DEY, TXA, TYA, PLA.
    transfers: [(NodeId, NodeId); 10],
}

/// The registers' instruction cases: loads, transfers, increments, the ALU's results (`alu_cases`, ungated),
/// the read-modify-write on A, PLA (`p0`), AXS (`sum`).
fn register_cases(g: &mut Gates, d: Decoded, exec: NodeId, st: &CpuState6502, alu_cases: &[(NodeId, NodeId)], [operand, rmw_val, p0, sum]: [NodeId; 4], [is_axs, f_pla]: [NodeId; 2]) -> RegisterCases {
    let CpuState6502 { a, x, y, sp, .. } = *st;
    let when = |g: &mut Gates, f: NodeId| g.and1(exec, f);
    let f_load_a = d.flag(g, Flag::LoadA);
    let f_load_x = d.flag(g, Flag::LoadX);
    let f_load_y = d.flag(g, Flag::LoadY);
    let f_rmw_acc = d.flag(g, Flag::RmwAcc);
    let f_txa = d.flag(g, Flag::Txa);
    let f_tya = d.flag(g, Flag::Tya);
    let f_tax = d.flag(g, Flag::Tax);
    let f_tay = d.flag(g, Flag::Tay);
    let f_tsx = d.flag(g, Flag::Tsx);
    let f_txs = d.flag(g, Flag::Txs);
    let f_inx = d.flag(g, Flag::Inx);
    let f_iny = d.flag(g, Flag::Iny);
    let f_dex = d.flag(g, Flag::Dex);
    let f_dey = d.flag(g, Flag::Dey);
    let x_inc = g.add_k(x, 1);
    let x_dec = g.add_k(x, 0xFF);
    let y_inc = g.add_k(y, 1);
    let y_dec = g.add_k(y, 0xFF);
    let mut a_cases: Vec<(NodeId, NodeId)> = alu_cases.iter().map(|&(s, v)| (g.and1(exec, s), v)).collect();
    for (f, v) in [(f_load_a, operand), (f_rmw_acc, rmw_val), (f_txa, x), (f_tya, y), (f_pla, p0)] {
        a_cases.push((when(g, f), v));
    }
    let mut x_cases = Vec::new();
    for (f, v) in [(f_load_x, operand), (f_tax, a), (f_tsx, sp), (f_inx, x_inc), (f_dex, x_dec), (is_axs, sum)] {
        x_cases.push((when(g, f), v));
    }
    let mut y_cases = Vec::new();
    for (f, v) in [(f_load_y, operand), (f_tay, a), (f_iny, y_inc), (f_dey, y_dec)] {
        y_cases.push((when(g, f), v));
    }
    let s_delta = d.field(g, ctl::S_DELTA, 8);
    let s_moved = g.s.add(sp, s_delta);
    let transfers = [(f_tax, a), (f_tsx, sp), (f_inx, x_inc), (f_dex, x_dec), (f_tay, a), (f_iny, y_inc), (f_dey, y_dec), (f_txa, x), (f_tya, y), (f_pla, p0)];
    RegisterCases { a_cases, x_cases, y_cases, s_moved, f_txs, transfers }
}

/// Level B's results and the decoded flags it reads.
struct PointerRead {
    f_pla: NodeId,
    f_plp: NodeId,
    f_rts: NodeId,
    f_rti: NodeId,
    f_brk: NodeId,
    f_jmp_ind: NodeId,
    /// The constant 1 (8 bits).
    one8: NodeId,
    /// The three bytes read: a pointer (its two bytes), the pulled bytes, or a vector.
    p: [NodeId; 3],
    /// `p[0]` and `p[1]` as an address.
    ptr16: NodeId,
}

/// Level B: the pointer read. (zp,X)'s and (zp),Y's zero-page pointers (`addrs`: zp+X, zp, the operand word),
/// JMP's indirect pointer, the bytes a pull takes from the stack above `sp`, an interrupt's vector
/// (`int`: an interrupt taken, the NMI's vector) or BRK's, which is also every other instruction's don't-care
/// read.
fn pointer_read(g: &mut Gates, opts: &Mos6502Options, d: Decoded, mode: NodeId, sp: NodeId, [take_int, nmi_vector]: [NodeId; 2], [ea_zpx, ea_zp, op16]: [NodeId; 3]) -> PointerRead {
    let f_pla = d.flag(g, Flag::Pla);
    let f_plp = d.flag(g, Flag::Plp);
    let f_rts = d.flag(g, Flag::Rts);
    let f_rti = d.flag(g, Flag::Rti);
    let f_brk = d.flag(g, Flag::Brk);
    let f_jmp_ind = d.flag(g, Flag::JmpInd);
    let sp1 = g.add_k(sp, 1);
    let one8 = g.k(8, 1);
    let pull_base = g.word(sp1, one8);
    let irq_vec = g.k(16, 0xFFFE);
    let nmi_vec = g.k(16, 0xFFFA);
    let ptr = {
        // Explicit, exclusive selects, each one gate of the decoded bits and the interrupt decision.
        let izx = g.eq_unless(mode, mode_code(AddressingMode::IndexedIndirect), take_int);
        let izy = g.eq_unless(mode, mode_code(AddressingMode::IndirectIndexed), take_int);
        let jind = g.eq_unless(f_jmp_ind, 1, take_int);
        let f_pull = d.flag(g, Flag::Pull);
        let pull = g.eq_unless(f_pull, 1, take_int);
        let f_ptr = d.flag(g, Flag::PtrRead);
        // An interrupt's vector (NMI or IRQ); else BRK's, which is also the don't-care read of every
        // instruction without a pointer.
        let c = g.s.concat(&[take_int, nmi_vector]);
        let nmi = g.s.eq_const(c, 0b11);
        let irq = g.s.eq_const(c, 0b01);
        let brk = g.eq_unless(f_ptr, 0, take_int);
        let cases = [(izx, ea_zpx), (izy, ea_zp), (jind, op16), (pull, pull_base), (nmi, nmi_vec), (irq, irq_vec), (brk, irq_vec)];
        if opts.nes { nes_read_run_of(g, &cases, 3, true).bytes } else { read_run_of(g, &cases, 3, true) }
    };
    let (p0, p1, p2) = (ptr[0], ptr[1], ptr[2]);
    let ptr16 = g.word(p0, p1);
    PointerRead { f_pla, f_plp, f_rts, f_rti, f_brk, f_jmp_ind, one8, p: [p0, p1, p2], ptr16 }
}

/// The next value's select: the boot step's value, an interrupt's, the instruction's cases, else the register
/// kept.
#[derive(Clone, Copy)]
struct Picker {
    booting: NodeId,
    take_int: NodeId,
    exec: NodeId,
}

impl Picker {
    /// One select over boot, interrupt (when given), `cases`, else `keep` (`w` bits).
    fn next(self, g: &mut Gates, w: u32, boot: NodeId, int: Option<NodeId>, cases: Vec<(NodeId, NodeId)>, keep: NodeId) -> NodeId {
        let mut all = vec![(self.booting, boot)];
        all.extend(int.map(|v| (self.take_int, v)));
        all.extend(cases);
        g.pick(w, &all, keep)
    }
    /// Instruction cases whose default is a computed value: (exec AND NOT any special) selects the default.
    fn with_default(self, g: &mut Gates, cases: Vec<(NodeId, NodeId)>, default: NodeId) -> Vec<(NodeId, NodeId)> {
        let exec = self.exec;
        let sels: Vec<NodeId> = cases.iter().map(|c| c.0).collect();
        let any = g.s.any(&sels);
        let c = g.s.concat(&[exec, any]);
        let plain = g.s.eq_const(c, 0b01);
        let mut out: Vec<(NodeId, NodeId)> = cases.into_iter().map(|(s, v)| (g.and1(exec, s), v)).collect();
        out.push((plain, default));
        out
    }
}

/// The instruction's cases of the registers, computed by the sections.
struct InstructionCases {
    /// A's, X's and Y's cases and S's moved value ([`register_cases`]).
    regs: RegisterCases,
    p_bit_cases: Vec<Vec<(NodeId, NodeId)>>,
    cyc_exec: NodeId,
    cyc_int: NodeId,
}

/// The next values of PC, A, X, Y, S, P and CYC: each one select over boot, interrupt, the instruction's cases,
/// else kept. `addrs`: the operand word and the pointer; `flags`: JMP (ind), RTS, RTI, BRK; `seq`: an interrupt
/// sequence, the DMA's last step, its long form.
#[allow(clippy::too_many_arguments)]
fn registers_next(g: &mut Gates, opts: &Mos6502Options, pk: Picker, boot: &BootState, st: &CpuState6502, targets: &PcTargets, cases: InstructionCases, [op16, ptr16]: [NodeId; 2], [f_jmp_ind, f_rts, f_rti, f_brk]: [NodeId; 4], [int_seq, dma_last, dma_long]: [NodeId; 3]) -> [NodeId; 7] {
    let (one, zero, exec) = (g.one, g.zero, pk.exec);
    let CpuState6502 { pc, a, x, y, sp, p, cyc, .. } = *st;
    let BootState { pc: i_pc, a: i_a, x: i_x, y: i_y, s: i_s, p: i_p, cyc: i_cyc } = *boot;
    let PcTargets { pc_seq, taken, target, jump_abs, rts_target, rti_target, .. } = *targets;
    let InstructionCases { regs: RegisterCases { a_cases, x_cases, y_cases, s_moved, f_txs, .. }, p_bit_cases, cyc_exec, cyc_int } = cases;
    let pc_cases = pk.with_default(g, vec![(taken, target), (jump_abs, op16), (f_jmp_ind, ptr16), (f_rts, rts_target), (f_rti, rti_target), (f_brk, ptr16)], pc_seq);
    let pc_next = pk.next(g, 16, i_pc, Some(ptr16), pc_cases, pc);
    let a_next = pk.next(g, 8, i_a, None, a_cases, a);
    let x_next = pk.next(g, 8, i_x, None, x_cases, x);
    let y_next = pk.next(g, 8, i_y, None, y_cases, y);
    let s_int = g.add_k(sp, 0xFD);
    let s_cases = pk.with_default(g, vec![(f_txs, x)], s_moved);
    let mut s_cases = s_cases;
    s_cases.push((int_seq, s_int));
    let s_next = pk.next(g, 8, i_s, None, s_cases, sp);
    let p_int = {
        let i = g.k(8, 0x04);
        g.s.or(p, i)
    };
    let p_next = {
        let mut bits = Vec::new();
        for (b, cases) in p_bit_cases.into_iter().enumerate() {
            let bit = match b {
                4 => zero,
                5 => one,
                _ => {
                    let (ib, pb, nb) = (g.bit(i_p, b as u32), g.bit(p_int, b as u32), g.bit(p, b as u32));
                    pk.next(g, 1, ib, Some(pb), cases, nb)
                }
            };
            bits.push(bit);
        }
        g.s.concat(&bits)
    };
    let mut cyc_cases = vec![(exec, cyc_exec)];
    if opts.nes {
        let t = |node: NodeId| SumTerm { node, shift: 0, neg: false };
        let done = g.s.sum(32, &[t(cyc), t(dma_long)], 513);
        cyc_cases.push((dma_last, done));
    }
    cyc_cases.push((int_seq, cyc_int));
    let cyc_next = pk.next(g, 32, i_cyc, None, cyc_cases, cyc);
    [pc_next, a_next, x_next, y_next, s_next, p_next, cyc_next]
}

/// The next values of `POLL_I` (CLI, SEI or PLP, and the I before it), `BUSY` (stopping, booted, waiting for
/// IO, in a DMA, else 0) and `NMI_PEND` (cleared by the boot step and by a step that fetches the NMI vector;
/// else any new edge joins it: a stall's, waiting or DMA step's input is the boundary's again, and joining it
/// twice changes nothing). `step`: the instruction completes, the machine stops, stalls, a DMA goes on.
fn control_next(g: &mut Gates, st: &CpuState6502, kind: &StepKind, [exec, stop, stall, dma_more]: [NodeId; 4], [f_cli, f_sei, f_plp]: [NodeId; 3]) -> [NodeId; 3] {
    let CpuState6502 { flag_i, nmi_in, nmi_pend, .. } = *st;
    let StepKind { booting, nmi_vector, .. } = *kind;
    let poll_i_next = {
        let sets = g.s.any(&[f_cli, f_sei, f_plp]);
        let valid = g.and1(exec, sets);
        let old = g.and1(valid, flag_i);
        g.s.concat(&[valid, old])
    };
    let busy_next = {
        let b255 = g.k(8, BUSY_STOPPING);
        let b1 = g.k(8, 1);
        let b0 = g.k(8, 0);
        let bw = g.k(8, BUSY_IO_WAIT);
        let bd = g.k(8, BUSY_DMA);
        g.pick(8, &[(stop, b255), (booting, b1), (stall, bw), (dma_more, bd)], b0)
    };
    let pend_next = {
        let none = g.s.eq_const(nmi_in, 0);
        let new_edge = g.not1(none);
        let joined = g.or1(nmi_pend, new_edge);
        let clear = g.or1(booting, nmi_vector);
        let keep = g.not1(clear);
        g.and1(keep, joined)
    };
    [poll_i_next, busy_next, pend_next]
}

/// NES map: the OAM DMA's registers and their inputs.
#[derive(Clone, Copy)]
struct DmaNext {
    page: NodeId,
    row: NodeId,
    long: NodeId,
    /// A store to $4014 starts a DMA; this step copies four bytes.
    start: NodeId,
    step: NodeId,
    /// `CYC` after the instruction (the DMA is long when its store ends on an even cycle).
    cyc_exec: NodeId,
}

/// NES map: the next values of the DMA's registers and of the board's PRG bank registers. `w.data` is the
/// read-modify-write's value, selected here against the store's.
fn nes_registers_next(s: &mut CircuitBuilder, banking: PrgBanking, prg_regs: &[NodeId], d: DmaNext, w: RomStore) {
    let page_next = s.select(d.start, w.store_val, d.page);
    s.set_next(reg::DMA_PAGE, page_next);
    let row_inc = s.sum(6, &[SumTerm { node: d.row, shift: 0, neg: false }], 1);
    let row_next = s.select(d.step, row_inc, d.row);
    s.set_next(reg::DMA_ROW, row_next);
    let odd = s.bit(d.cyc_exec, 0);
    let even = s.not(odd);
    let long_next = s.select(d.start, even, d.long);
    s.set_next(reg::DMA_LONG, long_next);
    // The value of a store (or a read-modify-write's last write) to $8000-$FFFF.
    let data = s.select(w.f_store, w.store_val, w.data);
    prg_banking_next(s, banking, prg_regs, RomStore { data, ..w });
}

/// The machine's output ports: `FAULT` (opcode and PC of a JAM or unstable opcode), the configured `OUT` and
/// `EXIT` (`port_writes`), and in the NES map `IO_WRITE`, `IO_READ` and `OAM_DMA` with their IO ranges.
fn machine_ports(s: &mut CircuitBuilder, opts: &Mos6502Options, [b0, pc, fault]: [NodeId; 3], port_writes: &[(u32, NodeId)], nes_read: Option<(&NesRead, &[NodeId; 4])>, bus: NesBus) -> (Vec<PortDesc>, Vec<isa_api::IoRange>) {
    let fault_code = s.concat(&[b0, pc]);
    let mut ports = vec![PortDesc::new("FAULT", 24).with_role(PortRole::Fault)];
    s.output(0, fault_code, fault);
    for &(kind, en) in port_writes {
        let (name, role) = if kind == 1 { ("OUT", PortRole::Console) } else { ("EXIT", PortRole::Exit) };
        s.output(ports.len() as u32, bus.store_val, en);
        ports.push(PortDesc::new(name, 8).with_role(role));
    }
    let io_ranges = match nes_read {
        Some((read, dwords)) if opts.nes => nes_ports(s, &mut ports, opts.prg.banking, read, dwords, bus),
        _ => Vec::new(),
    };
    (ports, io_ranges)
}

/// `base + idx` (one 16-bit add), and whether it crossed a page (the high byte moved).
fn indexed(g: &mut Gates, base: NodeId, idx: NodeId) -> (NodeId, NodeId) {
    let i16 = g.s.zext(idx, 16);
    let sum = g.s.add(base, i16);
    let (h0, h1) = (g.s.slice(base, 8, 8), g.s.slice(sum, 8, 8));
    (sum, g.s.cmp(CmpKind::Ne, h0, h1))
}

/// The effective addresses that need no pointer read, from the operand bytes `b1`, `b2` and X, Y.
struct DirectAddresses {
    /// The operand word (absolute).
    op16: NodeId,
    ea_zp: NodeId,
    ea_zpx: NodeId,
    ea_zpy: NodeId,
    /// abs,X and abs,Y, and whether each crossed a page.
    ea_abx: NodeId,
    cross_abx: NodeId,
    ea_aby: NodeId,
    cross_aby: NodeId,
}

fn direct_addresses(g: &mut Gates, b1: NodeId, b2: NodeId, x: NodeId, y: NodeId) -> DirectAddresses {
    let zero8 = g.zero8();
    let op16 = g.word(b1, b2);
    let zpx = g.s.add(b1, x);
    let zpy = g.s.add(b1, y);
    let ea_zp = g.word(b1, zero8);
    let ea_zpx = g.word(zpx, zero8);
    let ea_zpy = g.word(zpy, zero8);
    let (ea_abx, cross_abx) = indexed(g, op16, x);
    let (ea_aby, cross_aby) = indexed(g, op16, y);
    DirectAddresses { op16, ea_zp, ea_zpx, ea_zpy, ea_abx, cross_abx, ea_aby, cross_aby }
}

/// Level A: the opcode and two operand bytes at PC, decoded.
struct Fetch {
    b: [NodeId; 3],
    dec: Decoded,
    /// The addressing mode (`mode_code`), and one select per mode (none during a DMA step, whose address is
    /// the DMA's).
    mode: NodeId,
    modes: Vec<NodeId>,
    /// The step would run an unsupported (JAM or unstable) opcode: it faults.
    fault: NodeId,
    /// The step runs a supported instruction.
    exec: NodeId,
}

fn fetch(g: &mut Gates, opts: &Mos6502Options, pc: NodeId, dma: NodeId, instr: NodeId) -> Fetch {
    let one = g.one;
    let fetched = if opts.nes { nes_read_run_of(g, &[(one, pc)], 3, false).bytes } else { read_run(g, pc, 3, false) };
    let (b0, b1, b2) = (fetched[0], fetched[1], fetched[2]);
    let (fields_table, flags_table) = control_tables();
    let cw = g.s.lookup(ctl::WIDTH, fields_table, b0);
    let fw = g.s.lookup(Flag::CondValue as u32 + 1, flags_table, b0);
    let d = Decoded { cw, fw };
    let mode = d.field(g, ctl::MODE, 4);
    // Addressing modes, none during a DMA step (whose address is the DMA's).
    let modes: Vec<NodeId> = (0..13).map(|v| g.eq_unless(mode, v, dma)).collect();
    let f_unsupported = d.flag(g, Flag::Unsupported);
    let fault = g.and1(instr, f_unsupported);
    let exec = {
        let ok = g.not1(f_unsupported);
        g.and1(instr, ok)
    };
    Fetch { b: [b0, b1, b2], dec: d, mode, modes, fault, exec }
}

/// NES map: an instruction that reads an IO register (`io`; a read or a read-modify-write, `f_rmw_mem` on
/// memory) first asks the host (port IO_READ) and changes nothing else (a stall); the next step, `waiting`,
/// runs it with the answer. Returns (the stall, `exec` without it).
fn stall(g: &mut Gates, opts: &Mos6502Options, dec: Decoded, [exec, io, waiting]: [NodeId; 3], f_rmw_mem: NodeId) -> (NodeId, NodeId) {
    let zero = g.zero;
    if opts.nes {
        let read_op = g.s.bit(dec.cw, ctl::READ_OP);
        let reads = g.or1(read_op, f_rmw_mem);
        let c = g.s.concat(&[exec, io, reads, waiting]);
        let stall = g.s.eq_const(c, 0b0111);
        let ns = g.not1(stall);
        (stall, g.and1(exec, ns))
    } else {
        (zero, exec)
    }
}

/// NES map: the OAM DMA's start (a store to $4014 that completes), its last step (`DMA_ROW` = 63) and whether
/// the next step is a DMA step.
fn dma_control(g: &mut Gates, opts: &Mos6502Options, ea: NodeId, [f_store, go]: [NodeId; 2], [dma_step, dma_row]: [NodeId; 2]) -> [NodeId; 3] {
    let zero = g.zero;
    if opts.nes {
        let hit = g.s.eq_const(ea, 0x4014);
        let st = g.and1(f_store, hit);
        let start = g.and1(go, st);
        let c = g.s.concat(&[dma_step, dma_row]);
        let last = g.s.eq_const(c, 1 | (63 << 1));
        let not_last = g.not1(last);
        let goes_on = g.and1(dma_step, not_last);
        let more = g.or1(start, goes_on);
        [start, last, more]
    } else {
        [zero, zero, zero]
    }
}

/// The index of port `IO_READ` (NES map): after `FAULT`, the configured `OUT` and `EXIT`, and `IO_WRITE`.
pub fn io_read_port(opts: &Mos6502Options) -> Option<u32> {
    opts.nes.then(|| 2 + u32::from(opts.console.is_some()) + u32::from(opts.exit.is_some()))
}

/// The machine description of the 2A03 with `opts`' console and exit addresses.
pub fn mos6502_machine(opts: &Mos6502Options) -> MachineDesc {
    let mut b = CircuitBuilder::new();
    let row_bits = if opts.nes { NES_ROW_BITS } else { ROW_BITS };
    let g = &mut Gates::new(&mut b, row_bits);
    let (one, zero) = (g.one, g.zero);

    // ---- state ----
    let state = cpu_state(g);
    let CpuState6502 { pc, a, x, y, sp, cyc, flag_c, .. } = state;

    // ---- step kind: boot, stop, interrupt, instruction ----
    let kind = step_kind(g, opts, &state);
    let StepKind { booting, stopping, waiting, dma, int_seq, take_int, nmi_vector, instr, dma_step } = kind;
    if opts.nes {
        g.prg = opts.prg;
        g.prg_regs = prg_bank_registers(g.s, opts.prg);
    }
    let (dma_page, dma_row, dma_long) = if opts.nes {
        (g.s.reg(reg::DMA_PAGE, 8), g.s.reg(reg::DMA_ROW, 6), g.s.reg(reg::DMA_LONG, 1))
    } else {
        (zero, zero, zero)
    };

    // ---- level A: fetch the opcode and two operand bytes ----
    let Fetch { b: [b0, b1, b2], dec, mode, modes, fault, exec } = fetch(g, opts, pc, dma, instr);
    let dec = dec;
    let m_acc = modes[1];
    let m_imm = modes[2];
    let (m_zp, m_zpx, m_zpy, m_abs, m_abx, m_aby) = (modes[3], modes[4], modes[5], modes[6], modes[7], modes[8]);
    let (m_izx, m_izy) = (modes[10], modes[11]);

    // ---- addresses that need no pointer ----
    let DirectAddresses { op16, ea_zp, ea_zpx, ea_zpy, ea_abx, cross_abx, ea_aby, cross_aby } = direct_addresses(g, b1, b2, x, y);

    // ---- level B: the pointer read (zero-page pointers, JMP's pointer, pulls, vectors) ----
    let PointerRead { f_pla, f_plp, f_rts, f_rti, f_brk, f_jmp_ind, one8, p: [p0, p1, p2], ptr16 } =
        pointer_read(g, opts, dec, mode, sp, [take_int, nmi_vector], [ea_zpx, ea_zp, op16]);
    let (ea_izy, cross_izy) = indexed(g, ptr16, y);

    // ---- level C: the data read at the effective address ----
    let mut ea_cases =
        vec![(m_zp, ea_zp), (m_zpx, ea_zpx), (m_zpy, ea_zpy), (m_abs, op16), (m_abx, ea_abx), (m_aby, ea_aby), (m_izx, ptr16), (m_izy, ea_izy)];
    if opts.nes {
        let z2 = g.k(2, 0);
        let ea_dma = g.s.concat(&[z2, dma_row, dma_page]);
        ea_cases.push((dma_step, ea_dma));
    }
    let DataRead { ea, ea_mem, io, rom, nes_data, dwords, operand } = data_read(g, opts, &ea_cases, [m_imm, m_acc], a, b1);

    // NES map: an instruction that reads an IO register stalls (see `stall`); from here on `exec` is an
    // instruction that completes this step: every case of the next values is gated by it.
    let f_rmw_mem = dec.flag(g, Flag::RmwMem);
    let (stall, exec) = stall(g, opts, dec, [exec, io, waiting], f_rmw_mem);
    let go = exec;

    // ---- read-modify-write stage ----
    let RmwStage { variants: rmw_variants, value: rmw_val, shift_c, alu_cin } = rmw_stage(g, dec, operand, flag_c);

    // ---- ALU stage on A and the (modified) operand ----
    let AluStage { ax, a_and_op, is_axs, sum, sum_c, sum_v, arr, cases: alu_cases_ungated } = alu_stage(g, dec, [a, x, y], operand, &rmw_variants, rmw_val, alu_cin, flag_c);

    // ---- the registers' instruction cases (each select is exec AND a decoded flag) ----
    let regs =
        register_cases(g, dec, exec, &state, &alu_cases_ungated, [operand, rmw_val, p0, sum], [is_axs, f_pla]);

    // ---- flags: each bit of P is one select over its sources (N and Z straight from every value an
    // instruction may set them by), so no intermediate "new P" is formed ----
    let alu = AluResults { sum, sum_c, sum_v, a_and_op, arr, cases: &alu_cases_ungated };
    let FlagCases { p_bit_cases, f_cli, f_sei } =
        flag_cases(g, dec, exec, alu, &regs.transfers, [operand, rmw_val, shift_c, p0], [f_brk, f_plp, f_rti]);

    // ---- program counter ----
    let PcTargets { pc_seq, taken, target, br_cross, f_jsr, jump_abs, rts_target, rti_target } =
        pc_targets(g, dec, &state, b1, ptr16, [p1, p2]);

    // ---- cycles ----
    let crossings = [(m_abx, cross_abx), (m_aby, cross_aby), (m_izy, cross_izy)];
    let Cycles { br_far, io_read_word, cyc_exec, cyc_int } = cycles(g, opts, dec, cyc, crossings, (taken, br_cross), f_rmw_mem, ea);

    // ---- stores, read-modify-writes and pushes: one write run ----
    let bus = WriteInputs {
        b2,
        ax,
        crossings: [(m_abx, cross_abx), (m_aby, cross_aby)],
        ea,
        ea_mem,
        go,
        take_int,
        int_seq,
        f_rmw_mem,
        io,
        rom,
        f_jsr,
        f_brk,
        rmw_val,
        one8,
    };
    let Writes { f_store, store_val, port_writes, exits, writes_ea, io_write } = writes(g, opts, dec, &state, bus);

    // ---- the boot step: registers from INIT ----
    let boot = boot_state(g);

    // OAM DMA (NES map): a store to $4014 starts it; the step with DMA_ROW = 63 ends it.
    let [dma_start, dma_last, dma_more] = dma_control(g, opts, ea, [f_store, go], [dma_step, dma_row]);

    // ---- next values: one select each over boot, interrupt, the instruction's cases, else keep ----
    let pk = Picker { booting, take_int, exec };
    let targets = PcTargets { pc_seq, taken, target, br_cross, f_jsr, jump_abs, rts_target, rti_target };
    let cases = InstructionCases { regs, p_bit_cases, cyc_exec, cyc_int };
    let [pc_next, a_next, x_next, y_next, s_next, p_next, cyc_next] =
        registers_next(g, opts, pk, &boot, &state, &targets, cases, [op16, ptr16], [f_jmp_ind, f_rts, f_rti, f_brk], [int_seq, dma_last, dma_long]);
    let stop = match exits {
        Some(e) => g.or1(fault, e),
        None => fault,
    };
    let [poll_i_next, busy_next, pend_next] = control_next(g, &state, &kind, [exec, stop, stall, dma_more], [f_cli, f_sei, f_plp]);
    let poll_next = poll_next(g, opts, &state, &kind, [taken, br_far, f_brk, exec], dma_row);
    let prg_regs = g.prg_regs.clone();
    // NES map: the step stores to $8000-$FFFF (the mapper's registers).
    let rom_store = if opts.nes {
        let t = g.and1(writes_ea, rom);
        g.and1(go, t)
    } else {
        zero
    };
    let s = &mut *g.s;
    s.set_next(reg::PC, pc_next);
    s.set_next(reg::A, a_next);
    s.set_next(reg::X, x_next);
    s.set_next(reg::Y, y_next);
    s.set_next(reg::S, s_next);
    s.set_next(reg::P, p_next);
    s.set_next(reg::CYC, cyc_next);
    s.set_next(reg::BUSY, busy_next);
    s.set_next(reg::RUN, one);
    s.set_next(reg::NMI_PEND, pend_next);
    s.set_next(reg::POLL_I, poll_i_next);
    s.set_next(reg::POLL, poll_next);
    if opts.nes {
        let dma = DmaNext { page: dma_page, row: dma_row, long: dma_long, start: dma_start, step: dma_step, cyc_exec };
        nes_registers_next(s, opts.prg.banking, &prg_regs, dma, RomStore { rom_store, ea, data: rmw_val, f_store, store_val, operand });
    }

    // ---- ports ----
    let bus = NesBus { rom, operand, f_store, store_val, rmw_val, ea, io_write, io_read_word, stall, dma_step };
    let (ports, io_ranges) = machine_ports(s, opts, [b0, pc, fault], &port_writes, nes_data.as_ref().map(|r| (r, &dwords)), bus);
    s.halt(stopping);

    let (registers, memories) = (register_descs(opts), memory_descs(opts, row_bits));
    let mut desc = MachineDesc::new("mos6502", registers, memories, ports, b.finish());
    desc.face.inputs = vec![PortDesc::new("NMI", 3), PortDesc::new("IRQ", 2)];
    if opts.nes {
        desc.face.inputs.push(PortDesc::new("IO_DATA", 8));
        desc.name = "mos6502-nes".into();
    }
    desc.face.io_ranges = io_ranges;
    desc.face.micro_step = Some(reg::BUSY);
    desc
}
