//! The model geometry in one room: [`Geometry`] (the shape of the woven Qwen3.5 layers), [`GeometryConfig`]
//! (a config's `[geometry]`: a base model's shape to fit, missing fields at the minimal need), [`Mixers`]
//! (what the scheduler may put into one layer's token mixer), the minimal d_k, and the fit that grows the
//! minimal geometry to a target or names every dimension that does not fit.

use crate::error::WeaveError;
use crate::numerics::MAX_DK;
use serde::{Deserialize, Serialize};

/// Model geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    pub layers: usize,
    pub hidden: usize,
    pub intermediate: usize,
    /// DeltaNet key heads.
    pub key_heads: usize,
    /// DeltaNet value heads (a multiple of `key_heads`).
    pub value_heads: usize,
    pub dk: usize,
    pub dv: usize,
    pub vocab: usize,
    /// Every `attention_interval`-th layer is full attention (Qwen3.5's `full_attention_interval`; 0: none,
    /// the weaver then adds one inert attention layer where a checkpoint needs it).
    #[serde(default)]
    pub attention_interval: usize,
}

impl Geometry {
    /// The summary that [`Display`](std::fmt::Display) writes, with `attention_layers` (how many layers are full
    /// attention) after the layer count when given.
    pub(crate) fn write_summary(&self, f: &mut std::fmt::Formatter<'_>, attention_layers: Option<usize>) -> std::fmt::Result {
        write!(f, "{} layers", self.layers)?;
        if let Some(a) = attention_layers {
            write!(f, " ({a} full attention)")?;
        }
        write!(
            f,
            ", hidden {}, intermediate {}, DeltaNet {} key / {} value heads (d_k {}, d_v {}), vocab {}",
            self.hidden, self.intermediate, self.key_heads, self.value_heads, self.dk, self.dv, self.vocab
        )
    }

    /// Grow to `target`, or name every dimension that does not fit. `target.layers == 0` takes as many
    /// layers as needed.
    pub fn fit(&self, target: &Geometry) -> Result<Geometry, WeaveError> {
        let mut over = Vec::new();
        let mut chk = |name: &str, need: usize, have: usize| {
            if need > have {
                over.push(format!("{name} needs {need} but the target has {have}"));
            }
        };
        if target.layers > 0 {
            chk("num_hidden_layers", self.layers, target.layers);
        }
        chk("hidden_size", self.hidden, target.hidden);
        chk("intermediate_size", self.intermediate, target.intermediate);
        chk("linear_num_key_heads", self.key_heads, target.key_heads);
        chk("linear_num_value_heads", self.value_heads, target.value_heads);
        chk("linear_value_head_dim", self.dv, target.dv);
        chk("vocab_size", self.vocab, target.vocab);
        if target.key_heads == 0 || target.value_heads % target.key_heads != 0 {
            over.push(format!("linear_num_value_heads {} must be a multiple of linear_num_key_heads {}", target.value_heads, target.key_heads));
        } else if self.value_heads / self.key_heads > target.value_heads / target.key_heads {
            over.push(format!(
                "{} value heads per key head needed but the target has {}",
                self.value_heads / self.key_heads,
                target.value_heads / target.key_heads
            ));
        }
        if crate::numerics::value_scale(target.dk).is_none() {
            over.push(format!(
                "linear_key_head_dim {} must be a power of two from 4 to {MAX_DK} (the weaver's exact one-hot memory reads, see numerics::value_scale)",
                target.dk
            ));
        }
        if target.dv % 4 != 0 {
            over.push(format!("linear_value_head_dim {} must be a multiple of 4", target.dv));
        } else if crate::numerics::value_scale(target.dk).is_some() && crate::numerics::read_scales(target.dk, target.dv).is_none() {
            over.push(format!(
                "linear_value_head_dim {} must be a power of two of at least 8 with linear_key_head_dim {} (an odd power of two: the gated norm's anchor, see numerics::read_scales)",
                target.dv, target.dk
            ));
        }
        if self.attention_interval != target.attention_interval {
            over.push(format!("full_attention_interval {} was not scheduled (the target's other dimensions are invalid)", target.attention_interval));
        }
        let layers = if target.layers == 0 { self.layers } else { target.layers };
        if over.is_empty() { Ok(Geometry { layers, ..*target }) } else { Err(WeaveError::Overflow(over.join("; "))) }
    }
}

