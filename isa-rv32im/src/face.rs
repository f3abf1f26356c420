//! The RV32IM+Zba machine's public face: the indices of its registers, memories, inputs and ports, its options
//! (RAM geometry and layout), its fault codes, how RAM bytes map onto its memories, and `machine`, which names
//! the state and declares the ports around a circuit. [`crate::circuit`] builds the circuit and re-exports all of
//! this, so that `isa_rv32im::circuit::{reg, mem, port, input, FaultCode, ...}` keep working.
//!
//! # State (what a step writes to the trace when it changes)
//!
//! | item | kind | width | meaning |
//! |---|---|---|---|
//! | `PC` | register | log2(RAM/4) | word index of pc relative to the RAM base (RV32IM without C: pc is 4-aligned) |
//! | `BUSY` | register | 8 | micro-step: 0 = an instruction retired this step; else inside a multi-step instruction; 255 = stopping |
//! | `DIV_Q` | register | 32 | division: the dividend's magnitude, whose 4-bit digits the iterations replace by the quotient's |
//! | `X` | memory, 64 x 32 | | rows 0..31 = x0..x31 (row 0 is never written), rows 32..34 = micro-code scratch |
//! | `RAM` | memory, (RAM/4) x 32 | | [`MemoryLayout::Words`] (default): RAM as little-endian 32-bit words |
//! | `RAM0..RAM3` | memories, (RAM/4) x 8 | | [`MemoryLayout::ByteLanes`]: lane i holds the bytes at `(addr - base) % 4 == i` |
//! | `OUT` | port, 8 | | console byte (ECALL write, fd 1 or 2) |
//! | `EXIT` | port, 8 | | exit status (`a0 & 0xff`, as the process status under qemu-riscv32) |
//! | `FAULT` | port, 40 | | bits 0..8: [`FaultCode`] bits; bits 8..40: the faulting address ([`fault_address`]); the machine halts on the next step |
//! | `IN_REQ` | port, 1 | | read(2) asks for the next input byte; the host answers on `STDIN` (or `STDIN_EOF`) before the next step |
//! | `STDIN`, `STDIN_EOF` | inputs, 8 and 1 | | the byte asked for; 1 = the input has ended |
//!
//! A step writes only the 8-bit chunks that changed (`isa_api::trace`): at most 26 trace tokens (PC 2, BUSY 1,
//! DIV_Q 4, X write 1 + 4, RAM write 2 + 4, OUT 1, EXIT 1, FAULT 5: code and address, IN_REQ 1), 32 with byte
//! lanes (four lane writes of 2 + 1), and typically two to four. Retire rule (no ISA knowledge needed): a step retired
//! one instruction iff `BUSY` is 0 after it. A stop (exit, fault, EBREAK) is two steps: the first emits `EXIT`
//! or `FAULT` and sets `BUSY = 255` (pc stays at the ECALL/faulting instruction); the second is the single
//! token `HALT`.

use isa_api::{Circuit, MachineDesc, MemoryDesc, PortDesc, PortRole, RegisterDesc};
use thiserror::Error;

/// Register indices of the machine.
pub mod reg {
    /// Word index of pc relative to the RAM base.
    pub const PC: u32 = 0;
    /// Micro-step counter; 0 after a step that retired an instruction.
    pub const BUSY: u32 = 1;
    /// Division: |dividend|, whose 4-bit groups the iterations replace by quotient digits from the top.
    pub const DIV_Q: u32 = 2;
}

/// Memory indices of the machine.
pub mod mem {
    /// Integer register file x0..x31 plus scratch row 32.
    pub const X: u32 = 0;
    /// Byte lane `i` of RAM is memory `RAM0 + i` ([`super::MemoryLayout::ByteLanes`]); with
    /// [`super::MemoryLayout::Words`] memory `RAM0` is the whole RAM in 32-bit words.
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
    /// Fault code ([`super::FaultCode`], bits 0..8) and faulting address (bits 8..40, [`super::fault_address`]).
    pub const FAULT: u32 = 2;
    /// read(2) asks the host for the next input byte (value 1): the host injects it on [`super::input::STDIN`],
    /// or [`super::input::STDIN_EOF`] = 1 at end of input, before the next step.
    pub const IN_REQ: u32 = 3;
}

/// Input ports of the machine (latches the host sets by injecting tokens between steps).
pub mod input {
    /// The byte a read(2) asked for.
    pub const STDIN: u32 = 0;
    /// 1: the input has ended (read(2) returns the bytes it stored so far).
    pub const STDIN_EOF: u32 = 1;
}

/// `BUSY` value of the step after an exit or fault: the machine halts.
pub const BUSY_STOPPING: u64 = 255;
/// Width of the `BUSY` register.
pub(crate) const BUSY_BITS: u32 = 8;

/// Why the circuit stopped. The `FAULT` port carries one bit per kind (the value of the code), so the circuit
/// needs no priority logic; when several bits are set (e.g. an illegal word that also looks like a load out of
/// RAM) the lowest one is the reason ([`FaultCode::from_value`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FaultCode {
    /// Not an RV32IM+Zba instruction (Unpriv chapter 24; strict like [`crate::decode::decode`]).
    IllegalInstruction = 1,
    /// EBREAK (Unpriv §2.8).
    Breakpoint = 2,
    /// A load touched a byte outside RAM.
    LoadOutOfRam = 4,
    /// A store touched a byte outside RAM.
    StoreOutOfRam = 8,
    /// A jump or taken branch to an address that is not a multiple of 4 (Unpriv §2.5).
    MisalignedJump = 16,
    /// A jump, taken branch or fall-through to an address outside RAM.
    JumpOutOfRam = 32,
    /// The buffer of an ECALL write or read lies (partly) outside RAM.
    WriteBufferOutOfRam = 64,
    /// ECALL with a7 other than 64 (write), 93 (exit), 94 (exit_group).
    UnsupportedSyscall = 128,
}

