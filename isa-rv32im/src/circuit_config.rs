//! `configs/rv32im.toml`: selects the RV32IM+Zba machine, its RAM, the backend and the step bound.
//!
//! ```toml
//! [machine]
//! isa = "rv32im"        # or plugin = "path/to/libisa_rv32im.so"
//! ram_base = 0x10000
//! ram_size = 65536
//! layout = "words"      # or "byte_lanes"
//! [run]
//! backend = "sparse"    # sparse | ndarray | wgpu
//! max_steps = 100000000
//! ```

use crate::circuit::{CircuitError, MemoryLayout, Rv32MachineOptions};
use serde::Deserialize;

/// The `[machine]` table.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSection {
    /// Machine name: must be `rv32im`.
    pub isa: String,
    /// A cdylib to load the machine from instead of the static registration.
    #[serde(default)]
    pub plugin: Option<String>,
    /// First RAM address.
    #[serde(default = "default_base")]
    pub ram_base: u32,
    /// RAM size in bytes.
    #[serde(default = "default_size")]
    pub ram_size: u32,
    /// `words` (default) or `byte_lanes`.
    #[serde(default)]
    pub layout: Layout,
}

/// Memory layout as written in the config.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// [`MemoryLayout::Words`].
    #[default]
    Words,
    /// [`MemoryLayout::ByteLanes`].
    ByteLanes,
}

fn default_base() -> u32 {
    Rv32MachineOptions::default().ram_base
}
fn default_size() -> u32 {
    Rv32MachineOptions::default().ram_size
}
fn default_backend() -> Backend {
    Backend::Sparse
}
fn default_max_steps() -> u64 {
    100_000_000
}

/// Executors of a woven machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// The sparse pure-Rust CPU executor (`backends::sparse`).
    Sparse,
    /// The dense burn reference model on ndarray.
    Ndarray,
    /// burn on wgpu.
    Wgpu,
}

/// The `[run]` table.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    /// Executor.
    #[serde(default = "default_backend")]
    pub backend: Backend,
    /// Bound on machine steps.
    #[serde(default = "default_max_steps")]
    pub max_steps: u64,
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection { backend: default_backend(), max_steps: default_max_steps() }
    }
}

/// A parsed, validated `rv32im.toml`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rv32Config {
    /// The machine.
    pub machine: MachineSection,
    /// How to run it.
    #[serde(default)]
    pub run: RunSection,
    /// A base model's layer geometry to weave into instead of the minimal one: the weaver's `[geometry]`
    /// table (`weaver::export::GeometryConfig`: `layers`, `hidden`, `intermediate`, `key_heads`,
    /// `value_heads`, `dk`, `dv`, `attention_interval`; missing fields keep the minimal value), read by the
    /// weaver, which names any bad field.
    #[serde(default)]
    pub geometry: Option<toml::Table>,
}

/// Why a config was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Not TOML or not this schema.
    #[error("invalid rv32im config: {0}")]
    Parse(String),
    /// `isa` is not `rv32im`.
    #[error("this config names machine {0:?}; the rv32im plugin serves \"rv32im\"")]
    WrongIsa(String),
    /// Impossible RAM geometry.
    #[error(transparent)]
    Ram(#[from] CircuitError),
}

impl Rv32Config {
    /// Parse and validate TOML text.
    pub fn parse(text: &str) -> Result<Rv32Config, ConfigError> {
        let c: Rv32Config = toml::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))?;
        if c.machine.isa != "rv32im" {
            return Err(ConfigError::WrongIsa(c.machine.isa));
        }
        c.options().validate()?;
        Ok(c)
    }

    /// The machine options.
    pub fn options(&self) -> Rv32MachineOptions {
        Rv32MachineOptions {
            ram_base: self.machine.ram_base,
            ram_size: self.machine.ram_size,
            layout: match self.machine.layout {
                Layout::Words => MemoryLayout::Words,
                Layout::ByteLanes => MemoryLayout::ByteLanes,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_config_parses() {
        let c = Rv32Config::parse(include_str!("../../configs/rv32im.toml")).unwrap();
        assert_eq!(c.options(), Rv32MachineOptions::ram_256k());
        let c = Rv32Config::parse(include_str!("../../configs/rv32im-64k.toml")).unwrap();
        assert_eq!(c.options(), Rv32MachineOptions::default());
        let c = Rv32Config::parse(include_str!("../../configs/rv32im-qwen35-9b.toml")).unwrap();
        let g = c.geometry.unwrap();
        let get = |k: &str| g.get(k).and_then(|v| v.as_integer());
        let shape = ["layers", "hidden", "intermediate", "key_heads", "value_heads", "dk", "dv", "attention_interval"].map(get);
        assert_eq!(shape, [32, 4096, 12288, 16, 32, 128, 128, 4].map(Some));
        assert_eq!(c.run.backend, Backend::Sparse);
        assert_eq!(c.run.max_steps, 100_000_000);
    }

    #[test]
    fn bad_configs_are_named() {
        let e = Rv32Config::parse("[machine]\nisa = \"rv32im\"\nram_size = 1000\n").unwrap_err().to_string();
        assert!(e.contains("power of two"), "{e}");
        let e = Rv32Config::parse("[machine]\nisa = \"simt4\"\n").unwrap_err().to_string();
        assert!(e.contains("simt4"), "{e}");
        let e = Rv32Config::parse("[machine]\nisa = \"rv32im\"\nram = 1\n").unwrap_err().to_string();
        assert!(e.contains("invalid"), "{e}");
        let c = Rv32Config::parse("[machine]\nisa = \"rv32im\"\nram_size = 262144\n[run]\nbackend = \"ndarray\"\n").unwrap();
        assert_eq!(c.options(), Rv32MachineOptions::ram_256k());
        assert_eq!(c.run.backend, Backend::Ndarray);
        let c = Rv32Config::parse("[machine]\nisa = \"rv32im\"\nlayout = \"byte_lanes\"\n").unwrap();
        assert_eq!(c.options().layout, MemoryLayout::ByteLanes);
    }
}
