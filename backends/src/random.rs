//! Random Qwen3.5 checkpoints made by our own code: a bundled tiny model for the README, the 8-layer model
//! of Qwen3.5-9B's layer shape used by the benchmark, and random bases of the released sizes (0.8B, 2B, 4B, 9B)
//! in the text layout or in the released repositories' layout ([`save_random_released`]).
//!
//! Weights are deterministic in the seed (a SplitMix64 stream per tensor name), uniformly distributed with
//! the standard deviation `1/sqrt(fan_in)` for linear and conv weights, so activations keep a sane scale at
//! any width. Norm weights are small perturbations of the identity (zero-centred norms near 0, the gated
//! DeltaNet norm near 1), `A_log = ln(u)` with `u` in [1, 16], `dt_bias` in [-1, 1].

use crate::checkpoint::{canonical_name, save_checkpoint_with, write_sharded, CheckpointError, TensorBytes};
use crate::config::{LayerType, Qwen35Config, RopeParameters};
use crate::tensor::{HostTensor, WeightMap};

/// Named configurations for [`random_weights`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// A few-hundred-kilobyte model (vocabulary 128, hidden 32, 4 layers: 3 DeltaNet + 1 attention).
    Tiny,
    /// Qwen3.5-0.8B (hidden 1024, intermediate 3584, 24 layers, 8/2 attention heads, 16 DeltaNet value heads,
    /// tied embeddings).
    Qwen35_0_8b,
    /// Qwen3.5-2B (hidden 2048, intermediate 6144, 24 layers, 8/2 attention heads, 16 DeltaNet value heads,
    /// tied embeddings).
    Qwen35_2b,
    /// Qwen3.5-4B (hidden 2560, intermediate 9216, 32 layers, 16/4 attention heads, 32 DeltaNet value heads,
    /// tied embeddings).
    Qwen35_4b,
    /// transformers' `Qwen3_5TextConfig` defaults: the Qwen3.5-9B layer shape (hidden 4096, vocabulary 248,320).
    Qwen35_9b,
}

/// The preset names [`Preset::parse`] accepts (one spelling each), for messages.
pub const PRESET_NAMES: &[&str] = &["tiny", "qwen3.5-0.8b", "qwen3.5-2b", "qwen3.5-4b", "qwen3.5-9b"];

/// A released size's text config: the shared settings of every Qwen3.5 size (vocabulary 248,320, head_dim 256,
/// DeltaNet 16 key heads of 128 and value heads of 128, conv kernel 4, rope theta 1e7 with a quarter of each
/// head rotated and interleaved mrope sections [11, 11, 10], 262,144 positions) with the size's widths.
fn released(hidden: usize, intermediate: usize, layers: usize, heads: (usize, usize), value_heads: usize, tied: bool) -> Qwen35Config {
    Qwen35Config {
        vocab_size: 248_320,
        hidden_size: hidden,
        intermediate_size: intermediate,
        num_hidden_layers: layers,
        num_attention_heads: heads.0,
        num_key_value_heads: heads.1,
        head_dim: 256,
        rms_norm_eps: 1e-6,
        tie_word_embeddings: tied,
        linear_conv_kernel_dim: 4,
        linear_key_head_dim: 128,
        linear_value_head_dim: 128,
        linear_num_key_heads: 16,
        linear_num_value_heads: value_heads,
        layer_types: vec![],
        rope_parameters: RopeParameters {
            rope_theta: 10_000_000.0,
            partial_rotary_factor: 0.25,
            mrope_section: Some(vec![11, 11, 10]),
            mrope_interleaved: Some(true),
            ..Default::default()
        },
        max_position_embeddings: 262_144,
        ..Qwen35Config::default()
    }
}