/// The address a FAULT port value reports, for the kinds that have one: the load's or store's effective
/// address, the jump target (JALR's with bit 0 cleared), the fall-through pc, the write(2) buffer (a1).
pub fn fault_address(v: u64) -> Option<u32> {
    use FaultCode::*;
    match FaultCode::from_value(v)? {
        LoadOutOfRam | StoreOutOfRam | MisalignedJump | JumpOutOfRam | WriteBufferOutOfRam => Some((v >> 8) as u32),
        IllegalInstruction | Breakpoint | UnsupportedSyscall => None,
    }
}

impl FaultCode {
    /// The reason for a FAULT port value: the lowest set bit of its code byte (bits 0..8). `None` when the
    /// code byte is 0.
    pub fn from_value(v: u64) -> Option<FaultCode> {
        use FaultCode::*;
        let v = v & 0xff;
        if v == 0 {
            return None;
        }
        Some(match v.trailing_zeros() {
            0 => IllegalInstruction,
            1 => Breakpoint,
            2 => LoadOutOfRam,
            3 => StoreOutOfRam,
            4 => MisalignedJump,
            5 => JumpOutOfRam,
            6 => WriteBufferOutOfRam,
            _ => UnsupportedSyscall,
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

/// How RAM is held in the machine's memories.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MemoryLayout {
    /// Four byte lanes `RAM0..RAM3` (8-bit words, RAM/4 rows each): every access is one step (a misaligned
    /// SW/SH writes each lane at most once). At most 32 trace tokens per step (see the module docs); the fetch
    /// reads four lanes (4x the DeltaNet heads of `Words`).
    ByteLanes,
    /// One memory `RAM` of 32-bit words (RAM/4 rows): sub-word stores are read-modify-write in the same step;
    /// an access that crosses a word boundary takes two steps (the first word's part, then the second's).
    /// At most 26 trace tokens per step and a quarter of the memory heads of `ByteLanes` in the woven network.
    /// The default.
    #[default]
    Words,
}

/// RAM geometry of the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rv32MachineOptions {
    /// First RAM address (a multiple of 4).
    pub ram_base: u32,
    /// RAM size in bytes: a power of two, 64 bytes ..= 64 MiB, `base + size <= 2^32`.
    pub ram_size: u32,
    /// Memory organisation.
    pub layout: MemoryLayout,
}

impl Default for Rv32MachineOptions {
    /// 64 KiB at 0x10000 (every example program fits).
    fn default() -> Self {
        Rv32MachineOptions { ram_base: 0x1_0000, ram_size: 64 * 1024, layout: MemoryLayout::Words }
    }
}

impl Rv32MachineOptions {
    /// 256 KiB at 0x10000 (the interpreter's default).
    pub fn ram_256k() -> Self {
        Rv32MachineOptions { ram_base: 0x1_0000, ram_size: 256 * 1024, layout: MemoryLayout::Words }
    }

    /// Check the geometry.
    pub fn validate(&self) -> Result<(), CircuitError> {
        let s = self.ram_size;
        if !s.is_power_of_two() || !(64..=64 << 20).contains(&s) {
            return Err(CircuitError::RamSize(s));
        }
        if !self.ram_base.is_multiple_of(4) || self.ram_base as u64 + s as u64 > 1 << 32 {
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

/// RAM bytes (from the RAM base) as the words of the machine's RAM memories, in memory order from
/// [`mem::RAM0`]: four byte lanes, or one memory of little-endian 32-bit words.
pub fn ram_image(bytes: &[u8], layout: MemoryLayout) -> Vec<Vec<u64>> {
    match layout {
        MemoryLayout::ByteLanes => {
            (0..4).map(|l| bytes.iter().skip(l).step_by(4).map(|b| *b as u64).collect()).collect()
        }
        MemoryLayout::Words => {
            vec![bytes.chunks(4).map(|c| c.iter().rev().fold(0u64, |a, b| a << 8 | *b as u64)).collect()]
        }
    }
}

/// The machine description around one step's `circuit` for the geometry `opts`: the state's names and widths
/// (the table above), the ports and inputs, and `BUSY` as the micro-step register.
pub(crate) fn machine(opts: &Rv32MachineOptions, circuit: Circuit) -> MachineDesc {
    let aw = opts.lane_addr_width();
    let mut memories = vec![MemoryDesc { name: "X".into(), word_width: 32, addr_width: 6 }];
    if opts.layout == MemoryLayout::Words {
        memories.push(MemoryDesc { name: "RAM".into(), word_width: 32, addr_width: aw });
    } else {
        memories.extend((0..4).map(|i| MemoryDesc { name: format!("RAM{i}"), word_width: 8, addr_width: aw }));
    }
    let mut desc = MachineDesc::new(
        "rv32im",
        vec![
            RegisterDesc { name: "PC".into(), width: aw },
            RegisterDesc { name: "BUSY".into(), width: BUSY_BITS },
            RegisterDesc { name: "DIV_Q".into(), width: 32 },
        ],
        memories,
        vec![
            PortDesc::new("OUT", 8).with_role(PortRole::Console),
            PortDesc::new("EXIT", 8).with_role(PortRole::Exit),
            PortDesc::new("FAULT", 40).with_role(PortRole::Fault),
            PortDesc::new("IN_REQ", 1),
        ],
        circuit,
    );
    desc.face.inputs = vec![PortDesc::new("STDIN", 8), PortDesc::new("STDIN_EOF", 1)];
    // BUSY sequences the micro-coded instructions (DIV/REM, write(2), word-crossing accesses).
    desc.micro_step = Some(reg::BUSY);
    desc
}
