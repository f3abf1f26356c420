//! Random Qwen3.5 checkpoints made by our own code: a bundled tiny model for the README, and the
//! 8-layer model of Qwen3.5-9B's layer shape used by the benchmark.
//!
//! Weights are deterministic in the seed (a SplitMix64 stream per tensor name), uniformly distributed with
//! the standard deviation `1/sqrt(fan_in)` for linear and conv weights, so activations keep a sane scale at
//! any width. Norm weights are small perturbations of the identity (zero-centred norms near 0, the gated
//! DeltaNet norm near 1), `A_log = ln(u)` with `u` in [1, 16], `dt_bias` in [-1, 1].

use crate::checkpoint::{save_checkpoint_with, CheckpointError};
use crate::config::{LayerType, Qwen35Config, RopeParameters};
use crate::tensor::{HostTensor, WeightMap};

/// Named configurations for [`random_weights`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// A few-hundred-kilobyte model (vocabulary 128, hidden 32, 4 layers: 3 DeltaNet + 1 attention).
    Tiny,
    /// transformers' `Qwen3_5TextConfig` defaults: the Qwen3.5-9B layer shape (hidden 4096, vocabulary 248,320).
    Qwen35_9b,
}

impl Preset {
    /// Parse a preset name: `tiny` or `qwen3.5-9b`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "tiny" => Some(Preset::Tiny),
            "qwen3.5-9b" | "qwen35-9b" => Some(Preset::Qwen35_9b),
            _ => None,
        }
    }

    /// The preset's config; `layers` overrides the layer count (keeping transformers' default pattern of one
    /// full-attention layer in four).
    pub fn config(self, layers: Option<usize>) -> Qwen35Config {
        let mut c = match self {
            Preset::Qwen35_9b => Qwen35Config::default(),
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
    } else if name == "model.embed_tokens.weight" {
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
