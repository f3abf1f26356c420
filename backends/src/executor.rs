//! One executor interface: everything that runs a Qwen3.5 checkpoint token by token implements [`Executor`]
//! (build from a config and weights, open a [`Session`] per sequence, feed a token, get the next-token logits
//! or the greedy token). [`ExecutorKind`] names them, for the CLI's `--executor` and a config's
//! `[run] executor`; [`build`] and [`open`] make one of any kind.
//!
//! Implemented by the sparse CPU executor ([`crate::sparse::SparseModel`]), the compiled one (the same model
//! with its projections compiled by cranelift, [`crate::jit`]), the incremental one
//! ([`crate::incremental::IncrementalModel`]) and the dense burn model on each
//! burn backend ([`crate::model::Qwen35Model`], feature `burn`). A new executor implements the trait, adds its
//! kind here, and passes the conformance suite (`cli/tests/conformance.rs`), which every kind runs.

use crate::checkpoint::{Checkpoint, CheckpointError};
use crate::config::Qwen35Config;
use crate::tensor::WeightMap;
use std::path::Path;

/// An executor's error.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// Building a dense executor failed (a missing or misshapen tensor, an unavailable backend), or the directory
    /// is not a grafted checkpoint.
    #[error("building the {kind} executor: {msg}")]
    Build { kind: &'static str, msg: String },
    /// Building a CPU executor (sparse, incremental, jit) failed: an inconsistent config, a missing or
    /// misshapen tensor, cranelift.
    #[error("building the {kind} executor: {err}")]
    BuildCpu { kind: &'static str, err: crate::error::CpuError },
    /// Running a token failed (an empty prompt, a dense backend's error).
    #[error("{0}")]
    Run(String),
    /// A CPU executor refused a token (one outside the vocabulary).
    #[error(transparent)]
    Cpu(#[from] crate::error::CpuError),
    #[error("unknown executor {0:?}: expected sparse, incremental, jit, ndarray, flex or wgpu")]
    Unknown(String),
}

/// The executors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutorKind {
    /// The sparse pure-Rust CPU executor: skips the exact zeros of compiled weights (`crate::sparse`).
    Sparse,
    /// The incremental CPU executor: keeps the previous token's activations and recomputes only what the new
    /// token changed, where that is exact (`crate::incremental`).
    Incremental,
    /// The compiled CPU executor: the sparse executor's step with every projection compiled into native code
    /// by cranelift when the model is loaded (`crate::jit`).
    Jit,
    /// The dense burn model on burn-ndarray (the design card's reference backend).
    Ndarray,
    /// The dense burn model on burn-flex (burn 0.22's pure-Rust CPU backend).
    Flex,
    /// The dense burn model on burn-wgpu (a GPU, or Mesa's software Vulkan).
    Wgpu,
}

impl ExecutorKind {
    /// Every kind, in the order the conformance suite runs them.
    pub const ALL: [ExecutorKind; 6] = [ExecutorKind::Sparse, ExecutorKind::Incremental, ExecutorKind::Jit, ExecutorKind::Ndarray, ExecutorKind::Flex, ExecutorKind::Wgpu];

    /// Parse `sparse`, `incremental`, `jit`, `ndarray`, `flex` or `wgpu`.
    pub fn parse(s: &str) -> Result<Self, ExecError> {
        Self::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| ExecError::Unknown(s.to_string()))
    }

    /// The name [`Self::parse`] accepts.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sparse => "sparse",
            Self::Incremental => "incremental",
            Self::Jit => "jit",
            Self::Ndarray => "ndarray",
            Self::Flex => "flex",
            Self::Wgpu => "wgpu",
        }
    }

    /// Does this executor hold every weight as a dense f32 tensor (memory = 4 bytes x parameters)?
    pub fn is_dense(self) -> bool {
        !matches!(self, Self::Sparse | Self::Incremental | Self::Jit)
    }
}

impl std::fmt::Display for ExecutorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ExecutorKind {
    type Err = ExecError;
    fn from_str(s: &str) -> Result<Self, ExecError> {
        Self::parse(s)
    }
}