impl Preset {
    /// Parse a preset name: one of [`PRESET_NAMES`] (`qwen35-*` is accepted for `qwen3.5-*`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "tiny" => Some(Preset::Tiny),
            "qwen3.5-0.8b" | "qwen35-0.8b" => Some(Preset::Qwen35_0_8b),
            "qwen3.5-2b" | "qwen35-2b" => Some(Preset::Qwen35_2b),
            "qwen3.5-4b" | "qwen35-4b" => Some(Preset::Qwen35_4b),
            "qwen3.5-9b" | "qwen35-9b" => Some(Preset::Qwen35_9b),
            _ => None,
        }
    }

    /// The preset's config; `layers` overrides the layer count (keeping transformers' default pattern of one
    /// full-attention layer in four).
    pub fn config(self, layers: Option<usize>) -> Qwen35Config {
        let mut c = match self {
            Preset::Qwen35_9b => Qwen35Config::default(),
            Preset::Qwen35_0_8b => released(1024, 3584, 24, (8, 2), 16, true),
            Preset::Qwen35_2b => released(2048, 6144, 24, (8, 2), 16, true),
            Preset::Qwen35_4b => released(2560, 9216, 32, (16, 4), 32, true),
            Preset::Tiny => Qwen35Config {
                vocab_size: 128,
                hidden_size: 32,
                intermediate_size: 64,
                num_hidden_layers: 4,
                num_attention_heads: 4,
                num_key_value_heads: 2,
                head_dim: 16,
                linear_key_head_dim: 8,
                linear_value_head_dim: 8,
                linear_num_key_heads: 2,
                linear_num_value_heads: 4,
                layer_types: vec![],
                rope_parameters: RopeParameters { rope_theta: 10_000.0, mrope_section: Some(vec![1, 1, 0]), ..Default::default() },
                max_position_embeddings: 512,
                ..Qwen35Config::default()
            },
        };
        if let Some(n) = layers {
            c.num_hidden_layers = n;
            c.layer_types.clear();
        }
        c.normalized()
    }
}

/// SplitMix64: a tiny, fast, well-mixed generator (enough for random test weights).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The deterministic random values of one tensor (see the module docs for the distributions).
pub fn random_tensor(name: &str, shape: &[usize], seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64(seed ^ fnv1a(name));
    let n: usize = shape.iter().product();
    let (lo, hi) = if name.ends_with("A_log") {
        (0.0, 16f32.ln())
    } else if name.ends_with("dt_bias") {
        (-1.0, 1.0)
    } else if name.ends_with("linear_attn.norm.weight") {
        (0.9, 1.1)
    } else if name.ends_with("norm.weight") || name.ends_with("layernorm.weight") {
        (-0.1, 0.1)
    } else if name == crate::names::EMBED_TOKENS {
        (-1.0, 1.0)
    } else {
        // Linear [out, in] or conv [C, 1, K]: std 1/sqrt(fan_in), i.e. half-width sqrt(3/fan_in).
        let fan_in: usize = shape[1..].iter().product();
        let a = (3.0 / fan_in.max(1) as f32).sqrt();
        (-a, a)
    };
    (0..n).map(|_| lo + (hi - lo) * rng.unit()).collect()
}

/// Deterministic random weights for every tensor `config` requires ([`Qwen35Config::expected_tensors`]).
pub fn random_weights(config: &Qwen35Config, seed: u64) -> WeightMap {
    config
        .expected_tensors()
        .into_iter()
        .map(|(name, shape)| {
            let data = random_tensor(&name, &shape, seed);
            (name, HostTensor::new(shape, data))
        })
        .collect()
}

/// Write a random checkpoint to `dir` one tensor at a time (never the whole model in memory).
pub fn save_random_checkpoint(dir: &std::path::Path, config: &Qwen35Config, seed: u64) -> Result<(), CheckpointError> {
    save_checkpoint_with(dir, config, |name, shape| Ok(std::borrow::Cow::Owned(random_tensor(name, shape, seed))))
}

/// Layer types of a config, for display.
pub fn describe(config: &Qwen35Config) -> String {
    let lin = config.layer_types.iter().filter(|t| **t == LayerType::LinearAttention).count();
    format!(
        "{} layers ({} Gated DeltaNet, {} full attention), hidden {}, vocabulary {}, {} parameters",
        config.num_hidden_layers,
        lin,
        config.num_hidden_layers - lin,
        config.hidden_size,
        config.vocab_size,
        config.parameter_count()
    )
}

/// The file layout [`save_random_checkpoint`] / [`save_random_released`] write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `Qwen3_5ForCausalLM.save_pretrained`'s: a text `config.json` and one f32 `model.safetensors`.
    Text,
    /// A Hugging Face download of `Qwen/Qwen3.5-*`: `Qwen3_5ForConditionalGeneration` config, bf16 shards under
    /// `model.language_model.*` with `model.visual.*` and `mtp.*` beside them, a shard index.
    Released,
}

