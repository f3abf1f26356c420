//! Grafted checkpoints: a woven machine's decoder layers placed in front of a base language model's, in one
//! Qwen3.5 checkpoint with one vocabulary. `graft.json` ([`GraftManifest`]) says which layers and which token
//! ids are the machine's; `loom graft` (crate `weaver`, module `graft`) writes it.
//!
//! Layout of a grafted checkpoint of a base with `n` layers and vocabulary `V`, and a machine of `m` layers
//! and `T` trace tokens:
//!
//! - layers `[0, m)` are the machine's, `[m, m + n)` the base's, unchanged;
//! - token ids `[0, V)` are the base's; the machine's trace token `t` is fed as id `input.0 + t` and read
//!   back as id `output.0 + t`. With an untied lm_head both ranges are `[V, V + T)` (the embedding row is the
//!   machine's token embedding, the lm_head row its readout); with a tied one (the base's embedding is its
//!   lm_head) the machine needs two rows per token, inputs `[V, V + T)` and outputs `[V + T, V + 2T)`;
//! - `model.norm` and the lm_head are the base's: the machine's readout rows are scaled by the base's final
//!   norm weights so that its logits are those of the stand-alone machine up to float rounding (far below the
//!   woven logits' margin of 1).
//!
//! **Routing.** Text positions run only the base's layers; machine positions only the machine's. Both read
//! the shared embedding, final norm and lm_head. So at every text position the grafted model computes
//! exactly the base model (bit for bit), and every machine position computes exactly the woven machine, each
//! with its own caches and positions. [`view`] gives each route as an ordinary Qwen3.5 model (a config and
//! weights) that any executor runs. A plain forward pass through all layers (what a `generate` that does not
//! route runs) mixes the two; `loom text-check` measures how much.

use crate::names::{EMBED_TOKENS, LAYERS_PREFIX, LM_HEAD};
use crate::checkpoint::{Checkpoint, CheckpointError, TensorSource};
use crate::tensor::HostTensor;
use crate::config::Qwen35Config;
use crate::tensor::WeightMap;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// File name of the graft manifest in a grafted checkpoint directory.
pub const GRAFT_FILE: &str = "graft.json";
/// Format tag and version of [`GraftManifest`].
pub const GRAFT_FORMAT: &str = "loom-graft";
pub const GRAFT_VERSION: u32 = 1;

/// What the base was (recorded at graft time).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaseInfo {
    /// The base directory as given to `loom graft`.
    pub dir: String,
    /// `model_type` of its config.json (`qwen3_5` for the released multimodal layout, `qwen3_5_text`).
    pub model_type: String,
    pub num_hidden_layers: usize,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub tie_word_embeddings: bool,
    /// Stored dtype of its layer weights (`BF16` for released checkpoints, `F32`).
    pub dtype: String,
    /// Parameters of its text model (embedding, layers, final norm, lm_head unless tied).
    pub parameters: usize,
}

/// `graft.json`: which layers and token ids of a grafted checkpoint are the machine's. Ranges are half-open
/// `[start, end)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraftManifest {
    pub format: String,
    pub version: u32,
    /// The machine's name (its `machine.json` beside this file has the trace protocol, in the machine's own
    /// token ids `0..T`).
    pub machine: String,
    /// The machine's layers.
    pub machine_layers: [usize; 2],
    /// The base's layers.
    pub base_layers: [usize; 2],
    /// Text token ids are `0..base_vocab`.
    pub base_vocab: usize,
    /// Embedding rows of the machine's tokens: trace token `t` is fed as id `machine_input_tokens[0] + t`.
    pub machine_input_tokens: [usize; 2],
    /// lm_head rows of the machine's tokens: trace token `t` is read back as id `machine_output_tokens[0] + t`.
    pub machine_output_tokens: [usize; 2],
    pub base: BaseInfo,
    /// The layer shape every layer of the grafted checkpoint has, when `loom graft --widen` made it wider than
    /// the base's (absent: the base's own shape). The base's layers then hold their weights in the first
    /// rows and columns with zeros elsewhere, and their RMSNorm weights are rescaled (see [`Widening`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub widened: Option<Widening>,
}

