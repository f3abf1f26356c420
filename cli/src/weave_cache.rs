//! The weave cache: woven machines kept on disk, so that running a config again loads its weights instead of
//! weaving them (the 4-lane SIMT4 machine weaves in 11-16 s and loads in about 2 s).
//!
//! An entry is a directory named by a 64-bit FNV-1a hash of what determines the weights: the machine
//! description (JSON), the weave options and the identity of this `loom` binary (its size and modification
//! time, so that a rebuilt weaver never reads an older weaver's weights). It holds `config.json`, the manifest
//! `machine.json` (protocol, report) and `weights.safetensors`. Woven tensors are mostly zeros, and a
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

use anyhow::{anyhow, bail, Context, Result};
use backends::{HostTensor, Qwen35Config, WeightMap};
use safetensors::tensor::{Dtype, TensorView};
use std::collections::HashMap;
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

/// The entry name for a machine description and weave options, woven by this binary.
pub fn key(desc: &isa_api::MachineDesc, opts: &weaver::WeaveOptions) -> String {
    let mut h = 0xcbf2_9ce4_8422_2325;
    h = fnv1a(serde_json::to_string(desc).expect("a machine description serializes").as_bytes(), h);
    h = fnv1a(format!("{opts:?}").as_bytes(), h);
    h = fnv1a(env!("CARGO_PKG_VERSION").as_bytes(), h);
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
    let bytes = std::fs::read(dir.join(WEIGHTS))?;
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).with_context(|| format!("{}", dir.join(WEIGHTS).display()))?;
    let st = safetensors::SafeTensors::deserialize(&bytes).with_context(|| format!("{}", dir.join(WEIGHTS).display()))?;
    let shapes = meta.metadata().clone().unwrap_or_default();
    let mut weights = WeightMap::new();
    for (name, shape) in config.expected_tensors() {
        let stored = shapes.get(&name).ok_or_else(|| anyhow!("{}: no tensor {name}", dir.display()))?;
        if *stored != shape_text(&shape) {
            bail!("{}: tensor {name} has shape {stored}, the config needs {shape:?}", dir.display());
        }
        let n: usize = shape.iter().product();
        let t = match st.tensor(&name) {
            Ok(dense) => {
                let data = f32s(&dense)?;
                if data.len() != n {
                    bail!("{}: tensor {name} holds {} values, not {n}", dir.display(), data.len());
                }
                HostTensor::new(shape, data)
            }
            Err(_) => {
                let get = |suffix: &str| st.tensor(&format!("{name}{suffix}")).with_context(|| format!("{}: tensor {name}{suffix}", dir.display()));
                // Entries from row 0 (the row-0 form), else zeros; then the listed entries.
                let (mut data, idx, val, sparse) = match get(".row0") {
                    Ok(row0) => {
                        let row0 = f32s(&row0)?;
                        if row0.is_empty() || n % row0.len() != 0 || shape.last() != Some(&row0.len()) {
                            bail!("{}: {name}.row0 holds {} values for shape {shape:?}", dir.display(), row0.len());
                        }
                        (row0.iter().cycle().take(n).copied().collect(), get(".didx")?, f32s(&get(".dval")?)?, false)
                    }
                    Err(_) => (vec![0f32; n], get(".idx")?, f32s(&get(".val")?)?, true),
                };
                let idx: Vec<u64> = match idx.dtype() {
                    Dtype::U32 => idx.data().chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")) as u64).collect(),
                    Dtype::U64 => idx.data().chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect(),
                    d => bail!("{}: the indices of {name} have dtype {d:?}", dir.display()),
                };
                if idx.len() != val.len() || idx.iter().any(|i| *i as usize >= n) {
                    bail!("{}: tensor {name}: {} indices for {} values, or an index beyond {n}", dir.display(), idx.len(), val.len());
                }
                if idx.windows(2).any(|w| w[0] >= w[1]) {
                    bail!("{}: tensor {name}: indices not ascending", dir.display());
                }
                for (i, v) in idx.iter().zip(val) {
                    data[*i as usize] = v;
                }
                let t = HostTensor::new(shape, data);
                if sparse {
                    // Every other entry is +0: the executors visit only these blocks.
                    let mut blocks: Vec<u64> = idx.iter().map(|i| i / backends::tensor::ZERO_BLOCK as u64).collect();
                    blocks.dedup();
                    t.with_blocks(blocks)
                } else {
                    t
                }
            }
        };
        weights.insert(name, t);
    }
    // Mark it used (the eviction keeps the most recently used entries).
    let _ = std::fs::File::open(dir.join(WEIGHTS)).and_then(|f| f.set_modified(std::time::SystemTime::now()));
    Ok(Some(Entry { config, weights, manifest }))
}

