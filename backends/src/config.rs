//! The Qwen3.5 text configuration (`config.json`).
//!
//! Field names and defaults follow transformers' `Qwen3_5TextConfig`
//! (`models/qwen3_5/configuration_qwen3_5.py`). A multimodal `Qwen3_5Config` keeps the text part under
//! `text_config`; [`Qwen35Config::from_json`] accepts both.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Which token mixer a decoder layer uses (`layer_types` in the config).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerType {
    /// Gated DeltaNet (`linear_attn.*` tensors).
    LinearAttention,
    /// Gated softmax attention with a KV cache (`self_attn.*` tensors).
    FullAttention,
}

/// `rope_parameters` of the text config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RopeParameters {
    #[serde(default = "default_rope_type")]
    pub rope_type: String,
    #[serde(default = "default_rope_theta")]
    pub rope_theta: f64,
    /// Fraction of `head_dim` that is rotated (the first `head_dim * partial_rotary_factor` dims).
    #[serde(default = "default_partial_rotary")]
    pub partial_rotary_factor: f64,
    /// Multimodal rope sections; for text-only positions all three position streams are equal, so the
    /// sections do not change the result. Kept so a saved config round-trips.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mrope_section: Option<Vec<usize>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mrope_interleaved: Option<bool>,
}

fn default_rope_type() -> String {
    "default".into()
}
fn default_rope_theta() -> f64 {
    10_000_000.0
}
fn default_partial_rotary() -> f64 {
    0.25
}

impl Default for RopeParameters {
    fn default() -> Self {
        Self {
            rope_type: default_rope_type(),
            rope_theta: default_rope_theta(),
            partial_rotary_factor: default_partial_rotary(),
            mrope_section: Some(vec![11, 11, 10]),
            mrope_interleaved: Some(true),
        }
    }
}

/// The text model's hyper-parameters. Defaults are transformers' `Qwen3_5TextConfig` defaults (the
/// Qwen3.5-9B layer shape: hidden 4096, intermediate 12288, 32 layers, 16 attention heads of 256 with 4 KV
/// heads, DeltaNet with 16 key heads and 32 value heads of 128, vocabulary 248,320).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Qwen35Config {
    #[serde(default = "d_vocab")]
    pub vocab_size: usize,
    #[serde(default = "d_hidden")]
    pub hidden_size: usize,
    #[serde(default = "d_inter")]
    pub intermediate_size: usize,
    #[serde(default = "d_layers")]
    pub num_hidden_layers: usize,
    #[serde(default = "d_heads")]
    pub num_attention_heads: usize,
    #[serde(default = "d_kv_heads")]
    pub num_key_value_heads: usize,
    #[serde(default = "d_head_dim")]
    pub head_dim: usize,
    #[serde(default = "d_eps")]
    pub rms_norm_eps: f64,
    #[serde(default)]
    pub tie_word_embeddings: bool,
    #[serde(default = "d_conv")]
    pub linear_conv_kernel_dim: usize,
    #[serde(default = "d_lk_dim")]
    pub linear_key_head_dim: usize,
    #[serde(default = "d_lv_dim")]
    pub linear_value_head_dim: usize,
    #[serde(default = "d_lk_heads")]
    pub linear_num_key_heads: usize,
    #[serde(default = "d_lv_heads")]
    pub linear_num_value_heads: usize,
    /// One entry per decoder layer. When absent, transformers' default pattern is used: every fourth layer
    /// (index 3, 7, ...) is full attention, the rest linear attention.
    #[serde(default)]
    pub layer_types: Vec<LayerType>,
    #[serde(default)]
    pub rope_parameters: RopeParameters,
    #[serde(default = "d_max_pos")]
    pub max_position_embeddings: usize,
    #[serde(default = "d_act")]
    pub hidden_act: String,
}

fn d_vocab() -> usize {
    248_320
}
fn d_hidden() -> usize {
    4096
}
fn d_inter() -> usize {
    12_288
}
fn d_layers() -> usize {
    32
}
fn d_heads() -> usize {
    16
}
fn d_kv_heads() -> usize {
    4
}
fn d_head_dim() -> usize {
    256
}
fn d_eps() -> f64 {
    1e-6
}
fn d_conv() -> usize {
    4
}
fn d_lk_dim() -> usize {
    128
}
fn d_lv_dim() -> usize {
    128
}
fn d_lk_heads() -> usize {
    16
}
fn d_lv_heads() -> usize {
    32
}
fn d_max_pos() -> usize {
    32_768
}
fn d_act() -> String {
    "silu".into()
}

