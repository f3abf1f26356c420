//! The Qwen3.5 text model (`Qwen3_5ForCausalLM`) in burn 0.22, on a backend chosen at run time.
//!
//! Source of truth: transformers `models/qwen3_5/modeling_qwen3_5.py` (math summarised in
//! `../shared/MISSION.md`, "Qwen3.5 layer math"). `embed_tokens` -> decoder layers (each
//! `h += mixer(input_layernorm(h)); h += mlp(post_attention_layernorm(h))`, the mixer a Gated DeltaNet or gated
//! full attention as `layer_types` says) -> final zero-centred RMSNorm -> `lm_head` (or the tied embedding).
//!
//! [`Qwen35Model::forward`] runs a block of positions for a batch of independent sequences of equal length
//! (`[batch, seq]` token ids): a whole prompt in one call (prefill; projections, MLPs, attention and the
//! conv run over all positions at once, the DeltaNet recurrence loops over positions inside the call), or one
//! token per sequence (decode), with the caches in a [`State`].

mod attention;
mod deltanet;
mod layers;

pub use attention::KvCache;
pub use deltanet::DeltaNetState;

use crate::checkpoint::{CheckpointError, TensorSource};
use crate::config::{LayerType, Qwen35Config};
use crate::names::{LayerTensor, EMBED_TOKENS, FINAL_NORM, LM_HEAD};
use attention::Attention;
use burn::tensor::{Device, Int, Tensor, TensorData};
use deltanet::GatedDeltaNet;
use layers::{upload, Linear, Mlp, RmsNorm};

/// Errors building or running the model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error("unknown backend {0:?}: expected ndarray, flex or wgpu")]
    UnknownBackend(String),
    #[error("backend {0} is not compiled in (enable the `{0}` feature of crate `backends`)")]
    BackendUnavailable(&'static str),
    #[error("bad input: {0}")]
    Input(String),
}

/// The burn backends this runtime can use, chosen at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// burn-ndarray (CPU): the backend the design card names; deprecated in burn 0.22, gone in 0.23.
    Ndarray,
    /// burn-flex (CPU): burn 0.22's pure-Rust replacement for ndarray; `loom`'s default (faster decoding here).
    Flex,
    /// burn-wgpu (GPU through WebGPU/Vulkan; runs on Mesa's software Vulkan without a GPU).
    Wgpu,
}

impl BackendKind {
    /// Parse `ndarray`, `flex` or `wgpu`.
    pub fn parse(s: &str) -> Result<Self, ModelError> {
        match s {
            "ndarray" => Ok(Self::Ndarray),
            "flex" => Ok(Self::Flex),
            "wgpu" => Ok(Self::Wgpu),
            other => Err(ModelError::UnknownBackend(other.to_string())),
        }
    }

    /// The name `parse` accepts.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ndarray => "ndarray",
            Self::Flex => "flex",
            Self::Wgpu => "wgpu",
        }
    }

    /// The burn device of this backend.
    pub fn device(self) -> Result<Device, ModelError> {
        match self {
            #[allow(deprecated)] // burn 0.22 deprecates ndarray in favour of flex; the design card names ndarray
            Self::Ndarray => Ok(Device::ndarray()),
            Self::Flex => Ok(Device::flex()),
            #[cfg(feature = "wgpu")]
            Self::Wgpu => Ok(Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)),
            #[cfg(not(feature = "wgpu"))]
            Self::Wgpu => Err(ModelError::BackendUnavailable("wgpu")),
        }
    }
}

enum Mixer {
    Linear(GatedDeltaNet),
    Full(Attention),
}

struct DecoderLayer {
    input_norm: RmsNorm,
    post_norm: RmsNorm,
    mixer: Mixer,
    mlp: Mlp,
}

/// The caches of one layer.
#[derive(Clone)]
pub enum LayerState {
    Linear(DeltaNetState),
    Full(KvCache),
}

/// Everything a batch of sequences carries from one call to the next: per layer the DeltaNet conv and
/// recurrent states or the attention KV cache, and the number of positions already seen.
#[derive(Clone)]
pub struct State {
    pub layers: Vec<LayerState>,
    pub batch: usize,
    pub position: usize,
}

