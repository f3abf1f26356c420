//! The floor of the CPU executors: what the sparse ([`crate::sparse`]), incremental ([`crate::incremental`]) and
//! compiled ([`crate::jit`]) executors share, so that none of them imports another's internals.
//!
//! - [`matrix`]: [`SparseMatrix`], a projection as compressed sparse rows and columns, and its products.
//! - [`math`]: the Qwen3.5 math of one token in f32 (activations, RMSNorm, the DeltaNet head's write and read,
//!   attention, the rotary frequencies) and the greedy token ([`argmax`]).
//! - [`layer`]: the shape of a layer's token mixer ([`layer::Mixer`], [`layer::Attention`]).
//! - [`weights`]: [`CheckedWeights`], the weights taken by name with the shapes the config expects.

pub mod layer;
pub mod math;
pub mod matrix;
pub mod weights;

pub use math::argmax;
pub use matrix::SparseMatrix;
pub use weights::CheckedWeights;
