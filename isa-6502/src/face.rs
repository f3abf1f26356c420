//! The 2A03 machine's public face: how it is built ([`Mos6502Options`], [`PrgRom`]), the indices of its
//! registers ([`reg`]), memories ([`mem`]) and input ports ([`input`]), the `BUSY` codes, where the boot step
//! finds the initial state ([`init_row`]), the byte banks' addressing ([`nes_bank_address`],
//! [`bank_byte_address`]) and the registers, memories and ports the description declares. The circuit itself is
//! [`crate::circuit`].
//!
//! # State
//!
//! | item | kind | width | meaning |
//! |---|---|---|---|
//! | `PC` | register | 16 | address of the next opcode |
//! | `A`, `X`, `Y`, `S` | registers | 8 | accumulator, index registers, stack pointer (next push at $0100 + S) |
//! | `P` | register | 8 | N V 1 B D I Z C, stored with bit 5 = 1 and B = 0 (as the interpreter keeps it) |
//! | `CYC` | register | 32 | bits 3-31: CPU cycles since power-on modulo 2^29 (five minutes of the NES's CPU clock: the NES host extends it), from which the host clocks its PPU and APU ([`cycles_of`]); bits 0-2: where the next boundary's poll looks ([`poll_of`], below) |
//! | `BUSY` | register | 8 | micro-step: 0 after a step that retired an instruction or took an interrupt; 1 after the boot step; 255 = stopping (the next step halts) |
//! | `RUN` | register | 1 | 0 until the boot step has loaded the initial registers from `INIT` |
//! | `NMI_PEND` | register | 1 | an NMI edge came too late for the poll that could have seen it: the next poll services it |
//! | `POLL_I` | register | 2 | bit 0: the last instruction was CLI, SEI or PLP; bit 1: I before it (the next interrupt poll sees that I) |
//! | `CYC` bits 0-2 (`POLL`) | | 3 | where the next boundary's poll looks ([`crate::Poll::code`]): 0 an instruction's second-to-last cycle, 1 a cycle earlier (a taken branch on its page), 2 none after BRK or an IRQ sequence (a recent NMI hijacks its vector), 3 none, 4 after an OAM DMA whose store's poll saw an interrupt |
//! | `M0`..`M3` | memories, 16,384 x 8 | | the 64 KiB address space in four byte banks: bank k holds the bytes at `addr % 4 == k`, row `addr / 4` |
//! | `INIT` | memory, 16 x 8 | | the state the boot step loads: PC lo, PC hi, A, X, Y, S, P, CYC (4 bytes, low first) |
//! | `OUT` | port, 8, console | | a store to the console address (when configured) |
//! | `EXIT` | port, 8, exit | | a store to the exit address (when configured): the exit status; the machine halts |
//! | `FAULT` | port, 24, fault | | opcode (bits 0..8) and PC (bits 8..24) of a JAM or unstable opcode; the machine halts |
//! | `NMI` | input, 3 | | a new NMI edge's age in cycles before the boundary (0 none, 1-3, 4 = four or more): [`crate::Lines::nmi_age`] |
//! | `IRQ` | input, 2 | | the IRQ level at the two poll points (bit 0: an instruction's, bit 1: a cycle earlier): [`crate::Lines::irq`] |
//!
//! The NES map adds the registers, memories and ports its items below name (OAM DMA, PRG ROM and its banking,
//! the IO ports).