fn f32s(t: &TensorView<'_>) -> Result<Vec<f32>> {
    if t.dtype() != Dtype::F32 {
        bail!("dtype {:?} where F32 was expected", t.dtype());
    }
    Ok(t.data().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect())
}

fn shape_text(shape: &[usize]) -> String {
    shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")
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
        let mut meta = HashMap::new();
        let mut buffers: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = Vec::new();
        for (name, shape) in config.expected_tensors() {
            let t = weights.get(&name).ok_or_else(|| anyhow!("the woven weights lack {name}"))?;
            meta.insert(name.clone(), shape_text(&t.shape));
            // The entries other than +0: in the indexed blocks when the tensor has a block index (the weaver's
            // tensors do), else in every block that is not all +0.
            let mut nz: Vec<usize> = Vec::new();
            let block_count = t.data.len().div_ceil(backends::tensor::ZERO_BLOCK) as u64;
            let blocks: Box<dyn Iterator<Item = u64>> = match t.blocks() {
                Some(b) => Box::new(b.iter().copied()),
                None => Box::new(0..block_count),
            };
            for b in blocks {
                let base = b as usize * backends::tensor::ZERO_BLOCK;
                let block = &t.data[base..(base + backends::tensor::ZERO_BLOCK).min(t.data.len())];
                if block.iter().fold(0u32, |a, v| a | v.to_bits()) == 0 {
                    continue;
                }
                nz.extend(block.iter().enumerate().filter(|(_, v)| v.to_bits() != 0).map(|(i, _)| base + i));
                if nz.len() * 2 > t.data.len() {
                    break; // dense: stored below without the list
                }
            }
            if nz.len() * 2 > t.data.len() {
                // Dense. A woven embedding's rows are mostly its first row: then the first row and each
                // entry that differs from it (usually far fewer than the nonzeros).
                let cols = *t.shape.last().unwrap_or(&1);
                let row0 = &t.data[..cols.min(t.data.len())];
                let diff: Vec<usize> = if t.shape.len() == 2 { (cols..t.data.len()).filter(|&i| t.data[i].to_bits() != row0[i % cols].to_bits()).collect() } else { Vec::new() };
                if t.shape.len() == 2 && diff.len() * 2 < t.data.len() {
                    buffers.push((format!("{name}.row0"), Dtype::F32, vec![cols], row0.iter().flat_map(|v| v.to_le_bytes()).collect()));
                    push_sparse(&mut buffers, &name, ".didx", ".dval", &diff, &t.data);
                } else {
                    buffers.push((name, Dtype::F32, shape, t.data.iter().flat_map(|v| v.to_le_bytes()).collect()));
                }
                continue;
            }
            push_sparse(&mut buffers, &name, ".idx", ".val", &nz, &t.data);
        }
        let views = buffers.iter().map(|(n, d, s, b)| Ok((n.clone(), TensorView::new(*d, s.clone(), b)?))).collect::<Result<Vec<_>>>()?;
        safetensors::serialize_to_file(views, Some(meta), &tmp.join(WEIGHTS))?;
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

/// Push `NAME{idx}` (the flat indices `at`: U32, or U64 past 2^32 entries) and `NAME{val}` (`data` there, F32).
fn push_sparse(buffers: &mut Vec<(String, Dtype, Vec<usize>, Vec<u8>)>, name: &str, idx: &str, val: &str, at: &[usize], data: &[f32]) {
    let (dtype, bytes): (Dtype, Vec<u8>) = if data.len() <= u32::MAX as usize {
        (Dtype::U32, at.iter().flat_map(|i| (*i as u32).to_le_bytes()).collect())
    } else {
        (Dtype::U64, at.iter().flat_map(|i| (*i as u64).to_le_bytes()).collect())
    };
    buffers.push((format!("{name}{idx}"), dtype, vec![at.len()], bytes));
    buffers.push((format!("{name}{val}"), Dtype::F32, vec![at.len()], at.iter().flat_map(|i| data[*i].to_le_bytes()).collect()));
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
                let (a, b) = (backends::sparse::SparseMatrix::from_dense(t), backends::sparse::SparseMatrix::from_dense(u));
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
