//! The compiled executor (`jit`): the sparse executor's step with its projections compiled into native code
//! by cranelift when the checkpoint is loaded (those up to [`COMPILE_MAX_NNZ`] nonzeros).
//!
//! A woven checkpoint's projections hold a few exact nonzeros per row, and most of them repeat a handful of
//! values. [`Compiler`] turns each projection into straight-line machine code: every nonzero weight becomes a
//! constant of the code and every input column an address offset, so a product reads no index and no weight
//! array, and exact zeros cost nothing. Two forms, as the sparse executor's two layouts:
//!
//! - **rows** (inputs that are dense, the normed residual stream): each output row is one chain
//!   `acc = +0; acc += w * x[c]` over its nonzeros in increasing column order;
//! - **columns** (inputs that are mostly exact zeros: MLP activations, DeltaNet outputs): per input column in
//!   increasing order, a test `x[c] == 0` that skips the column, else `y[r] += w * x[c]` for its nonzeros.
//!
//! Both sum every output in increasing column order starting from `+0`, which is the sparse executor's
//! column-major product bit for bit, on any weights (adding a signed zero to a sum that started at `+0`
//! changes nothing): on woven checkpoints, where every sum is exact, the logits equal the sparse executor's;
//! on trained weights they equal its column-major order (its row-major form uses eight partial sums and
//! rounds differently). Each compiled function covers about [`CHUNK_NNZ`] nonzeros, compiled on the CPU's
//! threads; a row-form matrix larger than the sparse executor's parallel threshold runs its functions on them.
//!
//! The rest of the step (RMSNorm, the DeltaNet conv, heads and state, attention, SwiGLU) is the sparse
//! executor's own code ([`crate::sparse::SparseModel`] built with [`crate::sparse::SparseModel::compiled`]).
//! It needs nothing but `config.json` and the weights.

mod compile;

pub use compile::{CompiledMatrix, Compiler, Form, JitError, CHUNK_NNZ};

/// The largest projection (in nonzero weights) the `jit` executor compiles; larger ones keep the sparse
/// executor's data-driven product. Compiled code takes about 25 bytes per weight where the sparse arrays take
/// 8 (or fewer, with delta rows), and a token runs all of it: on the RV32 machines (1.15-1.72 M weights) the
/// code streams from memory at every token, and a model compiled whole ran at 0.2x the sparse executor's
/// speed; projections above about 16 K weights were slower compiled (`loom bench-executors
/// configs/rv32im-64k.toml --executors sparse,jit` with limits of 0, 4 K, 16 K and 64 K: 1.1x, 1.0x, 0.9x,
/// 0.8x; acc8, whose largest projection is below 8 K: 1.3-1.6x, 2026-12-02).
pub const COMPILE_MAX_NNZ: usize = 8192;