/// Errors reading or checking a config.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `err` is part of the message, not a chained `source`, so chain-printing reports do not repeat it.
    #[error("cannot read {path}: {err}")]
    Io { path: String, err: std::io::Error },
    #[error("{path}: malformed Qwen3.5 config: {msg}")]
    Malformed { path: String, msg: String },
    /// The config parsed but its shapes are inconsistent; `err` is shown, not chained (as for `Io`).
    #[error("{path}: malformed Qwen3.5 config: {err}")]
    Invalid { path: String, err: InvalidConfig },
}

/// An inconsistent config ([`Qwen35Config::validate`]): each variant names the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidConfig {
    #[error("{field} must be positive")]
    NotPositive { field: &'static str },
    #[error("layer_types has {entries} entries but num_hidden_layers is {layers}")]
    LayerTypes { entries: usize, layers: usize },
    #[error("num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv_heads})")]
    KeyValueHeads { heads: usize, kv_heads: usize },
    #[error("linear_num_value_heads ({value_heads}) must be a multiple of linear_num_key_heads ({key_heads})")]
    LinearHeads { value_heads: usize, key_heads: usize },
    #[error("rotary dim {dim} (head_dim * partial_rotary_factor) must be even and <= head_dim ({head_dim})")]
    RotaryDim { dim: usize, head_dim: usize },
    #[error("hidden_act {act:?} is not supported (Qwen3.5 uses silu)")]
    HiddenAct { act: String },
    #[error("rope_type {rope_type:?} is not supported (only \"default\")")]
    RopeType { rope_type: String },
}

impl Default for Qwen35Config {
    fn default() -> Self {
        serde_json::from_str::<Qwen35Config>("{}")
            .expect("defaults parse")
            .normalized()
    }
}

impl Qwen35Config {
    /// Parse a `config.json` text: a text config, or a multimodal config whose text part sits under
    /// `text_config`. `origin` names the source in errors. The result is [`validate`](Self::validate)d.
    pub fn from_json(text: &str, origin: &str) -> Result<Self, ConfigError> {
        let bad = |msg: String| ConfigError::Malformed { path: origin.to_string(), msg };
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        let text_part = match value.get("text_config") {
            Some(tc) if tc.is_object() => tc.clone(),
            _ => value,
        };
        if !text_part.is_object() {
            return Err(bad("expected a JSON object".into()));
        }
        let cfg: Qwen35Config = serde_json::from_value(text_part).map_err(|e| bad(e.to_string()))?;
        let cfg = cfg.normalized();
        cfg.validate().map_err(|err| ConfigError::Invalid { path: origin.to_string(), err })?;
        Ok(cfg)
    }

