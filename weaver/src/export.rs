//! Checkpoint export and loading.
//!
//! A woven checkpoint directory holds `config.json` + `model.safetensors` (what `Qwen3_5ForCausalLM` loads)
//! and `machine.json`, the [`Manifest`] (the trace protocol and the report).

use crate::error::WeaveError;
use crate::manifest::Manifest;
use crate::Woven;
use backends::{Qwen35Config, WeightMap};
use std::path::Path;

/// Name of the manifest file in a checkpoint directory.
pub const MANIFEST_FILE: &str = "machine.json";

/// Save a woven machine: `config.json`, `model.safetensors`, `machine.json`. A previous woven checkpoint in
/// `dir` is replaced; any other non-empty directory is refused.
pub fn save(w: &Woven, dir: &Path) -> Result<(), WeaveError> {
    check_destination(dir)?;
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

/// Read a woven checkpoint's manifest (`machine.json`).
pub fn load_manifest(dir: &Path) -> Result<Manifest, WeaveError> {
    let mf = dir.join(MANIFEST_FILE);
    let text = std::fs::read_to_string(&mf).map_err(|e| WeaveError::Other(format!("cannot read {}: {e} (not a woven machine?)", mf.display())))?;
    Manifest::from_json(&text).map_err(|e| WeaveError::Other(format!("{}: {e}", mf.display())))
}

/// Can a woven checkpoint be written to `dir`? It must not exist, be empty, or hold a woven checkpoint (its
/// `machine.json`); a file, or a directory of anything else (another model's checkpoint included), is refused
/// so nothing the user had is overwritten. Cheap: callers check before weaving.
pub fn check_destination(dir: &Path) -> Result<(), WeaveError> {
    let refuse = |msg: String| WeaveError::Other(format!("refusing to write a woven checkpoint to {}: {msg}", dir.display()));
    if !dir.exists() {
        return Ok(());
    }
    if !dir.is_dir() {
        return Err(refuse("it is not a directory".into()));
    }
    let empty = std::fs::read_dir(dir).map_err(|e| refuse(e.to_string()))?.next().is_none();
    if !empty && !dir.join(MANIFEST_FILE).exists() {
        return Err(refuse(format!("it is not empty and holds no {MANIFEST_FILE} (not a woven checkpoint)")));
    }
    Ok(())
}

/// Load a woven checkpoint directory: its config, weights and manifest.
pub fn load(dir: &Path) -> Result<(Qwen35Config, WeightMap, Manifest), WeaveError> {
    let ck = backends::Checkpoint::open(dir).map_err(|e| WeaveError::Other(e.to_string()))?;
    let weights = ck.weights().map_err(|e| WeaveError::Other(e.to_string()))?;
    let manifest = load_manifest(dir)?;
    if manifest.protocol.vocab_size as usize > ck.config().vocab_size {
        return Err(WeaveError::Other(format!("{}: protocol needs {} tokens but the model has {}", dir.join(MANIFEST_FILE).display(), manifest.protocol.vocab_size, ck.config().vocab_size)));
    }
    Ok((ck.config().clone(), weights, manifest))
}

