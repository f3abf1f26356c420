//! The reference interpreter: the NMOS 6502 as the NES's Ricoh 2A03, which has no decimal mode (the D flag is
//! stored and pushed, ADC and SBC stay binary).
//!
//! Each instruction performs the bus accesses of the real chip, cycle by cycle, and one access is one cycle, so
//! the cycle counts (page-crossing and taken-branch penalties included) are those of the hardware. Sources: the
//! NESdev wiki pages "CPU", "CPU addressing modes", "CPU unofficial opcodes", "Status flags", "CPU interrupts",
//! "CPU power up state", and the cycle-by-cycle tables of "6502_cpu.txt" (John West and Marko Mäkelä, hosted on
//! NESdev).
//!
//! **Interrupts** are polled as the chip does (the wiki's "CPU interrupts"): an instruction polls at the end of its
//! second-to-last cycle, a taken branch that stays on its page one cycle earlier (so an interrupt that comes in
//! its last two cycles waits one more instruction), an interrupt sequence or BRK not at all (its handler's first
//! instruction always runs), and an NMI edge that comes in the first four cycles of a BRK or an IRQ sequence
//! hijacks its vector (the pushed B bit stays as it was). The host reports the lines at each instruction
//! boundary as [`Lines`]: how many cycles ago a new NMI edge came, and the IRQ level at the two poll points.
//! An OAM DMA after a store (the NES's $4014, [`Cpu::dma`]) halts the CPU after that store's poll: what that
//! poll saw is serviced after the DMA, what comes during it after the next instruction.
//!
//! Not modelled: the bus values of the unstable opcodes (they fault instead).
//!
//! Tested by `tests/processortests.rs` (Tom Harte's single-instruction tests, every bus cycle compared),
//! `tests/nestest.rs`, `tests/klaus.rs` and `tests/interrupts.rs`.

use crate::bus::Bus;
use crate::opcode::{AddressingMode, Mnemonic, Opcode, decode};
use thiserror::Error;

/// The status register's bits (NESdev wiki, "Status flags").
pub mod flag {
    /// Carry.
    pub const C: u8 = 0x01;
    /// Zero.
    pub const Z: u8 = 0x02;
    /// Interrupt disable: IRQs are masked while set.
    pub const I: u8 = 0x04;
    /// Decimal: stored and pushed, but the 2A03 has no decimal mode.
    pub const D: u8 = 0x08;
    /// Break: not a bit of the register; 1 in the byte that PHP and BRK push, 0 in the one IRQ and NMI push.
    pub const B: u8 = 0x10;
    /// Bit 5: not a bit of the register; always 1 when the status is pushed (and in [`super::Cpu::p`]).
    pub const U: u8 = 0x20;
    /// Overflow.
    pub const V: u8 = 0x40;
    /// Negative.
    pub const N: u8 = 0x80;
}

/// The NMI vector's address (NESdev wiki, "CPU interrupts").
pub const NMI_VECTOR: u16 = 0xFFFA;
/// The reset vector's address.
pub const RESET_VECTOR: u16 = 0xFFFC;
/// The IRQ and BRK vector's address.
pub const IRQ_VECTOR: u16 = 0xFFFE;

/// Cycles of the reset, NMI, IRQ and BRK sequences.
pub const INTERRUPT_CYCLES: u32 = 7;

/// The cycles an OAM DMA halts the CPU when the store that starts it ends at `cycle` (the cycle count after
/// the store): 514 when that count is even, else 513 (the wiki's "513 or 514", aligned with this interpreter's
/// cycle count as blargg's cpu_interrupts_v2 4-irq_and_dma measures it). The circuit's `DMA_LONG` is the same
/// rule.
pub fn oam_dma_cycles(cycle: u64) -> u64 {
    514 - (cycle & 1)
}

/// An opcode the interpreter refuses. The CPU is left as it was before the step: PC still points at the opcode,
/// registers and the cycle counter are unchanged (the opcode's fetch did reach the bus).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum Fault {
    /// One of the twelve JAM (KIL) opcodes, which lock the NMOS 6502 up until reset.
    #[error("JAM opcode ${opcode:02X} at ${pc:04X}: the 6502 locks up until reset")]
    Jam {
        /// The opcode's address.
        pc: u16,
        /// The opcode byte.
        opcode: u8,
    },
    /// An unofficial opcode whose result depends on the chip and on analog effects (XAA, LXA, LAS, TAS, SHY,
    /// SHX, AHX).
    #[error("unstable unofficial opcode ${opcode:02X} ({mnemonic}) at ${pc:04X} is not supported")]
    Unstable {
        /// The opcode's address.
        pc: u16,
        /// The opcode byte.
        opcode: u8,
        /// Its unofficial name.
        mnemonic: Mnemonic,
    },
}

