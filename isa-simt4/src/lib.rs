//! SIMT4: a SIMT GPU (4 lanes by default; 8, 16, 32 from the config) as a machine plugin, running kernels of a
//! CUDA subset.
//!
//! - [`isa`]: the instruction set, its encoding and semantics (the specification),
//! - [`interp`]: the reference interpreter written from it.

pub mod interp;
pub mod isa;

pub use interp::{Simt, Stop};
pub use isa::{Fault, FaultKind, Instr, Opcode, Simt4Config};
