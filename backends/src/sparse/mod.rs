//! The sparse CPU executor: Qwen3.5 decoding one token at a time in plain Rust f32, skipping exact zeros.
//!
//! Woven machines are mostly zeros: their weight matrices hold a few nonzeros per row and their MLP
//! activations are exactly zero wherever a threshold unit is off. This executor stores every projection as
//! a compressed sparse column matrix and multiplies only the columns whose input is nonzero, so its cost
//! follows the nonzeros rather than the dense shape. It computes exactly the Qwen3.5 layer math of
//! transformers' `models/qwen3_5/modeling_qwen3_5.py` (the recurrent, token-by-token path), in f32:
//!
//! - RMSNorm: `x * (1 / sqrt(mean(x^2) + eps)) * (1 + w)`; gated RMSNorm of the DeltaNet output:
//!   `w * (o * (1 / sqrt(mean(o^2) + eps))) * silu(z)` (weight not zero-centred).
//! - MLP: `down(silu(gate(x)) * up(x))`.
//! - Gated DeltaNet: `in_proj_qkv` -> depthwise causal conv1d (kernel `linear_conv_kernel_dim`) -> SiLU ->
//!   q, k, v; q and k L2-normalised per key head (`x / sqrt(sum(x^2) + 1e-6)`), q divided by
//!   `sqrt(head_k_dim)`; `beta = sigmoid(b)`, `g = -exp(A_log) * softplus(a + dt_bias)`; per value head
//!   `S = S * exp(g); kv = S^T k; S = S + k (beta (v - kv))^T; o = S^T q`.
//! - Full attention: per head `[query, gate]` from `q_proj`, `q_norm`/`k_norm`, rotate-half rotary embedding on
//!   the first `rotary_dim` dims, grouped-query softmax attention with scale `1/sqrt(head_dim)`, output times
//!   `sigmoid(gate)`, `o_proj`.
//!
//! Dense reference: the burn model in [`crate::model`]; both must emit the same trace.
//!
//! [`model`] holds the layers, the model and its caches; the sparse matrix and the math are the CPU executors'
//! floor ([`crate::cpu`]).

pub mod model;

pub use model::{SparseModel, SparseState};