/// Whether an instruction reads its operand, writes it, or reads, modifies and writes it back: the addressing
/// modes' indexed forms spend their dummy read differently for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
    ReadModifyWrite,
}

/// What an interrupt sequence pushes and where it jumps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interrupt {
    Nmi,
    Irq,
}

/// The interrupt inputs at an instruction boundary: what the CPU's poll of the instruction just run could see.
/// The host samples its lines once per CPU cycle; cycles are counted back from the boundary (the instruction's
/// last cycle is 1 cycle before it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Lines {
    /// A rising edge of the NMI line not reported before: 0 none; `k` in 1..=3: detected `k` cycles before the
    /// boundary; 4: four or more. An instruction's poll sees an edge of age 2 or more, a taken branch on its
    /// own page's one of age 3 or more; an edge of age 4 or more hijacks a BRK or IRQ sequence just run. An
    /// edge the poll did not see stays pending in the CPU until the next poll.
    pub nmi_age: u8,
    /// The IRQ line's level where the polls look: bit 0 at the end of the second-to-last cycle (an
    /// instruction's poll), bit 1 a cycle earlier (a taken branch on its own page).
    pub irq: u8,
}

impl Lines {
    /// The widest [`Lines::nmi_age`].
    pub const NMI_AGE_MAX: u8 = 4;

    /// An NMI edge old enough for any poll and the IRQ line at `irq` at both poll points: the lines of a host
    /// that does not time its interrupts within an instruction.
    pub fn settled(nmi_edge: bool, irq: bool) -> Self {
        Lines { nmi_age: if nmi_edge { Self::NMI_AGE_MAX } else { 0 }, irq: if irq { 0b11 } else { 0 } }
    }
}

/// Where the next boundary's interrupt poll looks, set by the step just run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Poll {
    /// After an instruction: at the end of its second-to-last cycle.
    #[default]
    Normal,
    /// After a taken branch that stayed on its page: a cycle earlier.
    Early,
    /// After BRK or an IRQ sequence: no poll; a recent NMI edge (age 4 or more, or pending) hijacks its vector.
    Sequence,
    /// After an NMI sequence, a hijack, or an OAM DMA whose store's poll saw nothing: no poll.
    Skip,
    /// After an OAM DMA whose store's poll saw an interrupt: it is serviced now (NMI if one is pending).
    AfterDma,
}

impl Poll {
    /// The value of the circuit's `POLL` register.
    pub fn code(self) -> u64 {
        match self {
            Poll::Normal => 0,
            Poll::Early => 1,
            Poll::Sequence => 2,
            Poll::Skip => 3,
            Poll::AfterDma => 4,
        }
    }
}

/// The 6502's registers, its cycle counter and its interrupt inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cpu {
    /// Program counter: the address of the next opcode.
    pub pc: u16,
    /// Accumulator.
    pub a: u8,
    /// Index register X.
    pub x: u8,
    /// Index register Y.
    pub y: u8,
    /// Stack pointer: the stack is page one, the next push goes to $0100 + `s`.
    pub s: u8,
    /// Status flags N V - - D I Z C (see [`flag`]). Bit 5 reads as 1 and bit 4 (B) as 0, as nestest's log and
    /// Tom Harte's tests show them; instructions keep it so.
    pub p: u8,
    /// Cycles run since power-on (CPU cycles: on the NTSC NES, 3 PPU dots each).
    pub cycles: u64,
    /// An NMI edge reported after the poll that could have seen it, not serviced yet.
    nmi_pending: bool,
    /// The interrupt inputs for the next step ([`Cpu::set_lines`]).
    lines: Lines,
    /// Where the next step's poll looks.
    poll: Poll,
    /// After CLI, SEI and PLP: the I flag as it was before the instruction, which the interrupt poll at the start
    /// of the next step still sees (these instructions change I after the CPU polled for interrupts).
    poll_i_before: Option<bool>,
}

impl Default for Cpu {
    fn default() -> Self {
        Self::new()
    }
}

impl Cpu {
    /// The CPU as it powers up, before the reset sequence: A = X = Y = 0, S = $00, P = $24 (I set; the wiki's
    /// $34 includes the B bit, which is not stored), PC = 0, 0 cycles (NESdev wiki, "CPU power up state"). Call
    /// [`Cpu::reset`] to run the reset sequence.
    pub fn new() -> Self {
        Cpu {
            pc: 0,
            a: 0,
            x: 0,
            y: 0,
            s: 0,
            p: flag::U | flag::I,
            cycles: 0,
            nmi_pending: false,
            lines: Lines::default(),
            poll: Poll::Normal,
            poll_i_before: None,
        }
    }