/// One sequence's state on an executor (its caches and position).
pub trait Session {
    /// Feed one token; the logits `[vocab]` of the next one.
    fn step(&mut self, token: u32) -> Result<Vec<f32>, ExecError>;
    /// Feed one token; the greedy next token (the first maximum, as `torch.argmax`).
    fn step_argmax(&mut self, token: u32) -> Result<u32, ExecError> {
        Ok(crate::cpu::argmax(&self.step(token)?))
    }
    /// Feed a whole prompt; the logits after its last token. The default feeds it token by token; the dense
    /// executors run it as one block (a chunked prefill, as transformers' `generate` does).
    fn prefill(&mut self, tokens: &[u32]) -> Result<Vec<f32>, ExecError> {
        let (last, rest) = tokens.split_last().ok_or_else(|| ExecError::Run("empty prompt".into()))?;
        for &t in rest {
            self.step(t)?;
        }
        self.step(*last)
    }
    /// Feed a block of tokens; the logits after each of them, `[tokens.len() * vocab]` row by row. The default
    /// feeds them one at a time; the dense executors run the block as one forward pass (matrix products over
    /// the block instead of one matrix-vector product per token).
    fn step_block(&mut self, tokens: &[u32]) -> Result<Vec<f32>, ExecError> {
        let mut out = Vec::new();
        for &t in tokens {
            out.extend(self.step(t)?);
        }
        Ok(out)
    }
    /// Tokens fed so far.
    fn position(&self) -> usize;
    /// Work counters where the executor keeps them (the incremental one: products updated incrementally
    /// and in full, nonzero weights multiplied), as `(name, value)`.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// Time each layer's stages from now on where the executor can (the incremental one); returns whether
    /// it does. A profiled session runs slower.
    fn profile_stages(&mut self) -> bool {
        false
    }
    /// The stage times since [`Session::profile_stages`] (see [`crate::incremental::StageTimes`]).
    fn stage_times(&self) -> Option<crate::incremental::StageTimes> {
        None
    }
    /// A copy of this session (caches, position): what it computes from here on is what this one would. The
    /// sparse, jit and incremental executors have one (a program loaded once, run many times from the copy);
    /// `None` elsewhere.
    fn fork(&self) -> Option<Box<dyn Session + '_>> {
        None
    }
}

/// A model ready to run.
pub trait Executor {
    /// Which executor this is.
    fn kind(&self) -> ExecutorKind;
    /// The model's config.
    fn config(&self) -> &Qwen35Config;
    /// A new sequence with empty caches.
    fn session(&self) -> Box<dyn Session + '_>;
    /// Nonzero weights a token touches, where the executor counts them (the sparse one).
    fn nonzero_weights(&self) -> Option<usize> {
        None
    }
    /// Greedy decoding of independent sequences: feed each prompt, then `new_tokens` tokens each. The
    /// default runs them one after the other; an executor that batches overrides it.
    fn generate_batch(&self, prompts: &[Vec<u32>], new_tokens: usize) -> Result<Vec<Vec<u32>>, ExecError> {
        prompts
            .iter()
            .map(|p| {
                let mut s = self.session();
                let mut next = None;
                for t in p {
                    next = Some(s.step_argmax(*t)?);
                }
                let mut out = Vec::with_capacity(new_tokens);
                while out.len() < new_tokens {
                    let Some(t) = next else { break };
                    out.push(t);
                    next = Some(s.step_argmax(t)?);
                }
                Ok(out)
            })
            .collect()
    }
}

/// Build an executor of `kind` for a model held in memory.
pub fn build(kind: ExecutorKind, config: &Qwen35Config, weights: &WeightMap) -> Result<Box<dyn Executor>, ExecError> {
    match kind {
        ExecutorKind::Sparse => {
            let m = crate::sparse::SparseModel::new(config, weights).map_err(|err| ExecError::BuildCpu { kind: "sparse", err })?;
            Ok(Box::new(m))
        }
        ExecutorKind::Incremental => {
            let m = crate::incremental::IncrementalModel::new(config, weights).map_err(|err| ExecError::BuildCpu { kind: "incremental", err })?;
            Ok(Box::new(m))
        }
        ExecutorKind::Jit => {
            let m = crate::sparse::SparseModel::compiled(config, weights).map_err(|err| ExecError::BuildCpu { kind: "jit", err })?;
            Ok(Box::new(m))
        }
        dense => dense_executor(dense, &crate::checkpoint::InMemory { config, weights }),
    }
}

/// Open a checkpoint directory on an executor of `kind`.
pub fn open(kind: ExecutorKind, dir: &Path) -> Result<Box<dyn Executor>, ExecError> {
    let ck = Checkpoint::open(dir)?;
    match kind {
        ExecutorKind::Sparse | ExecutorKind::Incremental | ExecutorKind::Jit => {
            let w = ck.weights()?;
            build(kind, ck.config(), &w)
        }
        dense => dense_executor(dense, &ck),
    }
}

