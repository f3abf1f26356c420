//! The stable machine-plugin API.
//!
//! A machine is plain, versioned data ([`MachineDesc`], serde): its architectural state (registers and
//! memories), one step of its semantics as a word-level circuit ([`circuit`]), its host interface (output
//! ports, halt) and, derived from those, its trace protocol ([`protocol`]): the token vocabulary and the meaning
//! of every token. [`eval`] is the reference evaluator that runs a machine straight from its circuit and emits
//! the reference trace.
//!
//! [`trace`] is the one decoder of traces (tokens -> fields -> register, memory and port events, and the
//! inverse), [`host`] the circuit-free decode loop built on it, [`front`] what a machine crate hands the binary
//! (config keys, program loader, demo, host devices), [`lockstep`] the replay of a trace on the reference.
pub mod circuit;
pub mod devices;
pub mod eval;
pub mod examples;
pub mod front;
pub mod host;
pub mod lockstep;
pub mod machine;
pub mod plugin;
pub mod protocol;
pub mod trace;

pub use toml;

pub use circuit::{Circuit, CircuitBuilder, CmpKind, MemClear, MemWrite, Node, NodeId, Op, OutWrite, RegNext, ShiftKind, SumTerm};
pub use eval::{MachineState, Predictor, Reference, StepOutcome};
pub use front::{Devices, FrontError, LoadImage, Machine, MachineFront, MemLoad, Program, TraceCheckError};
pub use machine::{DescError, DeviceDesc, IoRange, MachineDesc, MachineFace, MemoryDesc, PortDesc, PortRole, ProgramLayout, RegisterDesc, API_VERSION};
pub use trace::{MemWriteEvent, StepDecoder, StepEvents};
pub use protocol::{Field, FieldRole, Protocol, Token};
