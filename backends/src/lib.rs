//! The Qwen3.5 runtime.
//!
//! - [`config`]: `config.json` (`Qwen3_5TextConfig`).
//! - [`names`]: the checkpoint's tensor names and shapes, per layer.
//! - [`tensor`]: host tensors and weight maps.
//! - [`checkpoint`]: checkpoint directories (config + safetensors), reading and writing.
//! - [`random`]: deterministic random checkpoints (the bundled tiny model, the benchmark's big one).
//! - [`error`]: the CPU executors' error ([`CpuError`]).
//! - [`executor`]: the one executor interface ([`Executor`], [`Session`], [`ExecutorKind`]).
//! - [`cpu`]: the CPU executors' floor: the sparse matrix, the Qwen3.5 math in f32, checked weights, argmax.
//! - [`sparse`]: the sparse CPU executor.
//! - [`incremental`]: the incremental CPU executor (recomputes only what a token changed, exactly).
//! - [`jit`]: the compiled CPU executor (every projection compiled into native code by cranelift).
//! - [`model`] (feature `burn`): the Qwen3.5 text model in burn on ndarray, flex or wgpu.
pub mod config;
pub mod names;
pub mod error;
pub mod executor;
pub mod cpu;
pub mod sparse;
pub mod incremental;
pub mod jit;
pub mod tensor;
pub mod checkpoint;
pub mod random;
pub mod graft;
#[cfg(feature = "burn")]
pub mod model;

pub use config::{InvalidConfig, LayerType, Qwen35Config};
pub use error::CpuError;
pub use tensor::{HostTensor, WeightMap};
pub use checkpoint::{save_checkpoint, Checkpoint, CheckpointError, InMemory, TensorSource};
pub use executor::{ExecError, Executor, ExecutorKind, Session};