/// One line: `L layers, hidden H, intermediate I, DeltaNet K key / V value heads (d_k D, d_v D), vocab N`
/// (the [`Allocation`](crate::allocate::Allocation)'s adds how many layers are full attention).
impl std::fmt::Display for Geometry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.write_summary(f, None)
    }
}

/// What the token mixers can hold: the geometry being fitted, or [`Mixers::unbounded`] for the minimal one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mixers {
    /// Rows per head (d_k): a memory of more rows is split into blocks of d_k rows, one head each.
    pub dk: usize,
    /// Value heads one layer holds.
    pub value_heads: usize,
    /// Key heads one layer holds.
    pub key_heads: usize,
    /// Value heads per key head (Qwen3.5's grouped keys); heads of one key head share its query and key.
    pub per_key: usize,
    /// Layers `interval - 1, 2·interval - 1, ...` are full attention and hold no heads (transformers'
    /// `Qwen3_5TextConfig`: `layer_types[i]` is full attention when `(i + 1) % full_attention_interval == 0`);
    /// 0: none.
    pub attention_interval: usize,
}

impl Mixers {
    /// No limits: every read in one mixer (the minimal geometry).
    pub fn unbounded(dk: usize) -> Mixers {
        Mixers { dk, value_heads: usize::MAX, key_heads: usize::MAX, per_key: 1, attention_interval: 0 }
    }
    /// Is layer `l`'s mixer full attention?
    pub fn is_attention(&self, l: usize) -> bool {
        self.attention_interval > 0 && (l + 1) % self.attention_interval == 0
    }
}

fn pow4_at_least(n: usize) -> usize {
    let mut d = 4;
    while d < n {
        d *= 4;
    }
    d
}

/// Rows of each memory of a machine.
pub fn memory_rows(desc: &isa_api::MachineDesc) -> Vec<usize> {
    desc.memories.iter().map(|m| 1usize << m.addr_width).collect()
}

/// The minimal d_k: the smallest power of 4 holding the largest memory, at most [`MAX_DK`] (larger memories
/// are split into blocks of that many rows).
pub fn minimal_dk(desc: &isa_api::MachineDesc) -> usize {
    pow4_at_least(memory_rows(desc).into_iter().map(|r| r.min(MAX_DK)).max().unwrap_or(1))
}

/// Geometry overrides of a machine config (missing fields keep the minimal value).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeometryConfig {
    pub layers: Option<usize>,
    pub hidden: Option<usize>,
    pub intermediate: Option<usize>,
    pub key_heads: Option<usize>,
    pub value_heads: Option<usize>,
    pub dk: Option<usize>,
    pub dv: Option<usize>,
    pub vocab: Option<usize>,
    /// Every n-th layer full attention (Qwen3.5's `full_attention_interval`).
    pub attention_interval: Option<usize>,
    /// Exported checkpoints (`loom weave`) include one inert full-attention layer, which transformers' cache
    /// needs to count positions (default true; runs inside loom weave without it).
    pub hf_compatible: Option<bool>,
    /// Move gates as late as their readers allow where that holds no input longer (`schedule::sink`): fewer
    /// values live at once, so a narrower hidden size (default false; `loom graft` sets it).
    pub sink: Option<bool>,
}

impl GeometryConfig {
    /// Read a `[geometry]` table (an rv32im config keeps it as a TOML table); unknown fields are errors.
    pub fn from_table(t: &toml::Table) -> Result<Self, WeaveError> {
        toml::Value::Table(t.clone()).try_into().map_err(|e| WeaveError::Other(format!("[geometry]: {e}")))
    }

