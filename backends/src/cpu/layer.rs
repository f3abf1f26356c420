//! The shape of a decoder layer's token mixer, shared by the CPU executors; each fills it with its own form of a
//! projection and of the Gated DeltaNet.

/// Full attention's weights: `q_proj` (query and gate per head), `k_proj`, `v_proj`, `o_proj` in the executor's
/// projection type `P`, and `q_norm`, `k_norm` as `1 + w` `[head_dim]`.
pub struct Attention<P> {
    pub q: P,
    pub k: P,
    pub v: P,
    pub o: P,
    pub q_norm: Vec<f32>,
    pub k_norm: Vec<f32>,
}

/// A layer's token mixer, as `layer_types` says: a Gated DeltaNet (the executor's `L`) or full attention (`F`).
pub enum Mixer<L, F> {
    Linear(L),
    Full(F),
}