    /// Power-on followed by the reset sequence: S = $FD, P = $24, PC from the reset vector, 7 cycles run.
    pub fn power_on<B: Bus + ?Sized>(bus: &mut B) -> Self {
        let mut cpu = Self::new();
        cpu.reset(bus);
        cpu
    }

    /// The reset sequence (7 cycles): like an interrupt whose three stack writes are reads, so S goes down by 3
    /// and memory is untouched; sets I and loads PC from $FFFC. Forgets a pending NMI.
    pub fn reset<B: Bus + ?Sized>(&mut self, bus: &mut B) {
        self.read(bus, self.pc);
        self.read(bus, self.pc);
        for _ in 0..3 {
            self.read(bus, 0x0100 | u16::from(self.s));
            self.s = self.s.wrapping_sub(1);
        }
        self.p |= flag::I;
        self.pc = self.read_vector(bus, RESET_VECTOR);
        self.nmi_pending = false;
        self.poll_i_before = None;
        self.poll = Poll::Normal;
    }

    /// The interrupt inputs at this boundary (see [`Lines`]); the next [`Cpu::step`] polls them. The NMI edge is
    /// reported once (a step takes it in); the IRQ levels stay until set again.
    pub fn set_lines(&mut self, lines: Lines) {
        self.lines = lines;
    }

    /// The interrupt inputs the next step sees.
    pub fn lines(&self) -> Lines {
        self.lines
    }

    /// A falling edge on the NMI input (the PPU's vertical blank, on the NES), old enough for any poll: the next
    /// [`Cpu::step`] services it, whatever the I flag. Edges raised before it is serviced count as one.
    pub fn raise_nmi(&mut self) {
        self.lines.nmi_age = Lines::NMI_AGE_MAX;
    }

    /// Sets the level of the IRQ input at both poll points (`true`: asserted). While it is asserted and I is
    /// clear, each instruction's poll services an IRQ; the device must release it.
    pub fn set_irq_line(&mut self, asserted: bool) {
        self.lines.irq = if asserted { 0b11 } else { 0 };
    }

    /// Whether an NMI edge waits to be serviced: reported in the lines for the next step, or pending since an
    /// earlier boundary.
    pub fn nmi_pending(&self) -> bool {
        self.nmi_pending || self.lines.nmi_age > 0
    }

    /// Where the next step's interrupt poll looks.
    pub fn poll(&self) -> Poll {
        self.poll
    }

    /// What the poll of the step just run sees in the current lines: `(nmi, irq)`, the IRQ unmasked.
    fn polled(&self) -> (bool, bool) {
        let (age, irq_bit) = match self.poll {
            Poll::Normal => (2, 0),
            Poll::Early => (3, 1),
            _ => return (false, false),
        };
        let masked = self.poll_i_before.unwrap_or(self.p & flag::I != 0);
        (self.nmi_pending || self.lines.nmi_age >= age, (self.lines.irq >> irq_bit) & 1 == 1 && !masked)
    }

    /// Runs one step: at an instruction's poll, a pending NMI or an unmasked IRQ is serviced (7 cycles);
    /// after BRK or an IRQ sequence, an NMI edge that came in its first four cycles takes over its vector (a step
    /// of no cycles: PC from the NMI vector); else the next instruction runs. Returns the cycles it took (also
    /// added to [`Cpu::cycles`]).
    pub fn step<B: Bus + ?Sized>(&mut self, bus: &mut B) -> Result<u32, Fault> {
        let start = self.cycles;
        let (nmi, irq) = self.polled();
        let new_edge = self.lines.nmi_age > 0;
        let hijack = self.poll == Poll::Sequence && (self.nmi_pending || self.lines.nmi_age >= Lines::NMI_AGE_MAX);
        let after_dma = self.poll == Poll::AfterDma;
        if nmi || hijack || (after_dma && (self.nmi_pending || new_edge)) {
            self.lines.nmi_age = 0;
            self.nmi_pending = false;
            if hijack {
                // The BRK or IRQ sequence fetched the NMI vector instead: no cycle of its own.
                self.pc = u16::from_le_bytes([bus.read(NMI_VECTOR), bus.read(NMI_VECTOR + 1)]);
            } else {
                self.interrupt(bus, Interrupt::Nmi);
            }
            self.poll = Poll::Skip;
        } else {
            if irq || after_dma {
                self.interrupt(bus, Interrupt::Irq);
                self.poll = Poll::Sequence;
            } else {
                // A fault leaves the CPU as it was, the reported edge included.
                self.execute(bus)?;
            }
            self.nmi_pending |= new_edge;
            self.lines.nmi_age = 0;
        }
        // At most 8 cycles a step: the difference always fits.
        Ok((self.cycles - start) as u32)
    }

