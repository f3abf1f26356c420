//! The incremental executor: Qwen3.5 decoding that recomputes only what the new token changed, exactly.
//!
//! A woven machine's activations barely move from one token to the next (within a machine step the
//! committed state is the same; only the token's own slots and the phase change). This executor keeps every
//! layer's activations from the previous token ([`Tracked`] vectors: values plus the entries the current
//! token changed) and propagates only the differences:
//!
//! - a projection `y = W x` adds `W[:, j] · (x_new[j] - x_old[j])` for each changed input `j` (CSC columns),
//!   where that equals the full sum bit for bit ([`exact`]: weights and inputs on a grid of integer
//!   multiples of a power of two, every partial sum below 2^23 units, checked on every value that
//!   changes); otherwise it computes the full product, as the sparse executor does; rows equal outside a few
//!   shared columns (a bias) are updated once per class ([`classes`]), and inputs that meet no weight are
//!   ignored; in a `gate_proj`, a block of rows that read one small set of columns (a table lookup) is
//!   computed only at the rows `silu` does not zero, for the old input and the new ([`lookup`]);
//! - RMSNorm keeps `Σ x²` the same way (exact, or recomputed), and rescales every entry only when the
//!   norm's factor changes; a layer's norms compute only the entries its projections read;
//! - elementwise stages (residual adds, SiLU gates, the conv of channels without history) recompute the
//!   changed entries; a DeltaNet value head reads its state again only when its query, gate or state
//!   changed (and not at all while its gate is exactly off and its state bounded: it then outputs only
//!   signed zeros, which `out_proj` skips, and `+0` stands for them; such a head is not even visited when
//!   only its query changed, nor for a gate entry that moved between two values of exactly zero `silu`), and
//!   writes whenever `beta != 0` (as the full computation does) unless its write is settled (it would change
//!   nothing: such a head is not visited until an input of its write changes); full attention is recomputed every token (its cache grows) unless its
//!   `o_proj` is all zero; where each value head's `in_proj_z` rows repeat, `z` is kept per head, and where
//!   no v channel has conv history, a head's v is computed only when it writes;
//! - the greedy token ([`IncrementalModel::step_argmax`]) comes from the lm_head's sign-product groups
//!   ([`factored`]): per group of rows that differ only in the signs of a few columns, the row whose signs agree
//!   with the input, exact where every logit of the group is its exact real sum.
//!
//! Every f32 operation outside the projection sums and `Σ x²` is the one the sparse executor calls
//! ([`crate::cpu::math`]), so on woven checkpoints the logits are the sparse executor's bit for
//! bit; on trained weights (the fixtures) every sum falls back to the full product and the result is the
//! sparse executor's up to summation order. It needs nothing but `config.json` and the weights.
//!
//! [`model`] holds the executor (the layers, the residual routing, the norms and the MLP), `projection` the
//! incremental projection, `deltanet` the Gated DeltaNet mixer, `argmax` the kept greedy token; [`exact`] the
//! exactness certificates, [`tracked`] the vectors, [`classes`] the row classes, [`factored`] the split lm_head,
//! [`lookup`] the table lookups.

pub mod classes;
pub mod exact;
pub mod factored;
pub mod lookup;
mod argmax;
mod deltanet;
mod projection;
pub mod model;
pub mod tracked;

pub use model::{Counters, IncrementalModel, IncrementalState, StageTimes, STAGES};
pub use tracked::Tracked;