/// How the token embedding is stored.
enum Embedding {
    /// `[vocab, hidden]`, rows selected (untied model; `lm_head` has its own weight).
    Rows(Tensor<2>),
    /// Tied embeddings: only the transposed matrix `[hidden, vocab]` is kept (it is the `lm_head` weight);
    /// lookups select its columns.
    TiedColumns,
}

/// Which positions' logits [`Qwen35Model::forward`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Logits {
    /// Every position: `[B, T, vocab]`.
    All,
    /// Only the last position: `[B, 1, vocab]` (what generation needs; saves the vocabulary matmul).
    Last,
}

/// The result of [`Qwen35Model::forward`].
pub struct ForwardOutput {
    /// `[B, T, vocab]` or `[B, 1, vocab]` (see [`Logits`]).
    pub logits: Tensor<3>,
    /// With `collect_hidden`: `hidden[0]` = embeddings, `hidden[i]` = output of decoder layer `i`, except the
    /// last, which has the final norm applied (as transformers' `output_hidden_states`), each `[B, T, hidden]`.
    pub hidden: Vec<Tensor<3>>,
}

/// A loaded Qwen3.5 text model on one burn device.
pub struct Qwen35Model {
    config: Qwen35Config,
    device: Device,
    embed: Embedding,
    layers: Vec<DecoderLayer>,
    norm: RmsNorm,
    /// `[hidden, vocab]`
    lm_head: Linear,
}

impl Qwen35Model {
    /// Load every weight of `ck` onto `device`, one tensor at a time (converted from the memory map, so only
    /// one tensor is ever held twice). `lm_head` and the embedding are loaded first, while little else is held.
    pub fn load(ck: &dyn TensorSource, device: &Device) -> Result<Self, ModelError> {
        let cfg = ck.config().clone();
        let eps = cfg.rms_norm_eps;
        let (embed, lm_head) = if cfg.tie_word_embeddings {
            (Embedding::TiedColumns, Linear::load(ck, EMBED_TOKENS, device)?)
        } else {
            let head = Linear::load(ck, LM_HEAD, device)?;
            let e = ck.tensor(EMBED_TOKENS)?;
            let (v, h) = (e.shape[0], e.shape[1]);
            (Embedding::Rows(upload(e.data, [v, h], device)), head)
        };
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for (i, lt) in cfg.layer_types.iter().enumerate() {
            let mixer = match lt {
                LayerType::LinearAttention => {
                    Mixer::Linear(GatedDeltaNet::load(ck, &cfg, i, device)?)
                }
                LayerType::FullAttention => Mixer::Full(Attention::load(ck, &cfg, i, device)?),
            };
            layers.push(DecoderLayer {
                input_norm: RmsNorm::load(ck, &LayerTensor::InputNorm.name(i), eps, device)?,
                post_norm: RmsNorm::load(ck, &LayerTensor::PostNorm.name(i), eps, device)?,
                mixer,
                mlp: Mlp::load(ck, i, device)?,
            });
        }
        let norm = RmsNorm::load(ck, FINAL_NORM, eps, device)?;
        Ok(Self { config: cfg, device: device.clone(), embed, layers, norm, lm_head })
    }

    /// The model's config.
    pub fn config(&self) -> &Qwen35Config {
        &self.config
    }

    /// The device the weights live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Empty caches for `batch` independent sequences.
    pub fn new_state(&self, batch: usize) -> State {
        let layers = self
            .layers
            .iter()
            .map(|l| match &l.mixer {
                Mixer::Linear(d) => LayerState::Linear(d.empty_state(batch, &self.device)),
                Mixer::Full(_) => LayerState::Full(KvCache::default()),
            })
            .collect();
        State { layers, batch, position: 0 }
    }