    /// An OAM DMA right after the store that started it (the NES's $4014): the CPU halts for `cycles` cycles.
    /// The store's poll, with the lines of its boundary ([`Cpu::set_lines`] first), decides whether an interrupt
    /// is serviced right after the DMA; an NMI edge reported now that it did not see stays pending.
    pub fn dma(&mut self, cycles: u64) {
        let (nmi, irq) = self.polled();
        self.nmi_pending |= self.lines.nmi_age > 0;
        self.lines.nmi_age = 0;
        self.poll = if nmi || irq { Poll::AfterDma } else { Poll::Skip };
        self.cycles += cycles;
    }

    // --- bus cycles ---------------------------------------------------------------------------------------------

    fn read<B: Bus + ?Sized>(&mut self, bus: &mut B, addr: u16) -> u8 {
        self.cycles += 1;
        bus.read(addr)
    }

    fn write<B: Bus + ?Sized>(&mut self, bus: &mut B, addr: u16, value: u8) {
        self.cycles += 1;
        bus.write(addr, value);
    }

    /// Reads the byte at PC and advances PC.
    fn fetch<B: Bus + ?Sized>(&mut self, bus: &mut B) -> u8 {
        let value = self.read(bus, self.pc);
        self.pc = self.pc.wrapping_add(1);
        value
    }

    /// Reads a little-endian 16-bit operand at PC and advances PC by 2.
    fn fetch_word<B: Bus + ?Sized>(&mut self, bus: &mut B) -> u16 {
        let lo = self.fetch(bus);
        let hi = self.fetch(bus);
        u16::from_le_bytes([lo, hi])
    }

    fn read_vector<B: Bus + ?Sized>(&mut self, bus: &mut B, vector: u16) -> u16 {
        let lo = self.read(bus, vector);
        let hi = self.read(bus, vector.wrapping_add(1));
        u16::from_le_bytes([lo, hi])
    }

    fn push<B: Bus + ?Sized>(&mut self, bus: &mut B, value: u8) {
        self.write(bus, 0x0100 | u16::from(self.s), value);
        self.s = self.s.wrapping_sub(1);
    }

    fn pull<B: Bus + ?Sized>(&mut self, bus: &mut B) -> u8 {
        self.s = self.s.wrapping_add(1);
        self.read(bus, 0x0100 | u16::from(self.s))
    }

    /// The read that precedes a stack pull (the CPU reads the stack at S while it increments S).
    fn dummy_stack_read<B: Bus + ?Sized>(&mut self, bus: &mut B) {
        self.read(bus, 0x0100 | u16::from(self.s));
    }

    // --- flags --------------------------------------------------------------------------------------------------

    fn set_flag(&mut self, bit: u8, on: bool) {
        if on {
            self.p |= bit;
        } else {
            self.p &= !bit;
        }
    }

    fn set_zn(&mut self, value: u8) {
        self.set_flag(flag::Z, value == 0);
        self.set_flag(flag::N, value & 0x80 != 0);
    }

    fn carry(&self) -> u8 {
        self.p & flag::C
    }

    /// The status register from a pulled byte: bits 4 and 5 do not exist, so B reads 0 and bit 5 reads 1.
    fn set_p_from_stack(&mut self, pulled: u8) {
        self.p = (pulled & !flag::B) | flag::U;
    }

    // --- interrupts ---------------------------------------------------------------------------------------------

    /// The IRQ/NMI sequence (7 cycles): two reads at PC, PC and P pushed with B = 0, I set, PC from the vector.
    fn interrupt<B: Bus + ?Sized>(&mut self, bus: &mut B, kind: Interrupt) {
        self.read(bus, self.pc);
        self.read(bus, self.pc);
        let [lo, hi] = self.pc.to_le_bytes();
        self.push(bus, hi);
        self.push(bus, lo);
        self.push(bus, (self.p & !flag::B) | flag::U);
        self.p |= flag::I;
        let vector = match kind {
            Interrupt::Nmi => NMI_VECTOR,
            Interrupt::Irq => IRQ_VECTOR,
        };
        self.pc = self.read_vector(bus, vector);
        self.poll_i_before = None;
    }

    // --- operands -----------------------------------------------------------------------------------------------

