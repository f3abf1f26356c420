//! The weave cache: woven machines kept on disk, so that running a config again loads its weights instead of
//! weaving them (the 4-lane SIMT4 machine weaves in 11-16 s and loads in about 2 s).
//!
//! An entry is a directory named by a 64-bit FNV-1a hash of what determines the weights: the machine
//! description (JSON), the weave options and the identity of this `loom` binary (its size and modification
//! time, so that a rebuilt weaver never reads an older weaver's weights: [`weaver::weave_hash`] and the binary).
//! It holds `config.json`, the manifest `machine.json` (protocol, report) and `weights.safetensors`, written and
//! read by `backends::checkpoint::{write_nonzeros, read_nonzeros}`. Woven tensors are mostly zeros, and a
//! dense f32 checkpoint of SIMT4 would take 42 GB, so each tensor is stored as its nonzeros: `NAME.idx`
//! (U32 flat indices, or U64 for tensors of more than 2^32 entries) and `NAME.val` (F32). A tensor more than
//! half nonzero is a matrix whose rows are mostly its first row (a woven embedding: about 1.4 GB dense for
//! SIMT4) stored as `NAME.row0` and the entries that differ from it (`NAME.didx`, `NAME.dval`), or else whole
//! as `NAME` (F32). The shapes are in the safetensors metadata. Loading fills
//! zeroed tensors, whose untouched pages the OS never materialises, and gives each sparse one its block index
//! (`HostTensor::with_blocks`: the blocks that hold the stored entries), so that the executors read only
//! those blocks (the weaver's own tensors carry the same index).
//!
//! The cache lives in `$LOOM_WEAVE_CACHE`, else `$XDG_CACHE_HOME/loom/weaves`, else `~/.cache/loom/weaves`;
//! `LOOM_WEAVE_CACHE=off` disables it. Only machines that take [`MIN_WEAVE_S`] or more to weave are stored.
//! It keeps the [`KEEP`] most recently used entries. An entry that cannot
//! be read is reported and woven again; one that cannot be written is reported and skipped. The cache never
//! changes what runs: the weights loaded are bit for bit those woven.

use anyhow::{anyhow, Context, Result};
use backends::{Qwen35Config, WeightMap};
use std::path::{Path, PathBuf};
use weaver::manifest::Manifest;

/// Entries kept (the least recently used beyond this are removed when an entry is written).
pub const KEEP: usize = 6;

/// Machines that weave faster than this many seconds are not stored (`LOOM_WEAVE_CACHE_MIN_S` overrides it):
/// storing takes a few seconds (about 4 s for the 4-lane SIMT4 machine, which weaves in 11-16 s), which a
/// small machine's weave does not repay.
pub const MIN_WEAVE_S: f64 = 5.0;

/// [`MIN_WEAVE_S`], or `LOOM_WEAVE_CACHE_MIN_S` when set to a number.
pub fn min_weave_s() -> f64 {
    std::env::var("LOOM_WEAVE_CACHE_MIN_S").ok().and_then(|v| v.parse().ok()).unwrap_or(MIN_WEAVE_S)
}

const WEIGHTS: &str = "weights.safetensors";
const CONFIG: &str = "config.json";
const MANIFEST: &str = "machine.json";

/// The cache directory, or `None` when `LOOM_WEAVE_CACHE=off` (or no home directory is known).
pub fn dir() -> Option<PathBuf> {
    match std::env::var_os("LOOM_WEAVE_CACHE") {
        Some(v) if v == "off" => None,
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()).map(PathBuf::from).or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache"))).map(|c| c.join("loom").join("weaves")),
    }
}

/// The entries of the cache at `root`: (directory name, bytes on disk, last use), most recently used first.
pub fn entries(root: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let Ok(rd) = std::fs::read_dir(root) else { return Vec::new() };
    let mut v: Vec<(String, u64, std::time::SystemTime)> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
        .filter_map(|p| {
            let used = std::fs::metadata(p.join(WEIGHTS)).and_then(|m| m.modified()).ok()?;
            let bytes = std::fs::read_dir(&p).ok()?.filter_map(|e| e.ok()).filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum();
            Some((p.file_name()?.to_string_lossy().to_string(), bytes, used))
        })
        .collect();
    v.sort_by(|a, b| b.2.cmp(&a.2));
    v
}