use isa_api::circuit::Circuit;
use isa_api::{IoRange, MachineDesc, MemoryDesc, PortDesc, RegisterDesc};

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
    pub(crate) fn bank16_bits(&self) -> u32 {
        self.kib.trailing_zeros() - 4
    }
    /// Bits of MMC1's PRG bank register (at most 4: a 512 KiB board's fifth bank bit is `MMC1_OUTER`).
    pub(crate) fn mmc1_prg_bits(&self) -> u32 {
        self.bank16_bits().min(4)
    }
    /// Whether this is a 512 KiB MMC1 board (SUROM), with the `MMC1_OUTER` register.
    pub(crate) fn mmc1_outer(&self) -> bool {
        self.banking == PrgBanking::Mmc1 && self.bank16_bits() > 4
    }
    /// Bits of an 8 KiB bank number.
    pub(crate) fn bank8_bits(&self) -> u32 {
        self.kib.trailing_zeros() - 3
    }
    /// Bits of a bank number of the board's window size (16 KiB for UxROM and MMC1, 8 KiB for MMC3).
    pub(crate) fn window_bank_bits(&self) -> u32 {
        if self.banking == PrgBanking::Mmc3 { self.bank8_bits() } else { self.bank16_bits() }
    }
}

/// Register indices, in the description's order.
pub mod reg {
    /// The program counter (16 bits).
    pub const PC: u32 = 0;
    /// The accumulator.
    pub const A: u32 = 1;
    /// Index register X.
    pub const X: u32 = 2;
    /// Index register Y.
    pub const Y: u32 = 3;
    /// The stack pointer.
    pub const S: u32 = 4;
    /// The status flags (N V 1 B D I Z C).
    pub const P: u32 = 5;
    /// CPU cycles since power-on (modulo 2^[`super::CYCLE_BITS`], [`super::cycles_of`]) above the 3 bits of `POLL`
    /// ([`super::poll_of`]): where the next boundary's poll looks ([`crate::Poll::code`]). The poll point
    /// changes at most instructions (a taken branch polls a cycle earlier than a load) and the cycle count's
    /// low bits at every one: in one trace field, the first chunk of `CYC`, the poll costs no token of its own.
    pub const CYC: u32 = 6;
    /// The micro-step (see the `BUSY_*` constants).
    pub const BUSY: u32 = 7;
    /// 0 until the boot step.
    pub const RUN: u32 = 8;
    /// An NMI edge the next poll services.
    pub const NMI_PEND: u32 = 9;
    /// The I flag the next interrupt poll sees (after CLI, SEI or PLP).
    pub const POLL_I: u32 = 10;
    /// NES map: the page an OAM DMA copies (the value stored to $4014).
    pub const DMA_PAGE: u32 = 11;
    /// NES map: the next group of four bytes of the OAM DMA (0..64).
    pub const DMA_ROW: u32 = 12;
    /// NES map: the DMA takes 514 cycles (its store ended on an even cycle), else 513.
    pub const DMA_LONG: u32 = 13;
    /// NES map with UxROM banking: the 16 KiB bank at $8000.
    pub const PRG_BANK: u32 = 14;
    /// NES map with MMC3 banking: the bank select's register index (bits 0-2) and PRG mode (bit 3).
    pub const MMC3_SELECT: u32 = 14;
    /// NES map with MMC3 banking: the PRG bank registers `R6` and `R7`.
    pub const MMC3_R6: u32 = 15;
    /// NES map with MMC3 banking: `R7`.
    pub const MMC3_R7: u32 = 16;
    /// NES map with MMC1 banking: the serial port's bits so far (4) and their count (0-4), the PRG mode (control
    /// bits 2-3) and the PRG bank (bits 0-3).
    pub const MMC1_SHIFT: u32 = 14;
    /// NES map with MMC1 banking: the serial port's bit count.
    pub const MMC1_COUNT: u32 = 15;
    /// NES map with MMC1 banking: the PRG mode.
    pub const MMC1_MODE: u32 = 16;
    /// NES map with MMC1 banking: the PRG bank.
    pub const MMC1_PRG: u32 = 17;
    /// NES map with 512 KiB MMC1 banking (SUROM): the 256 KiB half, bit 4 of the last write to CHR bank 0.
    pub const MMC1_OUTER: u32 = 18;
}