    /// Runs the addressing cycles of a memory operand and returns its effective address (PC for immediate).
    /// Indexed reads add a dummy read of the not-yet-carried address only when the index crosses a page; writes
    /// and read-modify-writes always spend it.
    fn operand_address<B: Bus + ?Sized>(&mut self, bus: &mut B, mode: AddressingMode, access: Access) -> u16 {
        use AddressingMode::*;
        match mode {
            Immediate => {
                let addr = self.pc;
                self.pc = self.pc.wrapping_add(1);
                addr
            }
            ZeroPage => u16::from(self.fetch(bus)),
            ZeroPageX | ZeroPageY => {
                let base = self.fetch(bus);
                self.read(bus, u16::from(base));
                let index = if mode == ZeroPageX { self.x } else { self.y };
                u16::from(base.wrapping_add(index))
            }
            Absolute => self.fetch_word(bus),
            AbsoluteX => {
                let base = self.fetch_word(bus);
                self.index_address(bus, base, self.x, access)
            }
            AbsoluteY => {
                let base = self.fetch_word(bus);
                self.index_address(bus, base, self.y, access)
            }
            IndexedIndirect => {
                let operand = self.fetch(bus);
                self.read(bus, u16::from(operand));
                let pointer = operand.wrapping_add(self.x);
                let lo = self.read(bus, u16::from(pointer));
                let hi = self.read(bus, u16::from(pointer.wrapping_add(1)));
                u16::from_le_bytes([lo, hi])
            }
            IndirectIndexed => {
                let pointer = self.fetch(bus);
                let lo = self.read(bus, u16::from(pointer));
                let hi = self.read(bus, u16::from(pointer.wrapping_add(1)));
                self.index_address(bus, u16::from_le_bytes([lo, hi]), self.y, access)
            }
            // No memory operand: the decoder never pairs these modes with an operation that asks for one
            // (every opcode is run by `tests/processortests.rs` and `all_256_opcodes_step_or_fault`).
            Implied | Accumulator | Indirect | Relative => {
                unreachable!("addressing mode {mode:?} has no memory operand")
            }
        }
    }

    /// `base + index`, with the dummy read at the address whose high byte has not been carried into yet.
    fn index_address<B: Bus + ?Sized>(&mut self, bus: &mut B, base: u16, index: u8, access: Access) -> u16 {
        let addr = base.wrapping_add(u16::from(index));
        let page_crossed = (base ^ addr) & 0xFF00 != 0;
        if page_crossed || access != Access::Read {
            self.read(bus, (base & 0xFF00) | (addr & 0x00FF));
        }
        addr
    }

    // --- execution ----------------------------------------------------------------------------------------------

    fn execute<B: Bus + ?Sized>(&mut self, bus: &mut B) -> Result<(), Fault> {
        let pc = self.pc;
        let code = bus.read(pc);
        let op = decode(code);
        match op.mnemonic {
            Mnemonic::Jam => return Err(Fault::Jam { pc, opcode: code }),
            m if m.is_unsupported() => return Err(Fault::Unstable { pc, opcode: code, mnemonic: m }),
            _ => {}
        }
        // The fetch already reached the bus; count it now that the opcode is accepted.
        self.cycles += 1;
        self.pc = pc.wrapping_add(1);
        let i_before = self.p & flag::I != 0;
        self.poll = Poll::Normal;
        self.run(bus, op);
        self.poll_i_before = match op.mnemonic {
            Mnemonic::Cli | Mnemonic::Sei | Mnemonic::Plp => Some(i_before),
            _ => None,
        };
        if op.mnemonic == Mnemonic::Brk {
            self.poll = Poll::Sequence;
        }
        Ok(())
    }