    /// Token embeddings of `ids` (`[B][T]`, equal lengths), `[B, T, hidden]`.
    fn embed(&self, ids: &[Vec<u32>]) -> Result<Tensor<3>, ModelError> {
        let b = ids.len();
        let t = ids.first().map_or(0, |s| s.len());
        if b == 0 || t == 0 {
            return Err(ModelError::Input("empty batch or empty sequence".into()));
        }
        if ids.iter().any(|s| s.len() != t) {
            return Err(ModelError::Input("all sequences of a batch must have the same length".into()));
        }
        let vocab = self.config.vocab_size;
        if let Some(bad) = ids.iter().flatten().find(|&&id| id as usize >= vocab) {
            return Err(ModelError::Input(format!("token id {bad} is outside the vocabulary (size {vocab})")));
        }
        let flat: Vec<i64> = ids.iter().flatten().map(|&id| id as i64).collect();
        let idx = Tensor::<1, Int>::from_data(TensorData::new(flat, [b * t]), &self.device);
        let h = self.config.hidden_size;
        let rows = match &self.embed {
            Embedding::Rows(w) => w.clone().select(0, idx),
            Embedding::TiedColumns => self.lm_head.w.clone().select(1, idx).transpose(),
        };
        Ok(rows.reshape([b, t, h]))
    }

    /// Run `ids` (`[B][T]`: B independent sequences of equal length T) at positions `state.position ..
    /// state.position + T`, advancing `state`. `state.batch` must equal B.
    pub fn forward(
        &self,
        ids: &[Vec<u32>],
        state: &mut State,
        logits: Logits,
        collect_hidden: bool,
    ) -> Result<ForwardOutput, ModelError> {
        if ids.len() != state.batch {
            return Err(ModelError::Input(format!("batch of {} sequences but the state holds {}", ids.len(), state.batch)));
        }
        let mut x = self.embed(ids)?;
        let t = x.dims()[1];
        let pos0 = state.position;
        let mut hidden = Vec::new();
        if collect_hidden {
            hidden.push(x.clone());
        }
        let n = self.layers.len();
        for (i, (layer, ls)) in self.layers.iter().zip(state.layers.iter_mut()).enumerate() {
            let h = layer.input_norm.forward(x.clone());
            let h = match (&layer.mixer, ls) {
                (Mixer::Linear(d), LayerState::Linear(s)) => d.forward(h, s),
                (Mixer::Full(a), LayerState::Full(c)) => a.forward(h, pos0, c),
                _ => return Err(ModelError::Input("state does not belong to this model".into())),
            };
            x = x + h;
            let h = layer.mlp.forward(layer.post_norm.forward(x.clone()));
            x = x + h;
            if collect_hidden && i + 1 < n {
                hidden.push(x.clone());
            }
        }
        let x = self.norm.forward(x);
        if collect_hidden {
            hidden.push(x.clone());
        }
        state.position += t;
        let x = match logits {
            Logits::All => x,
            Logits::Last => {
                let [b, t, h] = x.dims();
                x.slice([0..b, t - 1..t, 0..h])
            }
        };
        Ok(ForwardOutput { logits: self.lm_head.forward(x), hidden })
    }

    /// Greedy generation for one sequence: prefill `prompt` (in one call, or one token at a time when
    /// `stepwise`), then decode `max_new_tokens` tokens. Returns the generated ids and, per generated position,
    /// the logits it was chosen from (`[vocab]` each).
    pub fn generate(&self, prompt: &[u32], max_new_tokens: usize, stepwise: bool) -> Result<(Vec<u32>, Vec<Vec<f32>>), ModelError> {
        if prompt.is_empty() {
            return Err(ModelError::Input("empty prompt".into()));
        }
        let mut state = self.new_state(1);
        let mut last = if stepwise {
            let mut out = None;
            for &tok in prompt {
                out = Some(self.forward(&[vec![tok]], &mut state, Logits::Last, false)?.logits);
            }
            out.expect("prompt is not empty")
        } else {
            self.forward(&[prompt.to_vec()], &mut state, Logits::Last, false)?.logits
        };
        let mut generated = Vec::with_capacity(max_new_tokens);
        let mut all_logits = Vec::with_capacity(max_new_tokens);
        for step in 0..max_new_tokens {
            let row: Vec<f32> = last
                .into_data()
                .try_to_vec::<f32>()
                .map_err(|e| ModelError::Input(format!("reading logits back: {e:?}")))?;
            let next = argmax(&row);
            generated.push(next);
            all_logits.push(row);
            if step + 1 == max_new_tokens {
                break;
            }
            last = self.forward(&[vec![next]], &mut state, Logits::Last, false)?.logits;
        }
        Ok((generated, all_logits))
    }
}

/// Index of the largest value (the first one on ties, like `torch.argmax`); shared with the sparse executor.
pub use crate::cpu::argmax;