/// Memory indices: the four byte banks, then `INIT`; in the NES map, then the PRG ROM's two halves.
pub mod mem {
    /// The four byte banks `M0`..`M3`.
    pub const BANKS: [u32; 4] = [0, 1, 2, 3];
    /// The state the boot step loads ([`super::init_row`]).
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
    /// A new NMI edge's age ([`crate::Lines::nmi_age`]).
    pub const NMI: u32 = 0;
    /// The IRQ level at the two poll points ([`crate::Lines::irq`]).
    pub const IRQ: u32 = 1;
    /// NES map: the host's answer to the IO read the machine requests on port `IO_READ`, injected within that
    /// step, right after the request (`IO_READ` leads the step's trace; [`isa_api::PortDesc::answers`]).
    pub const IO_DATA: u32 = 2;
}

/// `BUSY` during an OAM DMA (NES map): a store to $4014 starts it; 64 steps each read four bytes of the page
/// and write them on port `OAM_DMA`; the last adds the DMA's 513 or 514 cycles ([`crate::oam_dma_cycles`]) and
/// retires the store.
pub const BUSY_DMA: u64 = 3;

/// Rows of `INIT`: where the boot step finds each register.
pub mod init_row {
    /// PC's low byte.
    pub const PC_LO: u64 = 0;
    /// PC's high byte.
    pub const PC_HI: u64 = 1;
    /// A.
    pub const A: u64 = 2;
    /// X.
    pub const X: u64 = 3;
    /// Y.
    pub const Y: u64 = 4;
    /// S.
    pub const S: u64 = 5;
    /// P.
    pub const P: u64 = 6;
    /// Four bytes, low first.
    pub const CYC: u64 = 7;
}

/// `BUSY` after a stop (exit or fault): the next step halts.
pub const BUSY_STOPPING: u64 = 255;

/// Bank address width: 16,384 rows of each of the four banks.
pub(crate) const ROW_BITS: u32 = 14;

/// NES map: bank address width. The banks hold only the 10 KiB of RAM, at a compact address
/// ([`nes_bank_address`]): PRG RAM ($6000-$7FFF) at 0x0000-0x1FFF, the 2 KiB of RAM at 0x2000-0x27FF (2,560 of
/// the 4,096 rows of each bank). The PRG ROM is in its own memories, four bytes a row.
pub(crate) const NES_ROW_BITS: u32 = 12;

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

/// The index of port `IO_READ` (NES map): after `FAULT`, the configured `OUT` and `EXIT`, and `IO_WRITE`.
pub fn io_read_port(opts: &Mos6502Options) -> Option<u32> {
    opts.nes.then(|| 2 + u32::from(opts.console.is_some()) + u32::from(opts.exit.is_some()))
}

/// NES map: the register code port `IO_WRITE` carries (in its low byte, the value above it) for a store to
/// `addr` in $2000-$5FFF or $8000-$FFFF: `addr`'s low five bits, and above them its region, `0` the PPU's
/// registers ($2000-$3FFF), `1` the APU's and pads' ($4000-$401F), `2` the cartridge's expansion area
/// ($4020-$5FFF, no registers on mappers 0-4), `4 | A13 | A14 << 1` the mapper's ($8000-$FFFF). Every register
/// of the console and of mappers 0-4 is named by these bits (the PPU's mirrored every 8 bytes; MMC1 decodes A13
/// and A14, MMC3 also A0; NESdev wiki, "PPU registers", "MMC1", "MMC3"), so one token holds it where the
/// address took two. [`nes_io_write_address`] is a CPU address with the same effect.
pub fn nes_io_write_code(addr: u16) -> u8 {
    let lo5 = (addr & 0x1F) as u8;
    let region = match addr {
        0x2000..=0x3FFF => 0,
        0x4000..=0x401F => 1,
        0x8000..=0xFFFF => 4 | ((addr >> 13) & 3) as u8,
        _ => 2,
    };
    lo5 | region << 5
}