    fn run<B: Bus + ?Sized>(&mut self, bus: &mut B, op: Opcode) {
        use AddressingMode::{Accumulator, Implied};
        use Mnemonic::*;
        let mode = op.mode;
        match op.mnemonic {
            // Implied: one more cycle, a read of the next byte.
            Nop if mode == Implied => {
                self.read(bus, self.pc);
            }
            Clc | Sec | Cli | Sei | Clv | Cld | Sed | Tax | Tay | Txa | Tya | Tsx | Txs | Inx | Iny | Dex | Dey => {
                self.read(bus, self.pc);
                self.implied(op.mnemonic);
            }

            // Operations that read their operand (the NOPs with an operand read it and drop it).
            Nop | Lda | Ldx | Ldy | Lax | Adc | Sbc | And | Ora | Eor | Cmp | Cpx | Cpy | Bit | Anc | Alr | Arr
            | Axs => {
                let addr = self.operand_address(bus, mode, Access::Read);
                let value = self.read(bus, addr);
                self.read_operation(op.mnemonic, value);
            }

            Sta | Stx | Sty | Sax => {
                let addr = self.operand_address(bus, mode, Access::Write);
                let value = match op.mnemonic {
                    Sta => self.a,
                    Stx => self.x,
                    Sty => self.y,
                    _ => self.a & self.x,
                };
                self.write(bus, addr, value);
            }

            // Read-modify-write: the unmodified value is written back first, then the result.
            Asl | Lsr | Rol | Ror if mode == Accumulator => {
                self.read(bus, self.pc);
                self.a = self.modify(op.mnemonic, self.a);
            }
            Asl | Lsr | Rol | Ror | Inc | Dec | Slo | Rla | Sre | Rra | Dcp | Isc => {
                let addr = self.operand_address(bus, mode, Access::ReadModifyWrite);
                let value = self.read(bus, addr);
                self.write(bus, addr, value);
                let result = self.modify(op.mnemonic, value);
                self.write(bus, addr, result);
            }

            Bpl => self.branch(bus, self.p & flag::N == 0),
            Bmi => self.branch(bus, self.p & flag::N != 0),
            Bvc => self.branch(bus, self.p & flag::V == 0),
            Bvs => self.branch(bus, self.p & flag::V != 0),
            Bcc => self.branch(bus, self.p & flag::C == 0),
            Bcs => self.branch(bus, self.p & flag::C != 0),
            Bne => self.branch(bus, self.p & flag::Z == 0),
            Beq => self.branch(bus, self.p & flag::Z != 0),

            Pha | Php => {
                self.read(bus, self.pc);
                let value = if op.mnemonic == Pha { self.a } else { self.p | flag::B | flag::U };
                self.push(bus, value);
            }
            Pla | Plp => {
                self.read(bus, self.pc);
                self.dummy_stack_read(bus);
                let value = self.pull(bus);
                if op.mnemonic == Pla {
                    self.a = value;
                    self.set_zn(value);
                } else {
                    self.set_p_from_stack(value);
                }
            }

            Jmp if mode == AddressingMode::Indirect => {
                let pointer = self.fetch_word(bus);
                let lo = self.read(bus, pointer);
                // NMOS bug: the high byte comes from the pointer's own page, $xxFF wraps to $xx00.
                let hi = self.read(bus, (pointer & 0xFF00) | (pointer.wrapping_add(1) & 0x00FF));
                self.pc = u16::from_le_bytes([lo, hi]);
            }
            Jmp => self.pc = self.fetch_word(bus),
            Jsr => {
                let lo = self.fetch(bus);
                self.dummy_stack_read(bus);
                // PC now points at the operand's high byte: the pushed return address is the last byte of JSR.
                let [ret_lo, ret_hi] = self.pc.to_le_bytes();
                self.push(bus, ret_hi);
                self.push(bus, ret_lo);
                let hi = self.read(bus, self.pc);
                self.pc = u16::from_le_bytes([lo, hi]);
            }
            Rts => {
                self.read(bus, self.pc);
                self.dummy_stack_read(bus);
                let lo = self.pull(bus);
                let hi = self.pull(bus);
                self.pc = u16::from_le_bytes([lo, hi]);
                self.read(bus, self.pc);
                self.pc = self.pc.wrapping_add(1);
            }
            Rti => {
                self.read(bus, self.pc);
                self.dummy_stack_read(bus);
                let status = self.pull(bus);
                self.set_p_from_stack(status);
                let lo = self.pull(bus);
                let hi = self.pull(bus);
                self.pc = u16::from_le_bytes([lo, hi]);
            }
            Brk => {
                // The byte after BRK is skipped: the pushed return address is BRK's address + 2.
                self.fetch(bus);
                let [lo, hi] = self.pc.to_le_bytes();
                self.push(bus, hi);
                self.push(bus, lo);
                self.push(bus, self.p | flag::B | flag::U);
                self.p |= flag::I;
                self.pc = self.read_vector(bus, IRQ_VECTOR);
            }

            // LXA (ATX) on the 2A03: A = X = the immediate (the "magic constant" of (A | magic) & imm is $FF
            // there; blargg's instr_test-v5 checks this).
            Lxa => {
                let value = self.fetch(bus);
                self.a = value;
                self.x = value;
                self.set_zn(value);
            }
            // SHY abs,X and SHX abs,Y: store the register AND (the base address's high byte + 1); when the index
            // crosses a page, that value also replaces the address's high byte (NESdev wiki, "CPU unofficial
            // opcodes"; blargg's instr_test-v5 checks it).
            Shy | Shx => {
                let base = self.fetch_word(bus);
                let (register, index) = if op.mnemonic == Shy { (self.y, self.x) } else { (self.x, self.y) };
                let addr = self.index_address(bus, base, index, Access::Write);
                let value = register & ((base >> 8) as u8).wrapping_add(1);
                let addr = if (base ^ addr) & 0xFF00 != 0 { (u16::from(value) << 8) | (addr & 0x00FF) } else { addr };
                self.write(bus, addr, value);
            }

            // Refused by `execute` before it gets here.
            Xaa | Las | Tas | Ahx | Jam => {
                unreachable!("unsupported opcode ${:02X} reached execution", op.code)
            }
        }
    }