/// Open one route of a grafted checkpoint directory (`graft.json`, see [`crate::graft`]) on an executor of
/// `kind`: [`crate::graft::Route::Machine`] is the stand-alone woven machine in its own token ids,
/// [`crate::graft::Route::Text`] the base model. Only the route's tensors are read. Errors: a directory that is
/// not a grafted checkpoint, and every error of [`open`].
pub fn open_route(kind: ExecutorKind, dir: &Path, route: crate::graft::Route) -> Result<Box<dyn Executor>, ExecError> {
    let ck = Checkpoint::open(dir)?;
    let g = crate::graft::GraftManifest::load(dir)?.ok_or_else(|| ExecError::Build {
        kind: kind.name(),
        msg: format!("{} has no {}: not a grafted checkpoint", dir.display(), crate::graft::GRAFT_FILE),
    })?;
    match kind {
        // The dense executors read the route tensor by tensor: it is never in memory twice.
        ExecutorKind::Ndarray | ExecutorKind::Flex | ExecutorKind::Wgpu => dense_executor(kind, &crate::graft::RouteSource::new(&ck, &g, route)?),
        _ => {
            let (config, weights) = crate::graft::view(&ck, &g, route)?;
            build(kind, &config, &weights)
        }
    }
}

#[cfg(feature = "burn")]
fn dense_executor(kind: ExecutorKind, src: &dyn crate::checkpoint::TensorSource) -> Result<Box<dyn Executor>, ExecError> {
    let backend = match kind {
        ExecutorKind::Ndarray => crate::model::BackendKind::Ndarray,
        ExecutorKind::Flex => crate::model::BackendKind::Flex,
        ExecutorKind::Wgpu => crate::model::BackendKind::Wgpu,
        ExecutorKind::Sparse | ExecutorKind::Incremental | ExecutorKind::Jit => unreachable!("not a dense executor"),
    };
    let build_err = |e: crate::model::ModelError| ExecError::Build { kind: kind.name(), msg: e.to_string() };
    let device = backend.device().map_err(build_err)?;
    let model = crate::model::Qwen35Model::load(src, &device).map_err(build_err)?;
    Ok(Box::new(DenseExecutor { kind, model }))
}

#[cfg(not(feature = "burn"))]
fn dense_executor(kind: ExecutorKind, _src: &dyn crate::checkpoint::TensorSource) -> Result<Box<dyn Executor>, ExecError> {
    Err(ExecError::Build { kind: kind.name(), msg: "the burn backends are not compiled in (feature `burn` of crate `backends`)".into() })
}

/// The sparse executor's session.
struct SparseSession<'m> {
    model: &'m crate::sparse::SparseModel,
    state: crate::sparse::SparseState,
}

impl Session for SparseSession<'_> {
    fn step(&mut self, token: u32) -> Result<Vec<f32>, ExecError> {
        self.model.step(&mut self.state, token).map_err(ExecError::Cpu)
    }
    fn step_argmax(&mut self, token: u32) -> Result<u32, ExecError> {
        self.model.step_argmax(&mut self.state, token).map_err(ExecError::Cpu)
    }
    fn position(&self) -> usize {
        self.state.position
    }
    fn fork(&self) -> Option<Box<dyn Session + '_>> {
        Some(Box::new(SparseSession { model: self.model, state: self.state.clone() }))
    }
}

/// The sparse executor, and compiled ([`crate::sparse::SparseModel::compiled`]) the `jit` one.
impl Executor for crate::sparse::SparseModel {
    fn kind(&self) -> ExecutorKind {
        if self.is_compiled() { ExecutorKind::Jit } else { ExecutorKind::Sparse }
    }
    fn config(&self) -> &Qwen35Config {
        crate::sparse::SparseModel::config(self)
    }
    fn session(&self) -> Box<dyn Session + '_> {
        Box::new(SparseSession { model: self, state: self.new_state() })
    }
    fn nonzero_weights(&self) -> Option<usize> {
        Some(crate::sparse::SparseModel::nonzero_weights(self))
    }
}

/// The incremental executor's session.
struct IncrementalSession<'m> {
    model: &'m crate::incremental::IncrementalModel,
    state: crate::incremental::IncrementalState,
}

impl Session for IncrementalSession<'_> {
    fn step(&mut self, token: u32) -> Result<Vec<f32>, ExecError> {
        self.model.step(&mut self.state, token).map(<[f32]>::to_vec).map_err(ExecError::Cpu)
    }
    fn step_argmax(&mut self, token: u32) -> Result<u32, ExecError> {
        self.model.step_argmax(&mut self.state, token).map_err(ExecError::Cpu)
    }
    fn position(&self) -> usize {
        self.state.position
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = self.state.counters();
        vec![("tokens", c.tokens), ("incremental_products", c.incremental_products), ("full_products", c.full_products), ("weights_read", c.weights_read), ("settled_writes", c.settled_writes)]
    }
    fn fork(&self) -> Option<Box<dyn Session + '_>> {
        Some(Box::new(IncrementalSession { model: self.model, state: self.state.clone() }))
    }
    fn profile_stages(&mut self) -> bool {
        self.state.profile_stages();
        true
    }
    fn stage_times(&self) -> Option<crate::incremental::StageTimes> {
        self.state.stage_times().cloned()
    }
}