/// A layer shape wider than the base's, taken by a graft whose machine does not fit the base's own
/// (`loom graft --widen`). The base's weights sit in the first rows and columns (its DeltaNet heads first in
/// each of the q, k and v sections, so that value head `j` still reads key head `j / r` with the base's ratio
/// `r`); the added width is zero, so at a text position the added residual dims stay exactly 0 and the added
/// MLP units and heads add exactly 0. The RMSNorms' mean then runs over `hidden_size` dims instead of the
/// base's `h`: the text residual is carried scaled by `alpha = sqrt(hidden_size / h)` (the embedding's text rows
/// and the base's `out_proj`, `o_proj` and `down_proj` times alpha, f32), so its mean square is the base's,
/// epsilon included, and every base norm gain `1 + w` is divided by alpha (the final one by alpha² with a tied
/// lm_head). The text logits are the base's exactly when `hidden_size / h` is a power of 4 (up to the order of
/// the norm's sum), to float rounding otherwise.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Widening {
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub linear_num_key_heads: usize,
    pub linear_num_value_heads: usize,
}

/// Which part of a grafted model to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The machine's layers, its input embedding rows and its readout rows: the stand-alone woven machine.
    Machine,
    /// The base's layers and the text vocabulary: the base model.
    Text,
}

fn malformed(dir: &Path, msg: String) -> CheckpointError {
    CheckpointError::Format { path: dir.join(GRAFT_FILE).display().to_string(), msg }
}

impl GraftManifest {
    /// Read `dir/graft.json` if there is one (`Ok(None)`: not a grafted checkpoint).
    pub fn load(dir: &Path) -> Result<Option<Self>, CheckpointError> {
        let path = dir.join(GRAFT_FILE);
        if !path.exists() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path).map_err(|err| CheckpointError::Io { path: path.display().to_string(), err })?;
        let g: GraftManifest = serde_json::from_str(&text).map_err(|e| malformed(dir, e.to_string()))?;
        if g.format != GRAFT_FORMAT || g.version != GRAFT_VERSION {
            return Err(malformed(dir, format!("format {:?} version {} (expected {GRAFT_FORMAT:?} version {GRAFT_VERSION})", g.format, g.version)));
        }
        Ok(Some(g))
    }

    /// Number of the machine's trace tokens.
    pub fn machine_vocab(&self) -> usize {
        self.machine_input_tokens[1] - self.machine_input_tokens[0]
    }

    /// Check the ranges against the checkpoint's config: layers `[0, m)` and `[m, layers)`, token ranges within
    /// the vocabulary, of one length, after the text ids.
    pub fn check(&self, dir: &Path, config: &Qwen35Config) -> Result<(), CheckpointError> {
        let [m0, m1] = self.machine_layers;
        let [b0, b1] = self.base_layers;
        let [i0, i1] = self.machine_input_tokens;
        let [o0, o1] = self.machine_output_tokens;
        let bad = |msg: String| Err(malformed(dir, msg));
        if m0 != 0 || m1 != b0 || b1 != config.num_hidden_layers || m1 == 0 || b1 <= b0 {
            return bad(format!(
                "layer ranges {:?} and {:?} do not split the {} layers of config.json",
                self.machine_layers, self.base_layers, config.num_hidden_layers
            ));
        }
        if i1 <= i0 || o1 - o0 != i1 - i0 || i0 < self.base_vocab || o0 < self.base_vocab || i1 > config.vocab_size || o1 > config.vocab_size {
            return bad(format!(
                "token ranges {:?} (input) and {:?} (output) do not fit the vocabulary ({} text ids, {} in all)",
                self.machine_input_tokens, self.machine_output_tokens, self.base_vocab, config.vocab_size
            ));
        }
        Ok(())
    }
}

