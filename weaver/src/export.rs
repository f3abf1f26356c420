//! Machine configs (TOML), checkpoint export and loading.
//!
//! A machine config (`configs/*.toml`) names the machine and optionally a geometry to fit:
//!
//! ```toml
//! machine = "acc8"                 # a built-in machine; or
//! # description = "machine.json"   # a MachineDesc JSON file; or
//! # plugin = "libmy_isa.so"        # a machine plugin (isa-api's C-ABI entry point)
//! [geometry]                       # optional: every field must be at least the minimal need
//! layers = 8
//! hidden = 512
//! key_heads = 2
//! value_heads = 16
//! ```
//!
//! A woven checkpoint directory holds `config.json` + `model.safetensors` (what `Qwen3_5ForCausalLM` loads)
//! and `machine.json`, the [`Manifest`] (the trace protocol and the report).

use crate::allocate::Geometry;
use crate::error::WeaveError;
use crate::manifest::Manifest;
use crate::{weave, WeaveOptions, Woven};
use backends::{Qwen35Config, WeightMap};
use isa_api::MachineDesc;
use serde::Deserialize;
use std::path::Path;

/// Name of the manifest file in a checkpoint directory.
pub const MANIFEST_FILE: &str = "machine.json";

/// Geometry overrides of a machine config (missing fields keep the minimal value).
#[derive(Clone, Debug, Default, Deserialize)]
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

/// A machine config file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    pub machine: Option<String>,
    pub description: Option<String>,
    pub plugin: Option<String>,
    #[serde(default)]
    pub geometry: Option<GeometryConfig>,
    /// Include one inert full-attention layer so transformers can run the checkpoint (default true).
    #[serde(default = "yes")]
    pub hf_compatible: bool,
}

fn yes() -> bool {
    true
}

/// Built-in machines by name.
pub fn builtin(name: &str) -> Option<MachineDesc> {
    match name {
        "acc8" => Some(isa_api::examples::acc8()),
        _ => None,
    }
}

/// Names of the built-in machines.
pub const BUILTINS: &[&str] = &["acc8"];

impl MachineConfig {
    /// Parse a TOML config; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, WeaveError> {
        let c: MachineConfig = toml::from_str(text).map_err(|e| WeaveError::Other(format!("{origin}: {e}")))?;
        let n = c.machine.is_some() as u8 + c.description.is_some() as u8 + c.plugin.is_some() as u8;
        if n != 1 {
            return Err(WeaveError::Other(format!("{origin}: give exactly one of `machine`, `description`, `plugin`")));
        }
        Ok(c)
    }

    /// Read a config file.
    pub fn from_file(path: &Path) -> Result<Self, WeaveError> {
        let text = std::fs::read_to_string(path).map_err(|e| WeaveError::Other(format!("cannot read {}: {e}", path.display())))?;
        Self::from_toml(&text, &path.display().to_string())
    }

    /// The machine description (paths relative to `base_dir`).
    pub fn machine(&self, base_dir: &Path) -> Result<MachineDesc, WeaveError> {
        if let Some(m) = &self.machine {
            return builtin(m).ok_or_else(|| WeaveError::Other(format!("no built-in machine {m:?} (built-ins: {})", BUILTINS.join(", "))));
        }
        let bytes = if let Some(d) = &self.description {
            let p = base_dir.join(d);
            std::fs::read(&p).map_err(|e| WeaveError::Other(format!("cannot read {}: {e}", p.display())))?
        } else {
            let p = base_dir.join(self.plugin.as_deref().unwrap_or_default());
            isa_api::plugin::load_plugin_bytes(&p).map_err(|e| WeaveError::Other(format!("plugin {}: {e}", p.display())))?
        };
        Ok(MachineDesc::from_json(&bytes)?)
    }

    /// Weave options: the minimal geometry grown by the config's overrides.
    pub fn weave(&self, desc: &MachineDesc) -> Result<Woven, WeaveError> {
        let minimal = weave(desc, &WeaveOptions { fit: None, attention_layer: self.hf_compatible })?;
        let Some(g) = &self.geometry else { return Ok(minimal) };
        let target = g.target(&minimal.allocation.geometry);
        weave(desc, &WeaveOptions { fit: Some(target), attention_layer: self.hf_compatible })
    }
}

/// Save a woven machine: `config.json`, `model.safetensors`, `machine.json`. A previous woven checkpoint in
/// `dir` is replaced; any other non-empty directory is refused.
pub fn save(w: &Woven, dir: &Path) -> Result<(), WeaveError> {
    let mf = dir.join(MANIFEST_FILE);
    if mf.exists() {
        let text = std::fs::read_to_string(&mf).unwrap_or_default();
        Manifest::from_json(&text).map_err(|e| WeaveError::Other(format!("refusing to overwrite {}: not a machine manifest ({e})", mf.display())))?;
        std::fs::remove_file(&mf).map_err(|e| WeaveError::Other(format!("cannot replace {}: {e}", mf.display())))?;
    }
    backends::save_checkpoint(dir, &w.config, &w.weights).map_err(|e| WeaveError::Other(e.to_string()))?;
    let json = serde_json::to_string_pretty(&w.manifest).expect("manifest serializes");
    std::fs::write(&mf, json).map_err(|e| WeaveError::Other(format!("cannot write {}: {e}", mf.display())))
}

/// Load a woven checkpoint directory: its config, weights and manifest.
pub fn load(dir: &Path) -> Result<(Qwen35Config, WeightMap, Manifest), WeaveError> {
    let ck = backends::Checkpoint::open(dir).map_err(|e| WeaveError::Other(e.to_string()))?;
    let weights = ck.weights().map_err(|e| WeaveError::Other(e.to_string()))?;
    let mf = dir.join(MANIFEST_FILE);
    let text = std::fs::read_to_string(&mf).map_err(|e| WeaveError::Other(format!("cannot read {}: {e} (not a woven machine?)", mf.display())))?;
    let manifest = Manifest::from_json(&text).map_err(|e| WeaveError::Other(format!("{}: {e}", mf.display())))?;
    if manifest.protocol.vocab_size as usize > ck.config().vocab_size {
        return Err(WeaveError::Other(format!("{}: protocol needs {} tokens but the model has {}", mf.display(), manifest.protocol.vocab_size, ck.config().vocab_size)));
    }
    Ok((ck.config().clone(), weights, manifest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_name_their_problems() {
        let e = MachineConfig::from_toml("machine = \"acc8\"\nplugin = \"x.so\"", "c.toml").unwrap_err().to_string();
        assert!(e.contains("c.toml") && e.contains("exactly one"), "{e}");
        let e = MachineConfig::from_toml("machine = \"nope\"", "c.toml").unwrap().machine(Path::new(".")).unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains("acc8"), "{e}");
        let e = MachineConfig::from_toml("machin = 1", "c.toml").unwrap_err().to_string();
        assert!(e.contains("machin"), "{e}");
    }

    #[test]
    fn geometry_overflow_is_named() {
        let c = MachineConfig::from_toml("machine = \"acc8\"\n[geometry]\nlayers = 3\nhidden = 100", "c.toml").unwrap();
        let e = c.weave(&c.machine(Path::new(".")).unwrap()).unwrap_err().to_string();
        assert!(e.contains("num_hidden_layers needs 7 but the target has 3"), "{e}");
        assert!(e.contains("hidden_size needs"), "{e}");
    }
}