impl Layout {
    /// Parse `text` or `released`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "text" => Some(Layout::Text),
            "released" => Some(Layout::Released),
            _ => None,
        }
    }
}

/// A text tensor's name in the released layout: `model.*` becomes `model.language_model.*`; `lm_head.weight`
/// stays. The inverse of [`canonical_name`] on text tensors.
pub fn released_name(canonical: &str) -> String {
    match canonical.strip_prefix("model.") {
        Some(rest) => format!("model.language_model.{rest}"),
        None => canonical.to_string(),
    }
}

/// Width of the small stand-in vision tower of the released layout (8 for models narrower than 256, else 32).
fn vision_width(config: &Qwen35Config) -> usize {
    if config.hidden_size < 256 {
        8
    } else {
        32
    }
}

/// The non-text tensors the released layout carries so that loaders' skipping of them is exercised: a small
/// stand-in vision tower (`model.visual.*`, one block, [`released_vision_config`]'s widths) and one MTP
/// layer's norms and input projection (`mtp.*`, at the text width). Not a working vision tower or MTP head.
pub fn released_extra_tensors(config: &Qwen35Config) -> Vec<(String, Vec<usize>)> {
    let (h, v) = (config.hidden_size, vision_width(config));
    let mut t: Vec<(String, Vec<usize>)> = vec![
        ("model.visual.patch_embed.proj.weight".into(), vec![v, 3, 2, 16, 16]),
        ("model.visual.patch_embed.proj.bias".into(), vec![v]),
        ("model.visual.pos_embed.weight".into(), vec![16, v]),
        ("model.visual.blocks.0.norm1.weight".into(), vec![v]),
        ("model.visual.blocks.0.norm2.weight".into(), vec![v]),
        ("model.visual.blocks.0.attn.qkv.weight".into(), vec![3 * v, v]),
        ("model.visual.blocks.0.attn.proj.weight".into(), vec![v, v]),
        ("model.visual.blocks.0.mlp.linear_fc1.weight".into(), vec![2 * v, v]),
        ("model.visual.blocks.0.mlp.linear_fc2.weight".into(), vec![v, 2 * v]),
        ("model.visual.merger.norm.weight".into(), vec![v]),
        ("model.visual.merger.linear_fc1.weight".into(), vec![4 * v, 4 * v]),
        ("model.visual.merger.linear_fc2.weight".into(), vec![h, 4 * v]),
    ];
    for n in ["mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight", "mtp.norm.weight"] {
        t.push((n.into(), vec![h]));
    }
    t.push(("mtp.fc.weight".into(), vec![h, 2 * h]));
    t.push(("mtp.layers.0.input_layernorm.weight".into(), vec![h]));
    t.push(("mtp.layers.0.post_attention_layernorm.weight".into(), vec![h]));
    t
}

/// The `vision_config` of the released layout's `config.json`: the stand-in tower of
/// [`released_extra_tensors`] (one block), with the released models' patch geometry.
pub fn released_vision_config(config: &Qwen35Config) -> serde_json::Value {
    let v = vision_width(config);
    serde_json::json!({
        "model_type": "qwen3_5",
        "depth": 1,
        "hidden_size": v,
        "hidden_act": "gelu_pytorch_tanh",
        "intermediate_size": 2 * v,
        "num_heads": 2,
        "in_channels": 3,
        "patch_size": 16,
        "temporal_patch_size": 2,
        "spatial_merge_size": 2,
        "out_hidden_size": config.hidden_size,
        "num_position_embeddings": 16,
        "deepstack_visual_indexes": [],
        "initializer_range": 0.02,
    })
}

