//! Lockstep of RV32IM+Zba against its references, with one report type ([`LockstepReport`]):
//!
//! - [`qemu`]: the reference interpreter against qemu-riscv32's per-instruction register dumps (continuing past
//!   a mismatch, counting them);
//! - [`circuit`]: the machine's circuit on the reference evaluator against the interpreter, and a woven
//!   machine's trace against the interpreter (stopping at the first disagreement, [`circuit::LockstepError`]).
//!
//! Together they chain QEMU -> interpreter -> circuit -> woven weights.

pub mod circuit;
pub mod qemu;

pub use circuit::{LockstepError, lockstep, trace_lockstep};

use crate::circuit::FaultCode;

/// How a lockstep run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockstepEnd {
    /// The program exited with this status (`code & 0xff`), on both sides.
    Exit(u8),
    /// Both stopped with this fault (the interpreter's error, mapped to the circuit's code).
    Fault(FaultCode),
    /// The interpreter stopped with an error the other side did not show (counted as a mismatch).
    Error(String),
    /// The instruction, step or trace bound was reached first.
    Limit,
}

/// One difference: after instruction `instruction` (0 = the first executed), at `pc`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub instruction: u64,
    pub pc: u32,
    /// What differs, in words (`x15 qemu 0x... interp 0x...;`).
    pub what: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "after instruction #{} at pc {:#010x}: {}", self.instruction, self.pc, self.what)
    }
}

/// What a lockstep run compared and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockstepReport {
    /// Instructions after which pc and x0..x31 were compared.
    pub instructions: u64,
    /// Machine steps (circuit, trace) or dumps (QEMU) walked.
    pub steps: u64,
    /// Instructions the interpreter retired in all: the QEMU lockstep's compared ones plus the tail after the
    /// last dump (the circuit checks leave it 0: they compare every instruction retired).
    pub executed: u64,
    /// Console output (identical on both sides).
    pub output: Vec<u8>,
    /// How it ended.
    pub end: LockstepEnd,
    /// Instructions whose resulting state differed (the stopping checks return an error instead).
    pub mismatch_count: u64,
    /// The first few of them.
    pub mismatches: Vec<Mismatch>,
}

impl LockstepReport {
    /// Nothing compared yet.
    pub fn new() -> Self {
        Self { instructions: 0, steps: 0, executed: 0, output: Vec::new(), end: LockstepEnd::Limit, mismatch_count: 0, mismatches: Vec::new() }
    }
    /// The exit status, if the program exited.
    pub fn exit_code(&self) -> Option<u8> {
        if let LockstepEnd::Exit(c) = self.end { Some(c) } else { None }
    }
}

impl Default for LockstepReport {
    fn default() -> Self {
        Self::new()
    }
}
