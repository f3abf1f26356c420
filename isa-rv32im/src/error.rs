//! Errors that stop the machine. Every one names the PC, and where it applies the instruction word and the
//! faulting address, so a failed run reports where and why without a debugger.

use thiserror::Error;

/// Kind of memory access that faulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Instruction fetch.
    Fetch,
    /// Data load (LB/LH/LW/LBU/LHU).
    Load,
    /// Data store (SB/SH/SW).
    Store,
    /// The buffer of a host call (`write` reads it, `read` fills it).
    HostRead,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Access::Fetch => "instruction fetch",
            Access::Load => "load",
            Access::Store => "store",
            Access::HostRead => "host-call buffer access",
        })
    }
}

/// Why the interpreter stopped abnormally. Never a panic: every input (program, memory contents, register values)
/// ends in a value of this type or a normal event.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Rv32Error {
    /// The word at `pc` is not an RV32IM+Zba instruction.
    #[error("illegal instruction {word:#010x} at pc {pc:#010x}")]
    IllegalInstruction { pc: u32, word: u32 },
    /// A fetch, load, store or host-call buffer touched bytes outside RAM.
    #[error(
        "{access} of {size} byte(s) at address {addr:#010x} is outside memory [{mem_base:#010x}, {mem_end:#x}) \
         (pc {pc:#010x}, instruction {word:#010x})"
    )]
    MemoryFault {
        pc: u32,
        word: u32,
        addr: u32,
        size: u32,
        access: Access,
        mem_base: u32,
        mem_end: u64,
    },
    /// A jump or taken branch to an address that is not a multiple of 4 (Unpriv §2.5: instruction-address-
    /// misaligned exception; this machine has no C extension).
    #[error("jump to misaligned target {target:#010x} (pc {pc:#010x}, instruction {word:#010x})")]
    MisalignedJump { pc: u32, word: u32, target: u32 },
    /// ECALL with a syscall number (a7) that this machine's host does not implement.
    #[error("unsupported ecall a7={number} at pc {pc:#010x} (supported: 63 read, 64 write, 93 exit)")]
    UnsupportedSyscall { pc: u32, number: u32 },
    /// `step` was called after the program exited.
    #[error("the program already exited with code {code}")]
    Halted { code: i32 },
    /// `run` reached its step bound before the program exited.
    #[error("step limit of {limit} instructions reached at pc {pc:#010x}")]
    StepLimit { limit: u64, pc: u32 },
}
