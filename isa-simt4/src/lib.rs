//! SIMT4: a SIMT GPU (4 lanes by default; 8, 16, 32 from the config) as a machine plugin, running kernels of a
//! CUDA subset.
//!
//! - [`isa`]: the instruction set, its encoding and semantics (the specification),
//! - [`interp`]: the reference interpreter written from it,
//! - [`corpus`]: hand-written programs the interpreter's tests check and the circuit lockstep runs,
//! - [`launch`]: a launch (grid, block, arguments; launch files) and the compiled image,
//! - [`face`]: the machine's public face: register, memory and port indices of the circuit,
//! - [`circuit`]: the machine as an `isa-api` circuit (what the weaver compiles), one file per section,
//! - [`error`]: why the machine description could not be built, and the typed errors of the other modules,
//! - [`cuda`]: the CUDA subset front end (lang-c parser, compiler to SIMT4 code),
//! - [`opencl`]: the mechanical translation to OpenCL C for the independent oracle (POCL),
//! - [`front`]: the machine's front for the binary (config keys, kernel loader, devices, trace lockstep).

pub mod circuit;
pub mod corpus;
pub mod cuda;
pub mod error;
pub mod face;
pub mod front;
pub mod interp;
pub mod isa;
pub mod launch;
pub mod opencl;

pub use error::{ConfigError, LaunchError, LoadError, OpenclError, Simt4Error};
pub use interp::{DivRegs, Simt, Stop};
pub use isa::{Fault, FaultKind, Instr, Opcode, Simt4Config};
pub use launch::{ArgValue, ArrayPlace, KernelImage, LaunchSpec};
