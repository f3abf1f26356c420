//! The stable machine-plugin API (issue 3).
//!
//! A machine is plain, versioned data ([`MachineDesc`], serde): its architectural state (registers and
//! memories), one step of its semantics as a word-level circuit ([`circuit`]), its host interface (output
//! ports, halt) and, derived from those, its trace protocol ([`protocol`]): the token vocabulary and the meaning
//! of every token. [`eval`] is the reference evaluator that runs a machine straight from its circuit and emits
//! the reference trace.
pub mod circuit;
pub mod eval;
pub mod examples;
pub mod machine;
pub mod plugin;
pub mod protocol;

pub use circuit::{Circuit, CircuitBuilder, CmpKind, MemWrite, Node, NodeId, Op, OutWrite, RegNext, ShiftKind};
pub use eval::{MachineState, Reference, StepOutcome};
pub use machine::{DescError, IoRange, MachineDesc, MemoryDesc, PortDesc, RegisterDesc, API_VERSION};
pub use protocol::{Field, FieldRole, Protocol, Token};
