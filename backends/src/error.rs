//! The CPU executors' error ([`CpuError`]): building the sparse, incremental or compiled executor from a config
//! and weights, or feeding one a token.

use crate::config::InvalidConfig;
use crate::jit::JitError;

/// Errors building or running a CPU executor ([`crate::sparse::SparseModel`], its compiled form, and
/// [`crate::incremental::IncrementalModel`]). Every message names the field, tensor or token at fault.
#[derive(Debug, thiserror::Error)]
pub enum CpuError {
    /// The config's shapes are inconsistent.
    #[error(transparent)]
    Config(#[from] InvalidConfig),
    /// A tensor the config expects is not among the weights.
    #[error("missing tensor {name}")]
    MissingTensor { name: String },
    /// A tensor has another shape than the config expects.
    #[error("tensor {name} has shape {found:?}, expected {expected:?}")]
    TensorShape { name: String, found: Vec<usize>, expected: Vec<usize> },
    /// cranelift cannot compile for this CPU, or refused a projection (the compiled executor).
    #[error(transparent)]
    Jit(#[from] JitError),
    /// A token id outside the vocabulary.
    #[error("token {token} is outside the vocabulary of {vocab}")]
    Token { token: u32, vocab: usize },
}