/// One route of a grafted checkpoint as an ordinary Qwen3.5 model, read lazily: its config (the route's layers,
/// its vocabulary, an explicit lm_head) and a [`TensorSource`] that reads each tensor from `ck` when asked (only
/// the tensors the route needs, only the embedding and lm_head rows of its vocabulary). The dense executors
/// load from it tensor by tensor, so a route never sits in memory twice. The machine route's token ids are the
/// machine's own (`0..T`), so its `machine.json` runs it unchanged; the text route's are the base's.
pub struct RouteSource<'a> {
    ck: &'a Checkpoint,
    config: Qwen35Config,
    layers: [usize; 2],
    input: [usize; 2],
    output: [usize; 2],
    /// The full checkpoint's readout tensor: its embedding when tied, else its lm_head.
    lm_name: &'static str,
}

impl<'a> RouteSource<'a> {
    /// The route of `g` over `ck`. Errors: `g`'s ranges do not fit `ck`'s config, or the route's config is
    /// invalid.
    pub fn new(ck: &'a Checkpoint, g: &GraftManifest, route: Route) -> Result<Self, CheckpointError> {
        g.check(ck.dir(), ck.config())?;
        let (layers, input, output) = match route {
            Route::Machine => (g.machine_layers, g.machine_input_tokens, g.machine_output_tokens),
            Route::Text => (g.base_layers, [0, g.base_vocab], [0, g.base_vocab]),
        };
        let full = ck.config();
        let mut config = full.clone();
        config.num_hidden_layers = layers[1] - layers[0];
        config.layer_types = full.layer_types[layers[0]..layers[1]].to_vec();
        config.vocab_size = input[1] - input[0];
        config.tie_word_embeddings = false;
        config.validate().map_err(|m| malformed(ck.dir(), format!("the {route:?} route's config is invalid: {m}")))?;
        let lm_name = if full.tie_word_embeddings { EMBED_TOKENS } else { LM_HEAD };
        Ok(RouteSource { ck, config, layers, input, output, lm_name })
    }

    /// Every tensor of the route, in memory (the sparse and incremental executors build from this).
    pub fn weights(&self) -> Result<WeightMap, CheckpointError> {
        let mut w = WeightMap::new();
        for (name, _) in self.config.expected_tensors() {
            let t = self.tensor(&name)?;
            w.insert(name, t);
        }
        Ok(w)
    }
}

impl TensorSource for RouteSource<'_> {
    fn config(&self) -> &Qwen35Config {
        &self.config
    }
    fn tensor(&self, name: &str) -> Result<HostTensor, CheckpointError> {
        if name == EMBED_TOKENS {
            self.ck.tensor_rows(name, self.input[0]..self.input[1])
        } else if name == LM_HEAD {
            self.ck.tensor_rows(self.lm_name, self.output[0]..self.output[1])
        } else if let Some(rest) = name.strip_prefix(LAYERS_PREFIX) {
            let (i, tail) = rest.split_once('.').ok_or_else(|| malformed(self.ck.dir(), format!("{name} is not a layer tensor name")))?;
            let i: usize = i.parse().map_err(|_| malformed(self.ck.dir(), format!("{name} is not a layer tensor name")))?;
            self.ck.tensor(&format!("{LAYERS_PREFIX}{}.{tail}", self.layers[0] + i))
        } else {
            self.ck.tensor(name)
        }
    }
    fn tensor_transposed(&self, name: &str) -> Result<HostTensor, CheckpointError> {
        crate::checkpoint::transposed_2d(&self.tensor(name)?, &self.ck.dir().display().to_string(), name)
    }
}

/// One route of a grafted checkpoint as an ordinary Qwen3.5 model: its config and all its weights in memory
/// (see [`RouteSource`]).
pub fn view(ck: &Checkpoint, g: &GraftManifest, route: Route) -> Result<(Qwen35Config, WeightMap), CheckpointError> {
    let src = RouteSource::new(ck, g, route)?;
    let w = src.weights()?;
    Ok((src.config, w))
}