/// `loom cache [clear]`: where the cache is and what it holds, or remove its entries (nothing else in the
/// directory is touched).
pub fn run(a: CacheArgs) -> Result<()> {
    let Some(root) = dir() else {
        println!("the weave cache is off (LOOM_WEAVE_CACHE=off, or no home directory)");
        return Ok(());
    };
    let list = entries(&root);
    let total: u64 = list.iter().map(|e| e.1).sum();
    match a.action {
        Some(CacheAction::Clear) => {
            for (name, _, _) in &list {
                std::fs::remove_dir_all(root.join(name)).with_context(|| format!("removing {}", root.join(name).display()))?;
            }
            println!("removed {} woven machines ({:.1} GB) from {}", list.len(), total as f64 / 1e9, root.display());
        }
        None => {
            println!("{}: {} woven machines, {:.1} GB (the {KEEP} most recently used are kept; LOOM_WEAVE_CACHE sets the place, =off disables it)", root.display(), list.len(), total as f64 / 1e9);
            for (name, bytes, _) in &list {
                println!("  {name}  {:.2} GB", *bytes as f64 / 1e9);
            }
        }
    }
    Ok(())
}

/// `loom cache`'s arguments.
#[derive(clap::Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub action: Option<CacheAction>,
}

/// What `loom cache` does besides listing.
#[derive(clap::Subcommand)]
pub enum CacheAction {
    /// Remove every woven machine from the cache.
    Clear,
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// The entry name for a machine description and weave options ([`weaver::weave_hash`]), woven by this binary.
pub fn key(desc: &isa_api::MachineDesc, opts: &weaver::WeaveOptions) -> String {
    let mut h = weaver::weave_hash(desc, opts);
    if let Some(m) = std::env::current_exe().ok().and_then(|p| std::fs::metadata(p).ok()) {
        let mtime = m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
        h = fnv1a(format!("{} {mtime}", m.len()).as_bytes(), h);
    }
    format!("{}-{h:016x}", desc.name)
}

/// A cached machine: what [`weaver::export::load`] gives for a checkpoint directory.
pub struct Entry {
    pub config: Qwen35Config,
    pub weights: WeightMap,
    pub manifest: Manifest,
}

/// Load entry `key` from `root`: `Ok(None)` when there is none; an error when it exists and cannot be read.
pub fn load(root: &Path, key: &str) -> Result<Option<Entry>> {
    let dir = root.join(key);
    if !dir.join(WEIGHTS).is_file() {
        return Ok(None);
    }
    let config: Qwen35Config = serde_json::from_str(&std::fs::read_to_string(dir.join(CONFIG))?).with_context(|| format!("{}", dir.join(CONFIG).display()))?;
    let manifest = Manifest::from_json(&std::fs::read_to_string(dir.join(MANIFEST))?).map_err(|e| anyhow!("{}: {e}", dir.join(MANIFEST).display()))?;
    let weights = backends::checkpoint::read_nonzeros(&dir.join(WEIGHTS), &config)?;
    // Mark it used (the eviction keeps the most recently used entries).
    let _ = std::fs::File::open(dir.join(WEIGHTS)).and_then(|f| f.set_modified(std::time::SystemTime::now()));
    Ok(Some(Entry { config, weights, manifest }))
}

/// Store a woven machine as entry `key` of `root` (written to a temporary directory, then renamed into place),
/// then remove the least recently used entries beyond [`KEEP`].
pub fn store(root: &Path, key: &str, config: &Qwen35Config, weights: &WeightMap, manifest: &Manifest) -> Result<()> {
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let tmp = root.join(format!(".{key}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp)?;
    let written = (|| -> Result<()> {
        std::fs::write(tmp.join(CONFIG), serde_json::to_string_pretty(config)?)?;
        std::fs::write(tmp.join(MANIFEST), serde_json::to_string_pretty(manifest)?)?;
        backends::checkpoint::write_nonzeros(&tmp.join(WEIGHTS), config, weights)?;
        Ok(())
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let dest = root.join(key);
    let _ = std::fs::remove_dir_all(&dest);
    if let Err(e) = std::fs::rename(&tmp, &dest) {
        let _ = std::fs::remove_dir_all(&tmp);
        // Another run wrote the same entry meanwhile: theirs is as good.
        if !dest.join(WEIGHTS).is_file() {
            return Err(e).with_context(|| format!("renaming into {}", dest.display()));
        }
    }
    evict(root);
    Ok(())
}

/// Remove the least recently used entries beyond [`KEEP`].
fn evict(root: &Path) {
    let Ok(rd) = std::fs::read_dir(root) else { return };
    let mut entries: Vec<(std::time::SystemTime, PathBuf)> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
        .filter_map(|p| std::fs::metadata(p.join(WEIGHTS)).and_then(|m| m.modified()).ok().map(|t| (t, p)))
        .collect();
    entries.sort_by(|a, b| b.0.cmp(&a.0));
    for (_, p) in entries.into_iter().skip(KEEP) {
        let _ = std::fs::remove_dir_all(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A woven machine stored and loaded is bit for bit the one woven, with its manifest; a damaged entry is an
    /// error naming its file; more than KEEP entries evict the least recently used.
    #[test]
    fn a_stored_machine_loads_bit_for_bit() {
        let root = std::env::temp_dir().join(format!("loom-weave-cache-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let desc = isa_api::examples::acc8();
        let woven = weaver::weave(&desc, &weaver::WeaveOptions::default()).unwrap();
        let k = key(&desc, &weaver::WeaveOptions::default());
        assert!(k.starts_with("acc8-") && k != key(&desc, &weaver::WeaveOptions { fit: None, attention_layer: true }));
        assert!(load(&root, &k).unwrap().is_none());
        store(&root, &k, &woven.config, &woven.weights, &woven.manifest).unwrap();
        let e = load(&root, &k).unwrap().expect("stored");
        assert_eq!(e.config, woven.config);
        assert_eq!(e.manifest, woven.manifest);
        assert_eq!(e.weights.len(), woven.weights.len());
        for (name, t) in &woven.weights {
            let u = &e.weights[name];
            assert_eq!(u.shape, t.shape, "{name}");
            assert!(u.data.iter().zip(&t.data).all(|(a, b)| a.to_bits() == b.to_bits()), "{name}");
            // A sparse tensor comes back with a block index, and the executors' matrix from it is the same.
            if t.shape.len() == 2 && t.nonzeros() * 4 < t.data.len() {
                assert!(u.blocks().is_some(), "{name}");
                let (a, b) = (backends::cpu::SparseMatrix::from_dense(t), backends::cpu::SparseMatrix::from_dense(u));
                assert_eq!(format!("{:?}", a.csc()), format!("{:?}", b.csc()), "{name}");
            }
        }
        assert!(e.weights.values().filter(|t| t.blocks().is_some()).count() >= 10);
        // Sparse storage: the file is far smaller than the dense f32 tensors.
        let file = std::fs::metadata(root.join(&k).join(WEIGHTS)).unwrap().len();
        let dense: usize = woven.weights.values().map(|t| t.data.len() * 4).sum();
        assert!((file as usize) * 3 < dense, "{file} bytes for {dense} dense");
        // A damaged weights file is an error naming it.
        std::fs::write(root.join(&k).join(WEIGHTS), b"not safetensors").unwrap();
        let err = load(&root, &k).err().expect("damaged").to_string();
        assert!(err.contains(WEIGHTS), "{err}");
        // Eviction keeps the KEEP most recent entries.
        for i in 0..KEEP + 2 {
            store(&root, &format!("m{i}"), &woven.config, &woven.weights, &woven.manifest).unwrap();
        }
        let left = std::fs::read_dir(&root).unwrap().count();
        assert_eq!(left, KEEP);
        assert!(root.join(format!("m{}", KEEP + 1)).is_dir() && !root.join(&k).exists());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