    /// The register and flag operations of the one-byte instructions.
    fn implied(&mut self, mnemonic: Mnemonic) {
        use Mnemonic::*;
        match mnemonic {
            Clc => self.set_flag(flag::C, false),
            Sec => self.set_flag(flag::C, true),
            Cli => self.set_flag(flag::I, false),
            Sei => self.set_flag(flag::I, true),
            Clv => self.set_flag(flag::V, false),
            Cld => self.set_flag(flag::D, false),
            Sed => self.set_flag(flag::D, true),
            Tax => {
                self.x = self.a;
                self.set_zn(self.x);
            }
            Tay => {
                self.y = self.a;
                self.set_zn(self.y);
            }
            Txa => {
                self.a = self.x;
                self.set_zn(self.a);
            }
            Tya => {
                self.a = self.y;
                self.set_zn(self.a);
            }
            Tsx => {
                self.x = self.s;
                self.set_zn(self.x);
            }
            // TXS sets no flags.
            Txs => self.s = self.x,
            Inx => {
                self.x = self.x.wrapping_add(1);
                self.set_zn(self.x);
            }
            Iny => {
                self.y = self.y.wrapping_add(1);
                self.set_zn(self.y);
            }
            Dex => {
                self.x = self.x.wrapping_sub(1);
                self.set_zn(self.x);
            }
            Dey => {
                self.y = self.y.wrapping_sub(1);
                self.set_zn(self.y);
            }
            _ => {}
        }
    }

    /// The operations on a read operand.
    fn read_operation(&mut self, mnemonic: Mnemonic, value: u8) {
        use Mnemonic::*;
        match mnemonic {
            Lda => {
                self.a = value;
                self.set_zn(value);
            }
            Ldx => {
                self.x = value;
                self.set_zn(value);
            }
            Ldy => {
                self.y = value;
                self.set_zn(value);
            }
            Lax => {
                self.a = value;
                self.x = value;
                self.set_zn(value);
            }
            Adc => self.add_with_carry(value),
            Sbc => self.add_with_carry(!value),
            And => {
                self.a &= value;
                self.set_zn(self.a);
            }
            Ora => {
                self.a |= value;
                self.set_zn(self.a);
            }
            Eor => {
                self.a ^= value;
                self.set_zn(self.a);
            }
            Cmp => self.compare(self.a, value),
            Cpx => self.compare(self.x, value),
            Cpy => self.compare(self.y, value),
            Bit => {
                self.set_flag(flag::Z, self.a & value == 0);
                self.set_flag(flag::N, value & 0x80 != 0);
                self.set_flag(flag::V, value & 0x40 != 0);
            }
            // ANC: AND, then C = N.
            Anc => {
                self.a &= value;
                self.set_zn(self.a);
                self.set_flag(flag::C, self.a & 0x80 != 0);
            }
            // ALR: AND, then LSR A.
            Alr => {
                let anded = self.a & value;
                self.a = self.shift_right(anded, false);
            }
            // ARR: AND, then ROR A, with C = bit 6 and V = bit 6 XOR bit 5 of the result.
            Arr => {
                let result = ((self.a & value) >> 1) | (self.carry() << 7);
                self.a = result;
                self.set_zn(result);
                self.set_flag(flag::C, result & 0x40 != 0);
                self.set_flag(flag::V, ((result >> 6) ^ (result >> 5)) & 1 != 0);
            }
            // AXS (SBX): X = (A AND X) - operand, flags as CMP; A and V untouched.
            Axs => {
                let anded = self.a & self.x;
                self.compare(anded, value);
                self.x = anded.wrapping_sub(value);
            }
            _ => {}
        }
    }