/// NES map: a CPU address that [`nes_io_write_code`] takes to `code`, with the same effect on the console's
/// registers and a mapper 0-4's (the first of them).
pub fn nes_io_write_address(code: u8) -> u16 {
    let lo5 = u16::from(code & 0x1F);
    match code >> 5 {
        0 => 0x2000 | lo5,
        1 => 0x4000 | lo5,
        r if r >= 4 => 0x8000 | (u16::from(r) & 3) << 13 | lo5,
        _ => 0x4020 | lo5,
    }
}

/// NES map: the code of an IO read of `addr` that asks the host (port `IO_READ`, below the read's cycle within
/// its instruction, in bits 4-7): the PPU's registers ($2000-$3FFF, mirrored every 8 bytes) `addr & 7`, the
/// APU's status and the pads ($4015-$4017) `8 | addr & 3`. `None` for the other IO addresses ($4000-$4014,
/// $4018-$5FFF): nothing answers there on the console and mappers 0-4, and the CPU reads its open data bus, the
/// address's high byte (its last fetched operand byte; NESdev wiki, "Open bus behavior"), which the circuit
/// does itself. Also `None` outside $2000-$5FFF (memory).
pub fn nes_io_read_code(addr: u16) -> Option<u8> {
    match addr {
        0x2000..=0x3FFF => Some((addr & 7) as u8),
        0x4015..=0x4017 => Some(8 | (addr & 3) as u8),
        _ => None,
    }
}

/// NES map: the register an IO read code ([`nes_io_read_code`]) names, as a CPU address (the first of its
/// mirrors).
pub fn nes_io_read_address(code: u8) -> u16 {
    if code & 8 == 0 { 0x2000 | u16::from(code & 7) } else { 0x4014 | u16::from(code & 3) }
}

/// NES map: a value of port `IO_READ` as (the register's CPU address, [`nes_io_read_address`]; the read's cycle
/// within its instruction, 0 the opcode fetch).
pub fn nes_io_read_request(value: u64) -> (u16, u32) {
    (nes_io_read_address((value & 0xF) as u8), ((value >> 4) & 0xF) as u32)
}

/// NES map: a value of port `IO_WRITE` as (the register's CPU address, [`nes_io_write_address`]; the byte
/// written).
pub fn nes_io_write(value: u64) -> (u16, u8) {
    (nes_io_write_address(value as u8), (value >> 8) as u8)
}

/// Bits of `POLL` at the bottom of register `CYC` ([`reg::CYC`]).
pub const POLL_BITS: u32 = 3;

/// Bits of the cycle count above them: the count is modulo 2^29, and `CYC` 32 bits wide (a wider register
/// would widen every DeltaNet value head of the woven machine).
pub const CYCLE_BITS: u32 = 29;

/// The cycle counts `CYC` holds: `count & CYCLE_MASK` is what it keeps of `count`.
pub const CYCLE_MASK: u64 = (1 << CYCLE_BITS) - 1;

/// The CPU cycle count (modulo 2^[`CYCLE_BITS`]) in a value of register `CYC`.
pub fn cycles_of(cyc: u64) -> u64 {
    cyc >> POLL_BITS
}

/// Where the next boundary's poll looks ([`crate::Poll::code`]) in a value of register `CYC`.
pub fn poll_of(cyc: u64) -> u64 {
    cyc & ((1 << POLL_BITS) - 1)
}

/// The seven architectural registers PC, A, X, Y, S, P and the cycle count, from register values by index
/// (`reg(reg::PC)` ..): what the interpreter's [`crate::front::cpu_registers`] gives.
pub fn architectural_registers(reg: impl Fn(u32) -> u64) -> [u64; 7] {
    [reg(reg::PC), reg(reg::A), reg(reg::X), reg(reg::Y), reg(reg::S), reg(reg::P), cycles_of(reg(reg::CYC))]
}