impl Executor for crate::incremental::IncrementalModel {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Incremental
    }
    fn config(&self) -> &Qwen35Config {
        crate::incremental::IncrementalModel::config(self)
    }
    fn session(&self) -> Box<dyn Session + '_> {
        Box::new(IncrementalSession { model: self, state: self.new_state() })
    }
    fn nonzero_weights(&self) -> Option<usize> {
        Some(crate::incremental::IncrementalModel::nonzero_weights(self))
    }
}

/// The dense burn model on one backend.
#[cfg(feature = "burn")]
struct DenseExecutor {
    kind: ExecutorKind,
    model: crate::model::Qwen35Model,
}

#[cfg(feature = "burn")]
struct DenseSession<'m> {
    model: &'m crate::model::Qwen35Model,
    state: crate::model::State,
}

#[cfg(feature = "burn")]
impl Session for DenseSession<'_> {
    fn step(&mut self, token: u32) -> Result<Vec<f32>, ExecError> {
        let out = self.model.forward(&[vec![token]], &mut self.state, crate::model::Logits::Last, false).map_err(|e| ExecError::Run(e.to_string()))?;
        out.logits.into_data().try_to_vec::<f32>().map_err(|e| ExecError::Run(format!("reading logits back: {e:?}")))
    }
    fn step_block(&mut self, tokens: &[u32]) -> Result<Vec<f32>, ExecError> {
        if tokens.is_empty() {
            return Ok(Vec::new());
        }
        let out = self.model.forward(&[tokens.to_vec()], &mut self.state, crate::model::Logits::All, false).map_err(|e| ExecError::Run(e.to_string()))?;
        out.logits.into_data().try_to_vec::<f32>().map_err(|e| ExecError::Run(format!("reading logits back: {e:?}")))
    }
    fn prefill(&mut self, tokens: &[u32]) -> Result<Vec<f32>, ExecError> {
        if tokens.is_empty() {
            return Err(ExecError::Run("empty prompt".into()));
        }
        let out = self.model.forward(&[tokens.to_vec()], &mut self.state, crate::model::Logits::Last, false).map_err(|e| ExecError::Run(e.to_string()))?;
        out.logits.into_data().try_to_vec::<f32>().map_err(|e| ExecError::Run(format!("reading logits back: {e:?}")))
    }
    fn position(&self) -> usize {
        self.state.position
    }
}

#[cfg(feature = "burn")]
impl Executor for DenseExecutor {
    fn kind(&self) -> ExecutorKind {
        self.kind
    }
    fn config(&self) -> &Qwen35Config {
        self.model.config()
    }
    fn session(&self) -> Box<dyn Session + '_> {
        Box::new(DenseSession { model: &self.model, state: self.model.new_state(1) })
    }
    /// One forward pass per position for the whole batch (the burn model runs sequences side by side).
    fn generate_batch(&self, prompts: &[Vec<u32>], new_tokens: usize) -> Result<Vec<Vec<u32>>, ExecError> {
        let run = |e: crate::model::ModelError| ExecError::Run(e.to_string());
        let b = prompts.len();
        if b == 0 {
            return Ok(Vec::new());
        }
        let t = prompts[0].len();
        if prompts.iter().any(|p| p.len() != t) || t == 0 {
            return Err(ExecError::Run("a batch takes prompts of one nonzero length".into()));
        }
        let mut state = self.model.new_state(b);
        let mut logits = self.model.forward(prompts, &mut state, crate::model::Logits::Last, false).map_err(run)?.logits;
        let mut out = vec![Vec::with_capacity(new_tokens); b];
        let v = self.model.config().vocab_size;
        for i in 0..new_tokens {
            let flat = logits.into_data().try_to_vec::<f32>().map_err(|e| ExecError::Run(format!("reading logits back: {e:?}")))?;
            let next: Vec<u32> = flat.chunks(v).map(crate::cpu::argmax).collect();
            for (o, n) in out.iter_mut().zip(&next) {
                o.push(*n);
            }
            if i + 1 == new_tokens {
                break;
            }
            let ids: Vec<Vec<u32>> = next.iter().map(|n| vec![*n]).collect();
            logits = self.model.forward(&ids, &mut state, crate::model::Logits::Last, false).map_err(run)?.logits;
        }
        Ok(out)
    }
}