    /// The read-modify-write operations: returns the byte written back, and applies the unofficial combined
    /// operations' second half to A and the flags.
    fn modify(&mut self, mnemonic: Mnemonic, value: u8) -> u8 {
        use Mnemonic::*;
        match mnemonic {
            Asl => self.shift_left(value, false),
            Rol => {
                let carry_in = self.carry() != 0;
                self.shift_left(value, carry_in)
            }
            Lsr => self.shift_right(value, false),
            Ror => {
                let carry_in = self.carry() != 0;
                self.shift_right(value, carry_in)
            }
            Inc => {
                let result = value.wrapping_add(1);
                self.set_zn(result);
                result
            }
            Dec => {
                let result = value.wrapping_sub(1);
                self.set_zn(result);
                result
            }
            // SLO: ASL, then ORA.
            Slo => {
                let result = self.shift_left(value, false);
                self.read_operation(Ora, result);
                result
            }
            // RLA: ROL, then AND.
            Rla => {
                let carry_in = self.carry() != 0;
                let result = self.shift_left(value, carry_in);
                self.read_operation(And, result);
                result
            }
            // SRE: LSR, then EOR.
            Sre => {
                let result = self.shift_right(value, false);
                self.read_operation(Eor, result);
                result
            }
            // RRA: ROR, then ADC (with the carry the rotation shifted out).
            Rra => {
                let carry_in = self.carry() != 0;
                let result = self.shift_right(value, carry_in);
                self.add_with_carry(result);
                result
            }
            // DCP: DEC, then CMP.
            Dcp => {
                let result = value.wrapping_sub(1);
                self.compare(self.a, result);
                result
            }
            // ISC: INC, then SBC.
            Isc => {
                let result = value.wrapping_add(1);
                self.add_with_carry(!result);
                result
            }
            _ => value,
        }
    }

    /// `value << 1` with `carry_in` as bit 0; C = the bit shifted out; sets N and Z.
    fn shift_left(&mut self, value: u8, carry_in: bool) -> u8 {
        let result = (value << 1) | u8::from(carry_in);
        self.set_flag(flag::C, value & 0x80 != 0);
        self.set_zn(result);
        result
    }

    /// `value >> 1` with `carry_in` as bit 7; C = the bit shifted out; sets N and Z.
    fn shift_right(&mut self, value: u8, carry_in: bool) -> u8 {
        let result = (value >> 1) | (u8::from(carry_in) << 7);
        self.set_flag(flag::C, value & 0x01 != 0);
        self.set_zn(result);
        result
    }

    /// Binary ADC: A = A + value + C, with C the carry out and V the signed overflow. SBC is ADC of the
    /// complement. The 2A03 ignores D.
    fn add_with_carry(&mut self, value: u8) {
        let sum = u16::from(self.a) + u16::from(value) + u16::from(self.carry());
        let result = sum as u8;
        self.set_flag(flag::C, sum > 0xFF);
        self.set_flag(flag::V, (!(self.a ^ value) & (self.a ^ result) & 0x80) != 0);
        self.a = result;
        self.set_zn(result);
    }

    /// CMP, CPX, CPY: flags of `register - value`, C = no borrow.
    fn compare(&mut self, register: u8, value: u8) {
        self.set_flag(flag::C, register >= value);
        self.set_zn(register.wrapping_sub(value));
    }

    /// A conditional branch: 2 cycles, 3 when taken, 4 when the target is on another page.
    fn branch<B: Bus + ?Sized>(&mut self, bus: &mut B, taken: bool) {
        let offset = self.fetch(bus) as i8;
        if !taken {
            return;
        }
        self.read(bus, self.pc);
        let target = self.pc.wrapping_add_signed(i16::from(offset));
        if (target ^ self.pc) & 0xFF00 != 0 {
            // The low byte is added first; this read happens before the high byte is fixed.
            self.read(bus, (self.pc & 0xFF00) | (target & 0x00FF));
        } else {
            // Its third cycle does not poll: the poll of its second cycle counts.
            self.poll = Poll::Early;
        }
        self.pc = target;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bus::FlatRam;

    /// Every opcode, from a state with a page-crossing index and a taken branch, steps or faults; none panics,
    /// and the step's cycle count is within the 6502's 2-8.
    #[test]
    fn all_256_opcodes_step_or_fault() {
        let mut faults = 0;
        for code in 0..=255u8 {
            let mut ram = FlatRam::new();
            ram.write(0x0200, code);
            ram.write(0x0201, 0xF0);
            ram.write(0x0202, 0x12);
            let mut cpu = Cpu { pc: 0x0200, x: 0x80, y: 0x90, s: 0xFD, ..Cpu::new() };
            match cpu.step(&mut ram) {
                Ok(cycles) => assert!((2..=8).contains(&cycles), "opcode ${code:02X}: {cycles} cycles"),
                Err(fault) => {
                    faults += 1;
                    assert_eq!(cpu.pc, 0x0200, "{fault}");
                    assert_eq!(cpu.cycles, 0, "{fault}");
                }
            }
        }
        assert_eq!(faults, 12 + 5, "the 12 JAMs and the 5 unstable opcodes the 2A03 does not do consistently");
    }
}