/// The registers of the machine built with `opts`, in [`reg`]'s order.
pub(crate) fn register_descs(opts: &Mos6502Options) -> Vec<RegisterDesc> {
    let r = |name: &str, width: u32| RegisterDesc { name: name.into(), width };
    let mut registers = vec![
        r("PC", 16),
        r("A", 8),
        r("X", 8),
        r("Y", 8),
        r("S", 8),
        r("P", 8),
        r("CYC", CYCLE_BITS + POLL_BITS),
        r("BUSY", 8),
        r("RUN", 1),
        r("NMI_PEND", 1),
        r("POLL_I", 2),
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
pub(crate) fn memory_descs(opts: &Mos6502Options, row_bits: u32) -> Vec<MemoryDesc> {
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

/// Row address width of the four byte banks with `opts`: [`ROW_BITS`], or [`NES_ROW_BITS`] in the NES map.
pub(crate) fn bank_row_bits(opts: &Mos6502Options) -> u32 {
    if opts.nes { NES_ROW_BITS } else { ROW_BITS }
}

/// The machine description: `circuit` with the registers, memories, input ports and IO ranges of `opts` and the
/// output `ports` the circuit writes.
pub(crate) fn machine_desc(opts: &Mos6502Options, circuit: Circuit, ports: Vec<PortDesc>, io_ranges: Vec<IoRange>) -> MachineDesc {
    let (registers, memories) = (register_descs(opts), memory_descs(opts, bank_row_bits(opts)));
    let mut desc = MachineDesc::new("mos6502", registers, memories, ports, circuit);
    desc.face.inputs = vec![PortDesc::new("NMI", 3), PortDesc::new("IRQ", 2)];
    if opts.nes {
        // The answer to an IO read, injected within the step that asks on `IO_READ` (see `crate::circuit`).
        let read_port = io_read_port(opts).expect("the NES map has IO ports");
        desc.face.inputs.push(PortDesc::new("IO_DATA", 8).answering(read_port));
        desc.name = "mos6502-nes".into();
    }
    desc.face.io_ranges = io_ranges;
    desc.face.micro_step = Some(reg::BUSY);
    desc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every IO register a store can reach, with its code and back: the same register of the PPU (mirrored
    /// every 8 bytes), of the APU and pads, of MMC1 (A13, A14) and MMC3 (A0, A13, A14), and the expansion area
    /// as such.
    #[test]
    fn io_write_codes_name_every_register() {
        for addr in (0x2000..=0x5FFFu16).chain(0x8000..=0xFFFF) {
            let code = nes_io_write_code(addr);
            let back = nes_io_write_address(code);
            assert_eq!(nes_io_write_code(back), code, "${addr:04X}");
            let same = match addr {
                0x2000..=0x3FFF => (0x2000..=0x3FFF).contains(&back) && back & 7 == addr & 7,
                0x4000..=0x401F => back == addr,
                0x4020..=0x5FFF => (0x4020..=0x5FFF).contains(&back),
                _ => back >= 0x8000 && back & 0x6001 == addr & 0x6001,
            };
            assert!(same, "${addr:04X} -> code {code:#04x} -> ${back:04X}");
        }
    }

    /// The reads the host answers (the PPU's registers, $4015-$4017) keep their register; the other IO
    /// addresses have no code (the open bus).
    #[test]
    fn io_read_codes_name_the_registers_the_host_answers() {
        for addr in 0x2000..=0x5FFFu16 {
            match (addr, nes_io_read_code(addr)) {
                (0x2000..=0x3FFF, Some(c)) => assert_eq!(nes_io_read_address(c), 0x2000 | (addr & 7), "${addr:04X}"),
                (0x4015..=0x4017, Some(c)) => assert_eq!(nes_io_read_address(c), addr),
                (_, c) => assert!(c.is_none() && !(0x2000..=0x3FFF).contains(&addr), "${addr:04X}: {c:?}"),
            }
        }
        assert_eq!(nes_io_read_request(0x5A), (0x4016, 5));
        assert_eq!(nes_io_write(0x8121), (0x4001, 0x81));
        assert_eq!(nes_io_write(0x07_A3), (0xA003, 0x07));
    }
}