    /// The target geometry: these fields over the minimal geometry `m` (`layers` missing: as many as needed).
    pub fn target(&self, m: &Geometry) -> Geometry {
        Geometry {
            layers: self.layers.unwrap_or(0),
            hidden: self.hidden.unwrap_or(m.hidden),
            intermediate: self.intermediate.unwrap_or(m.intermediate),
            key_heads: self.key_heads.unwrap_or(m.key_heads),
            value_heads: self.value_heads.unwrap_or(m.value_heads),
            dk: self.dk.unwrap_or(m.dk),
            dv: self.dv.unwrap_or(m.dv),
            vocab: self.vocab.unwrap_or(m.vocab),
            attention_interval: self.attention_interval.unwrap_or(m.attention_interval),
        }
    }
}


impl GeometryConfig {
    /// What the scheduler may put into one layer's token mixer: the given head counts, d_k and attention
    /// interval; missing head counts are unbounded (the schedule then needs what the minimal geometry needs),
    /// a missing d_k is the minimal one. A target the fit will reject anyway (see [`Geometry::fit`]) is scheduled
    /// as the minimal geometry, so the error names it instead of the schedule spreading reads over a bad shape.
    pub fn mixers(&self, desc: &isa_api::MachineDesc) -> Mixers {
        let dk = self.dk.unwrap_or_else(|| minimal_dk(desc));
        let (k, v) = (self.key_heads.unwrap_or(usize::MAX), self.value_heads.unwrap_or(usize::MAX));
        let valid = k > 0 && v >= k && crate::numerics::value_scale(dk).is_some();
        if !valid {
            return Mixers::unbounded(minimal_dk(desc));
        }
        let per_key = match (self.key_heads, self.value_heads) {
            (Some(k), Some(v)) => v / k,
            _ => 1,
        };
        Mixers { dk, value_heads: v, key_heads: k, per_key, attention_interval: self.attention_interval.unwrap_or(0) }
    }

    /// Value heads per key head, when both counts are given and divide.
    pub fn value_heads_per_key(&self) -> Option<usize> {
        match (self.key_heads, self.value_heads) {
            (Some(k), Some(v)) if k > 0 && v % k == 0 => Some((v / k).max(1)),
            _ => None,
        }
    }
}

/// The schedule's [`Mixers`] for a target (or none: the minimal geometry).
pub fn mixers(desc: &isa_api::MachineDesc, target: Option<&GeometryConfig>) -> Mixers {
    target.map_or_else(|| Mixers::unbounded(minimal_dk(desc)), |t| t.mixers(desc))
}

impl From<Geometry> for GeometryConfig {
    /// Every field given.
    fn from(g: Geometry) -> Self {
        GeometryConfig {
            layers: Some(g.layers),
            hidden: Some(g.hidden),
            intermediate: Some(g.intermediate),
            key_heads: Some(g.key_heads),
            value_heads: Some(g.value_heads),
            dk: Some(g.dk),
            dv: Some(g.dv),
            vocab: Some(g.vocab),
            attention_interval: Some(g.attention_interval),
            hf_compatible: None,
            sink: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{weave, WeaveOptions};

    #[test]
    fn geometry_overflow_is_named() {
        let g = GeometryConfig { layers: Some(3), hidden: Some(100), ..GeometryConfig::default() };
        let e = weave(&isa_api::examples::acc8(), &WeaveOptions { fit: Some(g), attention_layer: true }).unwrap_err().to_string();
        assert!(e.contains("num_hidden_layers needs 8 but the target has 3"), "{e}");
        assert!(e.contains("hidden_size needs"), "{e}");
    }

    #[test]
    fn missing_fields_take_the_minimal_need_in_one_weave() {
        // The minimal need of a fitted weave: every field missing (a fitted weave takes no write marks; see
        // `lower::lower_planned`).
        let minimal = WeaveOptions { fit: Some(GeometryConfig::default()), attention_layer: false };
        let m = weave(&isa_api::examples::acc8(), &minimal).unwrap();
        let g = GeometryConfig { hidden: Some(m.allocation.geometry.hidden + 5), ..GeometryConfig::default() };
        let w = weave(&isa_api::examples::acc8(), &WeaveOptions { fit: Some(g), attention_layer: false }).unwrap();
        let want = Geometry { hidden: m.allocation.geometry.hidden + 5, ..m.allocation.geometry };
        assert_eq!(w.allocation.geometry, want);
    }
}
