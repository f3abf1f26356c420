//! The one machine config schema (`configs/*.toml`), the same for every machine, and its one loader:
//!
//! ```toml
//! [machine]
//! isa = "rv32im"              # a machine of the binary's registry; or
//! # plugin = "libmy_isa.so"   # a machine plugin (isa-api's C-ABI entry point; with `isa`: checked equal); or
//! # description = "m.json"    # a MachineDesc JSON file
//! ram_size = 65536            # ... the machine's own keys (its front names any it does not know)
//!
//! [geometry]                  # optional: a base model's layer shape to weave into (missing: minimal need)
//! layers = 32
//! hidden = 4096
//! hf_compatible = true        # `loom weave` adds one inert full-attention layer (default true)
//!
//! [run]
//! executor = "incremental"    # incremental (default) | sparse | jit | ndarray | flex | wgpu
//! max_steps = 100000000
//! ```
//!
//! Paths are relative to the config file's directory.

use crate::geometry::GeometryConfig;
use backends::ExecutorKind;
use isa_api::front::{GenericMachine, Machine, MachineFront};
use isa_api::MachineDesc;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A config that cannot be read or names a machine that cannot be made. Every message names the file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{origin}: {msg}")]
pub struct ConfigError {
    pub origin: String,
    pub msg: String,
}

/// The `[machine]` table: where the machine comes from, and the machine's own keys.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct MachineSection {
    pub isa: Option<String>,
    pub plugin: Option<String>,
    pub description: Option<String>,
    /// Every other key, for the machine's front.
    #[serde(flatten)]
    pub keys: toml::Table,
}

fn default_max_steps() -> u64 {
    100_000_000
}
fn default_executor() -> ExecutorKind {
    ExecutorKind::Incremental
}

/// The `[run]` table.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    /// The executor of `loom run`, `loom lockstep` and `loom bench-run` (`backend` is accepted too).
    #[serde(default = "default_executor", alias = "backend")]
    pub executor: ExecutorKind,
    /// Bound on machine steps.
    #[serde(default = "default_max_steps")]
    pub max_steps: u64,
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection { executor: default_executor(), max_steps: default_max_steps() }
    }
}

/// A machine config.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub machine: MachineSection,
    #[serde(default)]
    pub geometry: Option<GeometryConfig>,
    #[serde(default)]
    pub run: RunSection,
    /// The directory paths are relative to (the config file's).
    #[serde(skip)]
    pub base_dir: PathBuf,
    /// Where the config came from, for messages.
    #[serde(skip)]
    pub origin: String,
}

/// `path` (a library under some crate's `target/` directory) under the build directory `target_dir` instead:
/// the components after the last `target` joined onto it; `None` when `path` has no `target` component.
pub fn under_target_dir(path: &Path, target_dir: &Path) -> Option<PathBuf> {
    let parts: Vec<_> = path.components().collect();
    let at = parts.iter().rposition(|c| c.as_os_str() == "target")?;
    let rest: PathBuf = parts[at + 1..].iter().collect();
    (!rest.as_os_str().is_empty()).then(|| target_dir.join(rest))
}

impl Config {
    /// Parse TOML text; `origin` names it in errors, `base_dir` anchors its paths.
    pub fn parse(text: &str, origin: &str, base_dir: &Path) -> Result<Self, ConfigError> {
        let err = |msg: String| ConfigError { origin: origin.to_string(), msg };
        let mut c: Config = toml::from_str(text).map_err(|e| err(format!("{e}")))?;
        let m = &c.machine;
        if m.isa.is_none() && m.plugin.is_none() && m.description.is_none() {
            return Err(err("[machine] needs `isa = \"...\"` (a built-in machine), `plugin = \"path\"` or `description = \"file.json\"`".into()));
        }
        if m.isa.is_none() && !m.keys.is_empty() {
            let k: Vec<&String> = m.keys.keys().collect();
            return Err(err(format!("[machine]: keys {k:?} need an `isa` whose front reads them")));
        }
        if m.plugin.is_some() && m.description.is_some() {
            return Err(err("[machine]: give `plugin` or `description`, not both".into()));
        }
        c.base_dir = base_dir.to_path_buf();
        c.origin = origin.to_string();
        Ok(c)
    }