/// The released layout's `config.json`: `Qwen3_5ForConditionalGeneration` (`model_type` `qwen3_5`) with the
/// text settings under `text_config` (`model_type` `qwen3_5_text`, bf16, gated attention output, one MTP layer,
/// eos `<|endoftext|>` 248044 where the vocabulary has it), [`released_vision_config`], the vision token ids
/// of the released tokenizer, and `tie_word_embeddings` at both levels.
pub fn released_config_json(config: &Qwen35Config) -> serde_json::Value {
    let mut text = config.to_hf_json();
    let t = text.as_object_mut().expect("object");
    t.remove("architectures");
    t.insert("model_type".into(), "qwen3_5_text".into());
    t.insert("dtype".into(), "bfloat16".into());
    t.insert("attn_output_gate".into(), true.into());
    t.insert("full_attention_interval".into(), 4.into());
    t.insert("mamba_ssm_dtype".into(), "float32".into());
    t.insert("mtp_num_hidden_layers".into(), 1.into());
    t.insert("mtp_use_dedicated_embeddings".into(), false.into());
    t.insert("initializer_range".into(), 0.02.into());
    // `<|endoftext|>`, where the vocabulary has it (transformers warns about an eos id past a small vocabulary).
    if config.vocab_size > 248_044 {
        t.insert("eos_token_id".into(), 248_044.into());
    }
    t.insert("tie_word_embeddings".into(), config.tie_word_embeddings.into());
    serde_json::json!({
        "architectures": ["Qwen3_5ForConditionalGeneration"],
        "model_type": "qwen3_5",
        "image_token_id": 248_056,
        "video_token_id": 248_057,
        "vision_start_token_id": 248_053,
        "vision_end_token_id": 248_054,
        "tie_word_embeddings": config.tie_word_embeddings,
        "text_config": text,
        "vision_config": released_vision_config(config),
    })
}

/// The released layout's `generation_config.json`: eos `<|im_end|>` 248046 and `<|endoftext|>` 248044, pad
/// 248044, and the sampling settings Qwen recommends for thinking mode (temperature 0.6, top_p 0.95, top_k 20).
pub fn released_generation_config_json() -> serde_json::Value {
    serde_json::json!({
        "bos_token_id": 248_044,
        "eos_token_id": [248_046, 248_044],
        "pad_token_id": 248_044,
        "do_sample": true,
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 20,
    })
}

/// The tensors of the released layout, in file order, all bf16: the text tensors of `config` under their
/// [`released_name`]s (no `lm_head.weight` when tied), then [`released_extra_tensors`].
pub fn released_specs(config: &Qwen35Config) -> Vec<(String, Vec<usize>, safetensors::Dtype)> {
    config
        .expected_tensors()
        .into_iter()
        .map(|(n, s)| (released_name(&n), s))
        .chain(released_extra_tensors(config))
        .map(|(n, s)| (n, s, safetensors::Dtype::BF16))
        .collect()
}

/// Write a random checkpoint in the released layout ([`Layout::Released`]) to `dir`: bf16 shards of at most
/// `max_shard_bytes` bytes with `model.safetensors.index.json` ([`write_sharded`]), `config.json`
/// ([`released_config_json`]) and `generation_config.json` ([`released_generation_config_json`]); the tokenizer
/// files are the caller's. A text tensor's values are [`random_tensor`] of its canonical (text) name rounded to
/// bf16, so this is the text layout's model of the same config and seed up to bf16 rounding. Tensors are made
/// one at a time (the memory of the largest). `dir` must be absent or hold only checkpoint files
/// ([`crate::checkpoint::prepare_sharded_dir`]). Returns the shard paths.
pub fn save_random_released(
    dir: &std::path::Path,
    config: &Qwen35Config,
    seed: u64,
    max_shard_bytes: usize,
) -> Result<Vec<std::path::PathBuf>, CheckpointError> {
    let io = |path: std::path::PathBuf| move |err| CheckpointError::Io { path: path.display().to_string(), err };
    let specs = released_specs(config);
    let shards = write_sharded(dir, &specs, max_shard_bytes, |name, shape| {
        let key = canonical_name(name).unwrap_or_else(|| name.to_string());
        Ok(TensorBytes::F32(std::borrow::Cow::Owned(random_tensor(&key, shape, seed))))
    })?;
    for (file, value) in [("config.json", released_config_json(config)), ("generation_config.json", released_generation_config_json())] {
        let tmp = dir.join(format!(".{file}.tmp"));
        let text = serde_json::to_string_pretty(&value).expect("config serializes") + "\n";
        std::fs::write(&tmp, text).map_err(io(tmp.clone()))?;
        std::fs::rename(&tmp, dir.join(file)).map_err(io(dir.join(file)))?;
    }
    Ok(shards)
}