    /// Read and parse `path` (a `config.json`).
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|err| ConfigError::Io { path: path.display().to_string(), err })?;
        Self::from_json(&text, &path.display().to_string())
    }

    /// Fill `layer_types` with transformers' default pattern when it is empty.
    pub fn normalized(mut self) -> Self {
        if self.layer_types.is_empty() {
            self.layer_types = (0..self.num_hidden_layers)
                .map(|i| if (i + 1) % 4 == 0 { LayerType::FullAttention } else { LayerType::LinearAttention })
                .collect();
        }
        self
    }

    /// Check the shapes are consistent; the message names the offending field.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let nz = [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("num_key_value_heads", self.num_key_value_heads),
            ("head_dim", self.head_dim),
            ("linear_conv_kernel_dim", self.linear_conv_kernel_dim),
            ("linear_key_head_dim", self.linear_key_head_dim),
            ("linear_value_head_dim", self.linear_value_head_dim),
            ("linear_num_key_heads", self.linear_num_key_heads),
            ("linear_num_value_heads", self.linear_num_value_heads),
        ];
        for (field, v) in nz {
            if v == 0 {
                return Err(InvalidConfig::NotPositive { field });
            }
        }
        if self.layer_types.len() != self.num_hidden_layers {
            return Err(InvalidConfig::LayerTypes { entries: self.layer_types.len(), layers: self.num_hidden_layers });
        }
        if self.num_attention_heads % self.num_key_value_heads != 0 {
            let (heads, kv_heads) = (self.num_attention_heads, self.num_key_value_heads);
            return Err(InvalidConfig::KeyValueHeads { heads, kv_heads });
        }
        if self.linear_num_value_heads % self.linear_num_key_heads != 0 {
            let (value_heads, key_heads) = (self.linear_num_value_heads, self.linear_num_key_heads);
            return Err(InvalidConfig::LinearHeads { value_heads, key_heads });
        }
        if self.rotary_dim() % 2 != 0 || self.rotary_dim() > self.head_dim {
            return Err(InvalidConfig::RotaryDim { dim: self.rotary_dim(), head_dim: self.head_dim });
        }
        if self.hidden_act != "silu" {
            return Err(InvalidConfig::HiddenAct { act: self.hidden_act.clone() });
        }
        if self.rope_parameters.rope_type != "default" {
            return Err(InvalidConfig::RopeType { rope_type: self.rope_parameters.rope_type.clone() });
        }
        Ok(())
    }

    /// Rotated dims per attention head: `int(head_dim * partial_rotary_factor)` as transformers computes it.
    pub fn rotary_dim(&self) -> usize {
        (self.head_dim as f64 * self.rope_parameters.partial_rotary_factor) as usize
    }
    /// DeltaNet key width of a layer: `linear_num_key_heads * linear_key_head_dim`.
    pub fn linear_key_dim(&self) -> usize {
        self.linear_num_key_heads * self.linear_key_head_dim
    }
    /// DeltaNet value width of a layer: `linear_num_value_heads * linear_value_head_dim`.
    pub fn linear_value_dim(&self) -> usize {
        self.linear_num_value_heads * self.linear_value_head_dim
    }
    /// Channels of the DeltaNet conv1d: q, k and v together (`2 * key_dim + value_dim`).
    pub fn linear_conv_dim(&self) -> usize {
        2 * self.linear_key_dim() + self.linear_value_dim()
    }

    /// The `config.json` that `Qwen3_5ForCausalLM.save_pretrained` writes for this config.
    pub fn to_hf_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("config serializes");
        let o = v.as_object_mut().expect("object");
        o.insert("architectures".into(), serde_json::json!(["Qwen3_5ForCausalLM"]));
        o.insert("model_type".into(), "qwen3_5_text".into());
        o.insert("dtype".into(), "float32".into());
        o.insert("attention_bias".into(), false.into());
        o.insert("attention_dropout".into(), 0.0.into());
        o.insert("use_cache".into(), true.into());
        o.insert("bos_token_id".into(), serde_json::Value::Null);
        o.insert("eos_token_id".into(), serde_json::Value::Null);
        o.insert("pad_token_id".into(), serde_json::Value::Null);
        o.insert("num_hidden_layers".into(), self.num_hidden_layers.into());
        v
    }

    /// Tensor names and shapes (`[out, in]` for linear weights, as PyTorch stores them) this config requires
    /// under the text-model naming of `Qwen3_5ForCausalLM` (`model.*`, `lm_head.weight`).
    pub fn expected_tensors(&self) -> Vec<(String, Vec<usize>)> {
        use crate::names::{LayerTensor, EMBED_TOKENS, FINAL_NORM, LM_HEAD};
        let h = self.hidden_size;
        let mut t = vec![(EMBED_TOKENS.to_string(), vec![self.vocab_size, h])];
        for (i, lt) in self.layer_types.iter().enumerate() {
            t.extend(LayerTensor::of(*lt).map(|n| (n.name(i), n.shape(self))));
        }
        t.push((FINAL_NORM.to_string(), vec![h]));
        if !self.tie_word_embeddings {
            t.push((LM_HEAD.to_string(), vec![self.vocab_size, h]));
        }
        t
    }

    /// Total parameter count of the text model (embedding, layers, final norm, lm_head unless tied).
    pub fn parameter_count(&self) -> usize {
        self.expected_tensors().iter().map(|(_, s)| s.iter().product::<usize>()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_qwen35_9b_shape() {
        let c = Qwen35Config::default();
        assert_eq!(c.hidden_size, 4096);
        assert_eq!(c.vocab_size, 248_320);
        assert_eq!(c.layer_types[3], LayerType::FullAttention);
        assert_eq!(c.layer_types[2], LayerType::LinearAttention);
        assert_eq!(c.linear_conv_dim(), 2 * 16 * 128 + 32 * 128);
        assert_eq!(c.rotary_dim(), 64);
    }

    #[test]
    fn multimodal_text_config_is_read() {
        let j = r#"{"model_type":"qwen3_5","text_config":{"hidden_size":64,"num_hidden_layers":2,
            "layer_types":["linear_attention","full_attention"],"vocab_size":97}}"#;
        let c = Qwen35Config::from_json(j, "x").unwrap();
        assert_eq!(c.hidden_size, 64);
        assert_eq!(c.layer_types, vec![LayerType::LinearAttention, LayerType::FullAttention]);
    }

    #[test]
    fn malformed_config_names_the_problem() {
        let e = Qwen35Config::from_json(r#"{"num_hidden_layers":2,"layer_types":["linear_attention"]}"#, "cfg.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("cfg.json") && e.contains("layer_types"), "{e}");
        let e = Qwen35Config::from_json("[1,2", "c.json").unwrap_err().to_string();
        assert!(e.contains("c.json"), "{e}");
    }
}
