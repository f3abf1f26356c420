//! The Qwen3.5 runtime.
//!
//! - [`config`]: `config.json` (`Qwen3_5TextConfig`).
//! - [`tensor`]: host tensors and weight maps.
pub mod config;
pub mod sparse;
pub mod tensor;

pub use config::{LayerType, Qwen35Config};
pub use tensor::{HostTensor, WeightMap};