    /// Read a config file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError { origin: path.display().to_string(), msg: format!("cannot read: {e}") })?;
        Self::parse(&text, &path.display().to_string(), path.parent().unwrap_or(Path::new(".")))
    }

    fn err(&self, msg: String) -> ConfigError {
        ConfigError { origin: self.origin.clone(), msg }
    }

    /// Make the machine: from the registry's front for `isa` (with its keys), or the generic front of a
    /// plugin or description file. With both `isa` and `plugin`, the plugin must describe the same machine.
    /// This is the only place plugins are loaded.
    pub fn machine(&self, registry: &[&dyn MachineFront]) -> Result<Box<dyn Machine>, ConfigError> {
        let m = &self.machine;
        let external = |what: &str, path: &str| -> Result<MachineDesc, ConfigError> {
            let mut p = self.base_dir.join(path);
            if what == "plugin" && !p.exists() {
                // A plugin built with CARGO_TARGET_DIR set lies under that directory, not the crate's target/.
                let moved = std::env::var_os("CARGO_TARGET_DIR").and_then(|t| under_target_dir(&p, Path::new(&t)));
                if let Some(alt) = moved.filter(|a| a.exists()) {
                    p = alt;
                }
            }
            let bytes = if what == "plugin" {
                isa_api::plugin::load_plugin_bytes(&p).map_err(|e| self.err(e.to_string()))?
            } else {
                std::fs::read(&p).map_err(|e| self.err(format!("cannot read {}: {e}", p.display())))?
            };
            MachineDesc::from_json(&bytes).map_err(|e| self.err(format!("{}: {e}", p.display())))
        };
        let from_file = match (&m.plugin, &m.description) {
            (Some(p), _) => Some(external("plugin", p)?),
            (None, Some(d)) => Some(external("description", d)?),
            _ => None,
        };
        let Some(isa) = &m.isa else {
            return Ok(Box::new(GenericMachine::new(from_file.expect("checked by parse"), None)));
        };
        let front = find(registry, isa).ok_or_else(|| self.err(format!("no machine {isa:?} (machines: {})", names(registry))))?;
        let machine = front.configure(&m.keys).map_err(|e| self.err(e.to_string()))?;
        if let Some(d) = from_file {
            let ours = machine.describe().map_err(|e| self.err(e.to_string()))?;
            if d != ours {
                return Err(self.err(format!(
                    "the plugin or description describes a different machine than [machine] isa = {isa:?} with these keys (a plugin serves its default machine)"
                )));
            }
        }
        Ok(machine)
    }

    /// The step bound as a `usize`.
    pub fn max_steps(&self) -> usize {
        self.run.max_steps.min(usize::MAX as u64) as usize
    }
}

/// The registry's front named `isa`.
pub fn find<'a>(registry: &[&'a dyn MachineFront], isa: &str) -> Option<&'a dyn MachineFront> {
    registry.iter().copied().find(|f| f.isa() == isa)
}

/// The registry's names, comma-separated.
pub fn names(registry: &[&dyn MachineFront]) -> String {
    registry.iter().map(|f| f.isa()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use isa_api::examples::fronts::{Acc8Front, Io8Front};

    const REG: &[&dyn MachineFront] = &[&Acc8Front, &Io8Front];

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, "c.toml", Path::new("."))
    }

    #[test]
    fn configs_name_their_problems() {
        let e = parse("[machine]\n").unwrap_err().to_string();
        assert!(e.starts_with("c.toml:") && e.contains("needs `isa"), "{e}");
        let e = parse("[machine]\nisa = \"nope\"\n").unwrap().machine(REG).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains("acc8, io8"), "{e}");
        let e = parse("[machine]\nisa = \"acc8\"\nram = 1\n").unwrap().machine(REG).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("unknown key \"ram\" for machine acc8"), "{e}");
        let e = parse("[machin]\nisa = \"acc8\"\n").unwrap_err().to_string();
        assert!(e.contains("machin"), "{e}");
        let e = parse("[machine]\nisa = \"acc8\"\n[run]\nexecutor = \"cuda\"\n").unwrap_err().to_string();
        assert!(e.contains("cuda"), "{e}");
        let e = parse("[machine]\nisa = \"io8\"\nlimit = 300\n").unwrap().machine(REG).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("limit = 300"), "{e}");
        assert_eq!(
            under_target_dir(Path::new("cfg/../examples/plugins/chip8/target/release/libloom_chip8.so"), Path::new("/cache/t")),
            Some(PathBuf::from("/cache/t/release/libloom_chip8.so"))
        );
        assert_eq!(under_target_dir(Path::new("/opt/lib/libx.so"), Path::new("/cache/t")), None);
        let e = parse("[machine]\nplugin = \"/nonexistent/libx.so\"\n").unwrap().machine(REG).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/libx.so"), "{e}");
        let e = parse("[machine]\nisa = \"acc8\"\n[geometry]\nlayrs = 3\n").unwrap_err().to_string();
        assert!(e.contains("layrs"), "{e}");
    }

    #[test]
    fn the_committed_configs_parse_and_make_their_machines() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
        let c = Config::from_file(&root.join("acc8.toml")).unwrap();
        assert_eq!(c.machine(REG).unwrap().describe().unwrap(), isa_api::examples::acc8());
        assert_eq!(c.run, RunSection::default());
        let c = Config::from_file(&root.join("acc8-fit.toml")).unwrap();
        assert_eq!(c.geometry.as_ref().and_then(|g| g.layers), Some(8));
        let c = Config::from_file(&root.join("io8.toml")).unwrap();
        assert_eq!(c.machine(REG).unwrap().describe().unwrap().name, "io8");
        // The Qwen3.5-9B shape of configs/rv32im-qwen35-9b.toml (its machine needs the binary's registry).
        let c = Config::from_file(&root.join("rv32im-qwen35-9b.toml")).unwrap();
        let g = c.geometry.clone().unwrap();
        let shape = [g.layers, g.hidden, g.intermediate, g.key_heads, g.value_heads, g.dk, g.dv, g.attention_interval];
        assert_eq!(shape, [32, 4096, 12288, 16, 32, 128, 128, 4].map(Some));
        assert_eq!((c.machine.isa.as_deref(), c.run), (Some("rv32im"), RunSection { executor: ExecutorKind::Incremental, max_steps: 100_000_000 }));
        let c = parse("[machine]\nisa = \"acc8\"\n[run]\nbackend = \"flex\"\nmax_steps = 7\n").unwrap();
        assert_eq!(c.run, RunSection { executor: ExecutorKind::Flex, max_steps: 7 });
    }
}
