//! Qwen3.5 checkpoints on disk: the directory layout `Qwen3_5ForCausalLM.save_pretrained` writes.
//!
//! A checkpoint directory holds `config.json` (a text config, or a multimodal one with `text_config`) and the
//! weights as safetensors: one `model.safetensors`, or shards listed by `model.safetensors.index.json`
//! (`{"weight_map": {tensor name: shard file}}`). Files are memory-mapped; tensors stored as F32, BF16 or F16
//! are converted to f32 one at a time, so loading a model never holds a second full copy of it.
//!
//! Tensor names are canonicalised to the text model's names (`model.layers.0.mlp.up_proj.weight`,
//! `lm_head.weight`, ...): released multimodal checkpoints keep the text weights under
//! `model.language_model.`, which is mapped to `model.`; `model.visual.*` and `mtp.*` are ignored.

use crate::config::{ConfigError, Qwen35Config};
use crate::tensor::{HostTensor, WeightMap, ZERO_BLOCK};
use memmap2::Mmap;
use safetensors::Dtype;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};

/// Errors opening, reading or writing a checkpoint. Every message names the file and, where one is
/// concerned, the tensor.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// `err` is shown in the message and deliberately not chained as a `source`, so reports that print the
    /// whole error chain (anyhow's `{:#}`) do not repeat it.
    #[error("{path}: {err}")]
    Io { path: String, err: std::io::Error },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{dir}: no model.safetensors or model.safetensors.index.json in this directory")]
    NoWeights { dir: String },
    #[error("{path}: not a valid safetensors file: {msg}")]
    Format { path: String, msg: String },
    #[error("{path}: malformed shard index: {msg}")]
    Index { path: String, msg: String },
    #[error("{path}: tensor {name} is missing")]
    Missing { path: String, name: String },
    #[error("{path}: tensor {name} has shape {found:?}, expected {expected:?}")]
    Shape { path: String, name: String, found: Vec<usize>, expected: Vec<usize> },
    #[error("{path}: tensor {name} has dtype {dtype}; only F32, BF16 and F16 are supported")]
    Dtype { path: String, name: String, dtype: String },
    #[error("{path}: refusing to write a checkpoint here: {msg}")]
    Refuse { path: String, msg: String },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |err| CheckpointError::Io { path: path.display().to_string(), err }
}

/// One memory-mapped safetensors file.
struct Shard {
    path: PathBuf,
    mmap: Mmap,
    /// The byte ranges `[start, end)` of the file that hold data, ascending; the rest are holes of a sparse
    /// file (all zeros), which [`Checkpoint::tensor`] skips without reading. The whole file where the file
    /// system does not say.
    data: Vec<(usize, usize)>,
}

/// Where a tensor's bytes are: shard index, dtype, shape, absolute byte range in the shard's mapping.
#[derive(Clone, Debug)]
struct TensorLoc {
    shard: usize,
    stored_name: String,
    dtype: Dtype,
    shape: Vec<usize>,
    start: usize,
    end: usize,
}

/// An opened, validated checkpoint directory. Tensors are read on demand from the memory maps.
pub struct Checkpoint {
    dir: PathBuf,
    config: Qwen35Config,
    shards: Vec<Shard>,
    tensors: BTreeMap<String, TensorLoc>,
}

/// Map a stored tensor name to the canonical text-model name, or `None` for tensors a text runtime ignores
/// (`model.visual.*`, `mtp.*`, anything unknown).
pub fn canonical_name(stored: &str) -> Option<String> {
    if let Some(rest) = stored.strip_prefix("model.language_model.") {
        return Some(format!("model.{rest}"));
    }
    if stored.starts_with("model.visual.") || stored.starts_with("mtp.") {
        return None;
    }
    if stored.starts_with("model.") || stored == crate::names::LM_HEAD {
        return Some(stored.to_string());
    }
    None
}

impl Checkpoint {
    /// Open `dir`: parse `config.json`, memory-map the safetensors file(s) and check that every tensor the
    /// config requires ([`Qwen35Config::expected_tensors`]) is present with the right shape and a supported dtype.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        let dir = dir.as_ref().to_path_buf();
        let meta = std::fs::metadata(&dir).map_err(io_err(&dir))?;
        if !meta.is_dir() {
            return Err(CheckpointError::Io {
                path: dir.display().to_string(),
                err: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            });
        }
        let config = Qwen35Config::from_file(&dir.join("config.json"))?;
        let single = dir.join("model.safetensors");
        let index = dir.join("model.safetensors.index.json");
        let files: Vec<PathBuf> = if single.is_file() {
            vec![single]
        } else if index.is_file() {
            shard_files(&index)?
        } else {
            return Err(CheckpointError::NoWeights { dir: dir.display().to_string() });
        };
        let mut shards = Vec::new();
        let mut tensors = BTreeMap::new();
        for path in files {
            let file = File::open(&path).map_err(io_err(&path))?;
            // SAFETY: the file is mapped read-only; checkpoints are not modified while a model reads them
            // (the same assumption every safetensors loader makes).
            let mmap = unsafe { Mmap::map(&file) }.map_err(io_err(&path))?;
            let bad = |msg: String| CheckpointError::Format { path: path.display().to_string(), msg };
            let (header_len, metadata) =
                safetensors::SafeTensors::read_metadata(&mmap).map_err(|e| bad(e.to_string()))?;
            let base = 8 + header_len;
            for (stored, info) in metadata.tensors() {
                let Some(name) = canonical_name(&stored) else { continue };
                let (s, e) = info.data_offsets;
                if base + e > mmap.len() || s > e {
                    return Err(bad(format!("tensor {stored} lies outside the file")));
                }
                tensors.insert(
                    name,
                    TensorLoc {
                        shard: shards.len(),
                        stored_name: stored.clone(),
                        dtype: info.dtype,
                        shape: info.shape.clone(),
                        start: base + s,
                        end: base + e,
                    },
                );
            }
            let data = data_ranges(&file, mmap.len());
            shards.push(Shard { path, mmap, data });
        }
        let ck = Checkpoint { dir, config, shards, tensors };
        ck.validate()?;
        Ok(ck)
    }

    /// The parsed text config.
    pub fn config(&self) -> &Qwen35Config {
        &self.config
    }

    /// The checkpoint directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Canonical names of every text-model tensor found in the files.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(|s| s.as_str())
    }

    /// The file a missing tensor is reported against: the single file, or the shard index.
    fn weights_path(&self) -> String {
        if self.shards.len() == 1 && self.shards[0].path.file_name().is_some_and(|n| n == "model.safetensors") {
            self.shards[0].path.display().to_string()
        } else {
            self.dir.join("model.safetensors.index.json").display().to_string()
        }
    }

    /// Check that every expected tensor exists with the expected shape and a supported dtype.
    pub fn validate(&self) -> Result<(), CheckpointError> {
        for (name, shape) in self.config.expected_tensors() {
            let loc = self.locate(&name)?;
            let path = self.shards[loc.shard].path.display().to_string();
            if loc.shape != shape {
                return Err(CheckpointError::Shape { path, name: loc.stored_name.clone(), found: loc.shape.clone(), expected: shape });
            }
            if !matches!(loc.dtype, Dtype::F32 | Dtype::BF16 | Dtype::F16) {
                return Err(CheckpointError::Dtype { path, name: loc.stored_name.clone(), dtype: format!("{:?}", loc.dtype) });
            }
        }
        Ok(())
    }

    fn locate(&self, name: &str) -> Result<&TensorLoc, CheckpointError> {
        self.tensors
            .get(name)
            .ok_or_else(|| CheckpointError::Missing { path: self.weights_path(), name: name.to_string() })
    }

    /// Shape of a tensor by canonical name.
    pub fn shape(&self, name: &str) -> Result<Vec<usize>, CheckpointError> {
        Ok(self.locate(name)?.shape.clone())
    }

    /// Read one tensor (canonical name) as f32, in its stored layout.
    ///
    /// Blocks of [`ZERO_BLOCK`] values that are all `+0` in the file are not written: they stay the untouched
    /// zero pages of a fresh allocation, and the tensor carries their [`HostTensor::blocks`] index. So a woven
    /// checkpoint larger than memory (41 GB of mostly zeros for SIMT4) loads in the memory of its nonzeros.
    pub fn tensor(&self, name: &str) -> Result<HostTensor, CheckpointError> {
        let loc = self.locate(name)?;
        let (data, blocks) = self.convert_blocks(loc)?;
        Ok(HostTensor::with_known_blocks(loc.shape.clone(), data, blocks))
    }

    /// Read a 2-D tensor `[rows, cols]` as f32 and transpose it to `[cols, rows]` in the same pass (linear
    /// weights `[out, in]` become `[in, out]`, the layout a `x @ W` matmul wants), without an intermediate copy.
    pub fn tensor_transposed(&self, name: &str) -> Result<HostTensor, CheckpointError> {
        let loc = self.locate(name)?;
        if loc.shape.len() != 2 {
            return Err(CheckpointError::Shape {
                path: self.shards[loc.shard].path.display().to_string(),
                name: loc.stored_name.clone(),
                found: loc.shape.clone(),
                expected: vec![0, 0],
            });
        }
        let (r, c) = (loc.shape[0], loc.shape[1]);
        let data = self.convert_transposed(loc, r, c)?;
        Ok(HostTensor::new(vec![c, r], data))
    }

    /// Convert a tensor's bytes to f32 in its stored layout, block by block: a block of [`ZERO_BLOCK`] values
    /// whose bytes are all zero (`+0`; `-0` is kept) is skipped and left as the allocation's zeros. Returns the
    /// values and the blocks written, ascending. The mapped pages are released as in [`Self::convert_transposed`].
    fn convert_blocks(&self, loc: &TensorLoc) -> Result<(Vec<f32>, Vec<u64>), CheckpointError> {
        let (bytes, width) = self.bytes(loc)?;
        let mut out = vec![0f32; bytes.len() / width];
        let mut blocks = Vec::new();
        let data = &self.shards[loc.shard].data;
        let mut r = 0; // the first data range that may overlap the current block
        for (b, (src, dst)) in bytes.chunks(ZERO_BLOCK * width).zip(out.chunks_mut(ZERO_BLOCK)).enumerate() {
            let a = loc.start + b * ZERO_BLOCK * width;
            let e = a + src.len();
            while r < data.len() && data[r].1 <= a {
                r += 1;
            }
            if r == data.len() || data[r].0 >= e {
                continue; // inside a hole: zeros, never read
            }
            if src.iter().fold(0u8, |a, x| a | x) == 0 {
                continue;
            }
            blocks.push(b as u64);
            for (v, x) in dst.iter_mut().zip(src.chunks_exact(width)) {
                *v = decode(loc.dtype, x);
            }
        }
        release_pages(&self.shards[loc.shard].mmap, loc.start, loc.end);
        Ok((out, blocks))
    }

    /// Convert a `[r, c]` matrix's bytes to f32 transposed to `[c, r]`, then tell the kernel the mapped pages
    /// are no longer needed, so a large model's file pages do not stay resident beside the converted copy.
    fn convert_transposed(&self, loc: &TensorLoc, r: usize, c: usize) -> Result<Vec<f32>, CheckpointError> {
        let (bytes, width) = self.bytes(loc)?;
        let get = |i: usize| decode(loc.dtype, &bytes[i * width..i * width + width]);
        let mut out = vec![0f32; r * c];
        // Blocked transpose: read rows of a block of source rows, write columns.
        const BLK: usize = 64;
        for r0 in (0..r).step_by(BLK) {
            for c0 in (0..c).step_by(BLK) {
                for i in r0..(r0 + BLK).min(r) {
                    for j in c0..(c0 + BLK).min(c) {
                        out[j * r + i] = get(i * c + j);
                    }
                }
            }
        }
        release_pages(&self.shards[loc.shard].mmap, loc.start, loc.end);
        Ok(out)
    }

    /// A tensor's mapped bytes and bytes per value (F32 4, BF16 and F16 2), after checking the dtype and that
    /// the byte count fits the shape.
    fn bytes(&self, loc: &TensorLoc) -> Result<(&[u8], usize), CheckpointError> {
        let shard = &self.shards[loc.shard];
        let width = match loc.dtype {
            Dtype::F32 => 4,
            Dtype::BF16 | Dtype::F16 => 2,
            other => {
                return Err(CheckpointError::Dtype {
                    path: shard.path.display().to_string(),
                    name: loc.stored_name.clone(),
                    dtype: format!("{other:?}"),
                })
            }
        };
        let bytes = &shard.mmap[loc.start..loc.end];
        let n: usize = loc.shape.iter().product();
        if bytes.len() != n * width {
            return Err(CheckpointError::Format {
                path: shard.path.display().to_string(),
                msg: format!("tensor {} has {} bytes for shape {:?}", loc.stored_name, bytes.len(), loc.shape),
            });
        }
        Ok((bytes, width))
    }

    /// A tensor's stored dtype and its bytes as they are in the file (little-endian values in the stored
    /// layout), for copying a tensor into another checkpoint without converting it.
    pub fn raw(&self, name: &str) -> Result<(Dtype, &[u8]), CheckpointError> {
        let loc = self.locate(name)?;
        let (bytes, _) = self.bytes(loc)?;
        Ok((loc.dtype, bytes))
    }

    /// Rows `rows` of a 2-D tensor `[r, c]` as f32 `[rows.len(), c]` (a slice of an embedding or an lm_head),
    /// reading only those rows. Errors: a tensor that is not 2-D or a range past its rows.
    pub fn tensor_rows(&self, name: &str, rows: std::ops::Range<usize>) -> Result<HostTensor, CheckpointError> {
        let loc = self.locate(name)?;
        let shard = self.shards[loc.shard].path.display().to_string();
        if loc.shape.len() != 2 || rows.end > loc.shape[0] || rows.start > rows.end {
            return Err(CheckpointError::Shape {
                path: shard,
                name: format!("{} (rows {}..{})", loc.stored_name, rows.start, rows.end),
                found: loc.shape.clone(),
                expected: vec![rows.end, loc.shape.get(1).copied().unwrap_or(0)],
            });
        }
        let (bytes, width) = self.bytes(loc)?;
        let c = loc.shape[1];
        let src = &bytes[rows.start * c * width..rows.end * c * width];
        let data: Vec<f32> = src.chunks_exact(width).map(|x| decode(loc.dtype, x)).collect();
        Ok(HostTensor::new(vec![rows.len(), c], data))
    }

    /// Read every text-model tensor the config requires into a [`WeightMap`] (stored layouts).
    pub fn weights(&self) -> Result<WeightMap, CheckpointError> {
        let mut m = WeightMap::new();
        for (name, _) in self.config.expected_tensors() {
            m.insert(name.clone(), self.tensor(&name)?);
        }
        Ok(m)
    }
}

/// Where the burn model reads its weights from: a checkpoint directory, or a model held in memory (a woven
/// machine before it is saved). Tensors by canonical name, as f32.
pub trait TensorSource {
    /// The model's config.
    fn config(&self) -> &Qwen35Config;
    /// One tensor in its stored layout.
    fn tensor(&self, name: &str) -> Result<HostTensor, CheckpointError>;
    /// A 2-D tensor `[rows, cols]` transposed to `[cols, rows]`.
    fn tensor_transposed(&self, name: &str) -> Result<HostTensor, CheckpointError>;
}

impl TensorSource for Checkpoint {
    fn config(&self) -> &Qwen35Config {
        Checkpoint::config(self)
    }
    fn tensor(&self, name: &str) -> Result<HostTensor, CheckpointError> {
        Checkpoint::tensor(self, name)
    }
    fn tensor_transposed(&self, name: &str) -> Result<HostTensor, CheckpointError> {
        Checkpoint::tensor_transposed(self, name)
    }
}

/// A model in memory: its config and weights (named as `Qwen3_5ForCausalLM` names them).
pub struct InMemory<'a> {
    pub config: &'a Qwen35Config,
    pub weights: &'a WeightMap,
}

impl InMemory<'_> {
    fn get(&self, name: &str) -> Result<&HostTensor, CheckpointError> {
        self.weights.get(name).ok_or_else(|| CheckpointError::Missing { path: "(model in memory)".into(), name: name.into() })
    }
}

impl TensorSource for InMemory<'_> {
    fn config(&self) -> &Qwen35Config {
        self.config
    }
    fn tensor(&self, name: &str) -> Result<HostTensor, CheckpointError> {
        self.get(name).cloned()
    }
    fn tensor_transposed(&self, name: &str) -> Result<HostTensor, CheckpointError> {
        transposed_2d(self.get(name)?, "(model in memory)", name)
    }
}

/// A 2-D tensor `[rows, cols]` (named `name`, read from `path`, for the error) transposed to `[cols, rows]`.
/// Errors: a tensor that is not 2-D.
pub(crate) fn transposed_2d(t: &HostTensor, path: &str, name: &str) -> Result<HostTensor, CheckpointError> {
    if t.shape.len() != 2 {
        return Err(CheckpointError::Shape { path: path.into(), name: name.into(), found: t.shape.clone(), expected: vec![0, 0] });
    }
    let (r, c) = (t.shape[0], t.shape[1]);
    let mut out = vec![0f32; r * c];
    for i in 0..r {
        for j in 0..c {
            out[j * r + i] = t.data[i * c + j];
        }
    }
    Ok(HostTensor::new(vec![c, r], out))
}

/// One little-endian value of `dtype` (F32, BF16 or F16, as [`Checkpoint::bytes`] checked) as f32.
fn decode(dtype: Dtype, b: &[u8]) -> f32 {
    match dtype {
        Dtype::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        Dtype::BF16 => half::bf16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32(),
        _ => half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32(),
    }
}

/// The byte ranges of `file` (of `len` bytes) that hold data, ascending, from `lseek`'s `SEEK_DATA` and
/// `SEEK_HOLE` (Linux); `[(0, len)]` where the file system or the platform does not tell.
fn data_ranges(file: &File, len: usize) -> Vec<(usize, usize)> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        let mut out = Vec::new();
        let mut pos: libc::off_t = 0;
        while (pos as usize) < len {
            // SAFETY: lseek on a file descriptor we own; it only moves the descriptor's offset, which nothing
            // else uses (the file is read through its mapping).
            let start = unsafe { libc::lseek(fd, pos, libc::SEEK_DATA) };
            if start < 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENXIO) {
                    break; // no data after pos
                }
                return vec![(0, len)]; // SEEK_DATA not supported here
            }
            // SAFETY: as above.
            let end = unsafe { libc::lseek(fd, start, libc::SEEK_HOLE) };
            if end <= start {
                return vec![(0, len)];
            }
            out.push((start as usize, (end as usize).min(len)));
            pos = end;
        }
        out
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        vec![(0, len)]
    }
}

/// Drop the whole pages inside `[start, end)` of a read-only file mapping from this process's resident set.
fn release_pages(mmap: &Mmap, start: usize, end: usize) {
    const PAGE: usize = 4096;
    let s = start.div_ceil(PAGE) * PAGE;
    let e = end / PAGE * PAGE;
    if e > s {
        // SAFETY: the mapping is read-only and file-backed: after MADV_DONTNEED a later access re-reads the
        // file, so no data is lost, and no reference into this range outlives `convert`.
        let _ = unsafe { mmap.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, s, e - s) };
    }
}

/// The shard files named by a `model.safetensors.index.json`, in first-mention order.
fn shard_files(index: &Path) -> Result<Vec<PathBuf>, CheckpointError> {
    let text = std::fs::read_to_string(index).map_err(io_err(index))?;
    let bad = |msg: String| CheckpointError::Index { path: index.display().to_string(), msg };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let map = v.get("weight_map").and_then(|m| m.as_object()).ok_or_else(|| bad("no \"weight_map\" object".into()))?;
    let dir = index.parent().unwrap_or(Path::new("."));
    let mut files: Vec<PathBuf> = Vec::new();
    for (name, f) in map {
        let f = f.as_str().ok_or_else(|| bad(format!("entry for {name} is not a file name")))?;
        if f.contains('/') || f.contains("..") {
            return Err(bad(format!("entry for {name} names {f:?}, which is not a file in this directory")));
        }
        let p = dir.join(f);
        if !files.contains(&p) {
            files.push(p);
        }
    }
    if files.is_empty() {
        return Err(bad("empty weight_map".into()));
    }
    Ok(files)
}

/// Write named f32 tensors as one safetensors file with metadata `{"format": "pt"}` (what PyTorch's
/// `save_file` and `save_pretrained` write), through a temporary file renamed into place.
pub fn write_tensors(path: &Path, tensors: &[(&str, &HostTensor)]) -> Result<(), CheckpointError> {
    let specs: Vec<(String, Vec<usize>)> = tensors.iter().map(|(n, t)| (n.to_string(), t.shape.clone())).collect();
    let by_name: HashMap<&str, &HostTensor> = tensors.iter().map(|(n, t)| (*n, *t)).collect();
    write_tensors_with(path, &specs, |name, _| Ok(Cow::Borrowed(by_name[name].data.as_slice())))
}

/// Stream f32 tensors into a safetensors file: the header is written from `specs` (name, shape), then each
/// tensor's values are asked of `produce` in turn and written, so only one tensor need be in memory (a 14.5 GB
/// model is written holding at most its largest tensor). Metadata `{"format": "pt"}`; data in `specs` order;
/// written to a temporary file renamed into place. Pages of [`HOLE_PAGE`] bytes that are all zero are not
/// written but left as holes of a sparse file (where the file system has them): they read back as zeros, and a
/// woven checkpoint, mostly zeros, takes the disk space of its nonzero pages.
pub fn write_tensors_with<'a>(
    path: &Path,
    specs: &[(String, Vec<usize>)],
    mut produce: impl FnMut(&str, &[usize]) -> Result<Cow<'a, [f32]>, CheckpointError>,
) -> Result<(), CheckpointError> {
    let typed: Vec<(String, Vec<usize>, Dtype)> = specs.iter().map(|(n, s)| (n.clone(), s.clone(), Dtype::F32)).collect();
    write_tensors_typed(path, &typed, |name, shape| {
        let data = produce(name, shape)?;
        let n: usize = shape.iter().product();
        if data.len() != n {
            return Err(CheckpointError::Shape { path: path.display().to_string(), name: name.to_string(), found: vec![data.len()], expected: shape.to_vec() });
        }
        Ok(TensorBytes::F32(data))
    })
}

/// The values of one tensor handed to [`write_tensors_typed`]: f32 values (converted to the spec's dtype, F32
/// or BF16 rounded to nearest even), or bytes already in the spec's dtype (copied from another checkpoint).
pub enum TensorBytes<'a> {
    F32(Cow<'a, [f32]>),
    Raw(Cow<'a, [u8]>),
}

/// Bytes per value of the dtypes [`write_tensors_typed`] writes (F32 4, BF16 and F16 2).
pub fn dtype_width(dtype: Dtype) -> Option<usize> {
    match dtype {
        Dtype::F32 => Some(4),
        Dtype::BF16 | Dtype::F16 => Some(2),
        _ => None,
    }
}

/// [`write_tensors_with`] for tensors of several dtypes (F32, BF16, F16): `specs` is (name, shape, dtype), and
/// `produce` gives each tensor's values as f32 (converted to the dtype: F32, or BF16 rounded to nearest even)
/// or as raw bytes already in that dtype. Errors: a value count or byte count that does not fit the shape, an
/// F16 tensor given as f32, an unsupported dtype.
pub fn write_tensors_typed<'a>(
    path: &Path,
    specs: &[(String, Vec<usize>, Dtype)],
    mut produce: impl FnMut(&str, &[usize]) -> Result<TensorBytes<'a>, CheckpointError>,
) -> Result<(), CheckpointError> {
    use std::io::Write;
    let mut header = serde_json::Map::new();
    header.insert("__metadata__".into(), serde_json::json!({"format": "pt"}));
    let mut offset = 0usize;
    for (name, shape, dtype) in specs {
        let width = dtype_width(*dtype).ok_or_else(|| CheckpointError::Dtype {
            path: path.display().to_string(),
            name: name.clone(),
            dtype: format!("{dtype:?}"),
        })?;
        let bytes = shape.iter().product::<usize>() * width;
        header.insert(
            name.clone(),
            serde_json::json!({"dtype": format!("{dtype:?}"), "shape": shape, "data_offsets": [offset, offset + bytes]}),
        );
        offset += bytes;
    }
    let mut hbytes = serde_json::to_vec(&serde_json::Value::Object(header)).expect("header serializes");
    while (8 + hbytes.len()) % 8 != 0 {
        hbytes.push(b' ');
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file = path.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
    let tmp = dir.join(format!(".{file}.tmp"));
    let result = (|| -> Result<(), CheckpointError> {
        let mut f = SparseWriter::new(File::create(&tmp).map_err(io_err(&tmp))?);
        f.write_all(&(hbytes.len() as u64).to_le_bytes()).map_err(io_err(&tmp))?;
        f.write_all(&hbytes).map_err(io_err(&tmp))?;
        let mut buf = Vec::with_capacity(1 << 20);
        for (name, shape, dtype) in specs {
            let n: usize = shape.iter().product();
            let width = dtype_width(*dtype).expect("checked above");
            let shape_err = |found: usize| CheckpointError::Shape {
                path: path.display().to_string(),
                name: name.clone(),
                found: vec![found],
                expected: shape.clone(),
            };
            match produce(name, shape)? {
                TensorBytes::F32(data) => {
                    if data.len() != n {
                        return Err(shape_err(data.len()));
                    }
                    for chunk in data.chunks(1 << 18) {
                        buf.clear();
                        match dtype {
                            Dtype::F32 => buf.extend(chunk.iter().flat_map(|v| v.to_le_bytes())),
                            Dtype::BF16 => buf.extend(chunk.iter().flat_map(|v| half::bf16::from_f32(*v).to_bits().to_le_bytes())),
                            _ => {
                                return Err(CheckpointError::Dtype { path: path.display().to_string(), name: name.clone(), dtype: "F16 (from f32 values)".into() })
                            }
                        }
                        f.write_all(&buf).map_err(io_err(&tmp))?;
                    }
                }
                TensorBytes::Raw(bytes) => {
                    if bytes.len() != n * width {
                        return Err(shape_err(bytes.len() / width));
                    }
                    f.write_all(&bytes).map_err(io_err(&tmp))?;
                }
            }
        }
        f.finish().and_then(|f| f.sync_all()).map_err(io_err(&tmp))?;
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path).map_err(io_err(path))
}

/// The page size of [`write_tensors_with`]'s holes, bytes: pages this long (at offsets that are multiples of it)
/// whose bytes are all zero are skipped.
pub const HOLE_PAGE: usize = 4096;

/// A buffered writer that leaves the all-zero pages of [`HOLE_PAGE`] bytes unwritten (seeking over them), so the
/// file is sparse; [`Self::finish`] sets the full length, so a run of zeros at the end reads back too.
struct SparseWriter {
    file: File,
    /// Bytes not yet written, from offset `base` of the file (a multiple of `HOLE_PAGE`).
    buf: Vec<u8>,
    base: u64,
}

impl SparseWriter {
    const CAPACITY: usize = 1 << 22;

    fn new(file: File) -> Self {
        Self { file, buf: Vec::with_capacity(Self::CAPACITY + HOLE_PAGE), base: 0 }
    }

    /// Write the buffer's whole pages (all of it when `all`), runs of nonzero pages in one call each.
    fn flush_pages(&mut self, all: bool) -> std::io::Result<()> {
        use std::io::{Seek, SeekFrom, Write};
        let end = if all { self.buf.len() } else { self.buf.len() / HOLE_PAGE * HOLE_PAGE };
        let mut run: Option<usize> = None; // start of the current run of nonzero pages
        let mut p = 0;
        while p < end {
            let q = (p + HOLE_PAGE).min(end);
            let zero = self.buf[p..q].iter().all(|&b| b == 0);
            match (zero, run) {
                (false, None) => run = Some(p),
                (true, Some(r)) => {
                    self.file.seek(SeekFrom::Start(self.base + r as u64))?;
                    self.file.write_all(&self.buf[r..p])?;
                    run = None;
                }
                _ => {}
            }
            p = q;
        }
        if let Some(r) = run {
            self.file.seek(SeekFrom::Start(self.base + r as u64))?;
            self.file.write_all(&self.buf[r..end])?;
        }
        self.buf.drain(..end);
        self.base += end as u64;
        Ok(())
    }

    /// Write what is left and give the file its full length (holes included).
    fn finish(mut self) -> std::io::Result<File> {
        self.flush_pages(true)?;
        self.file.set_len(self.base)?;
        Ok(self.file)
    }
}

impl std::io::Write for SparseWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= Self::CAPACITY {
            self.flush_pages(false)?;
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(()) // pages are written when whole, or by `finish`
    }
}

/// Files a checkpoint directory may contain; a non-empty directory with anything else is not overwritten.
const CHECKPOINT_FILES: &[&str] =
    &["config.json", "model.safetensors", "model.safetensors.index.json", "generation_config.json", "README.md"];

/// Write `weights` as `Qwen3_5ForCausalLM.save_pretrained` does: `config.json` ([`Qwen35Config::to_hf_json`])
/// and one f32 `model.safetensors` with metadata `{"format": "pt"}`; with tied embeddings `lm_head.weight` is
/// omitted. Every tensor the config requires must be in `weights` with its shape; other entries are ignored.
///
/// `dir` is created if needed. A non-empty directory is only overwritten when it holds nothing but
/// checkpoint files (a previous checkpoint); files are written to temporaries and renamed into place.
pub fn save_checkpoint(dir: impl AsRef<Path>, config: &Qwen35Config, weights: &WeightMap) -> Result<(), CheckpointError> {
    let st_path = dir.as_ref().join("model.safetensors");
    for (name, shape) in config.expected_tensors() {
        let t = weights
            .get(&name)
            .ok_or_else(|| CheckpointError::Missing { path: st_path.display().to_string(), name: name.clone() })?;
        if t.shape != shape {
            return Err(CheckpointError::Shape { path: st_path.display().to_string(), name, found: t.shape.clone(), expected: shape });
        }
    }
    save_checkpoint_with(dir, config, |name, _| Ok(Cow::Borrowed(weights[name].data.as_slice())))
}

/// [`save_checkpoint`] with the tensors produced one at a time by `produce(name, shape)` (f32 values of the
/// expected shape), so a model larger than memory can be written.
pub fn save_checkpoint_with<'a>(
    dir: impl AsRef<Path>,
    config: &Qwen35Config,
    produce: impl FnMut(&str, &[usize]) -> Result<Cow<'a, [f32]>, CheckpointError>,
) -> Result<(), CheckpointError> {
    let dir = dir.as_ref();
    if dir.exists() {
        let entries = std::fs::read_dir(dir).map_err(io_err(dir))?;
        for e in entries {
            let e = e.map_err(io_err(dir))?;
            let name = e.file_name().to_string_lossy().to_string();
            let ours = CHECKPOINT_FILES.contains(&name.as_str())
                || name.starts_with("model-") // shards of a previous checkpoint
                || (name.starts_with('.') && name.ends_with(".tmp")); // an interrupted save of ours
            if !ours {
                return Err(CheckpointError::Refuse {
                    path: dir.display().to_string(),
                    msg: format!("it holds {name:?}, which is not part of a checkpoint"),
                });
            }
        }
    } else {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    let st_path = dir.join("model.safetensors");
    let specs = config.expected_tensors();
    let cfg_tmp = dir.join(".config.json.tmp");
    let cfg_text = serde_json::to_string_pretty(&config.to_hf_json()).expect("config serializes");
    std::fs::write(&cfg_tmp, cfg_text + "\n").map_err(io_err(&cfg_tmp))?;
    write_tensors_with(&st_path, &specs, produce)?;
    // A stale index would shadow nothing (model.safetensors wins) but would confuse other tools.
    let stale_index = dir.join("model.safetensors.index.json");
    if stale_index.exists() {
        std::fs::remove_file(&stale_index).map_err(io_err(&stale_index))?;
    }
    let cfg_path = dir.join("config.json");
    std::fs::rename(&cfg_tmp, &cfg_path).map_err(io_err(&cfg_path))?;
    Ok(())
}

/// Whether `name` is a file a sharded (released-layout) checkpoint directory may hold: the weights
/// (`model.safetensors`, shards `model-*.safetensors`, `model.safetensors.index.json`), the configs
/// (`config.json`, `generation_config.json`), the Hugging Face tokenizer files (`tokenizer.json`,
/// `tokenizer_config.json`, `chat_template.jinja`, `special_tokens_map.json`, `vocab.json`, `merges.txt`),
/// `README.md`, or an interrupted save of ours (`.*.tmp`).
pub fn is_sharded_checkpoint_file(name: &str) -> bool {
    const FILES: &[&str] = &[
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "model.safetensors.index.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "chat_template.jinja",
        "special_tokens_map.json",
        "vocab.json",
        "merges.txt",
        "README.md",
    ];
    FILES.contains(&name)
        || (name.starts_with("model-") && name.ends_with(".safetensors"))
        || (name.starts_with('.') && name.ends_with(".tmp"))
}

/// Make `dir` ready for a sharded checkpoint: create it if needed; an existing directory must hold only
/// files [`is_sharded_checkpoint_file`] accepts (a previous checkpoint of ours), else
/// [`CheckpointError::Refuse`] and nothing is touched.
pub fn prepare_sharded_dir(dir: &Path) -> Result<(), CheckpointError> {
    if dir.exists() {
        for e in std::fs::read_dir(dir).map_err(io_err(dir))? {
            let e = e.map_err(io_err(dir))?;
            let name = e.file_name().to_string_lossy().to_string();
            let is_file = e.file_type().map(|t| t.is_file()).unwrap_or(false);
            if !is_file || !is_sharded_checkpoint_file(&name) {
                return Err(CheckpointError::Refuse {
                    path: dir.display().to_string(),
                    msg: format!("it holds {name:?}, which is not part of a checkpoint"),
                });
            }
        }
        Ok(())
    } else {
        std::fs::create_dir_all(dir).map_err(io_err(dir))
    }
}

/// The name of shard `i` (1-based) of `n`: `model-0000i-of-0000n.safetensors`, as `save_pretrained` names them.
pub fn shard_name(i: usize, n: usize) -> String {
    format!("model-{i:05}-of-{n:05}.safetensors")
}

/// Split `specs` (name, shape, dtype), in order, into shards of at most `max_shard_bytes` bytes of tensor data
/// each, as `save_pretrained` does: a tensor opens a new shard when it does not fit in the current one, and a
/// tensor larger than the limit gets a shard of its own. Returns the index ranges of `specs` per shard (none for
/// empty `specs`). Errors: a dtype [`write_tensors_typed`] cannot write.
pub fn plan_shards(
    specs: &[(String, Vec<usize>, Dtype)],
    max_shard_bytes: usize,
) -> Result<Vec<std::ops::Range<usize>>, CheckpointError> {
    let mut shards = Vec::new();
    let (mut start, mut size) = (0usize, 0usize);
    for (i, (name, shape, dtype)) in specs.iter().enumerate() {
        let width = dtype_width(*dtype).ok_or_else(|| CheckpointError::Dtype {
            path: "(sharded checkpoint)".into(),
            name: name.clone(),
            dtype: format!("{dtype:?}"),
        })?;
        let bytes = shape.iter().product::<usize>() * width;
        if i > start && size + bytes > max_shard_bytes {
            shards.push(start..i);
            start = i;
            size = 0;
        }
        size += bytes;
    }
    if start < specs.len() {
        shards.push(start..specs.len());
    }
    Ok(shards)
}

/// Write tensors as a sharded checkpoint's weights, the way `save_pretrained` lays them out: shards
/// `model-0000i-of-0000n.safetensors` of at most `max_shard_bytes` bytes of tensor data each ([`plan_shards`];
/// tensors in `specs` order, each through [`write_tensors_typed`]) and `model.safetensors.index.json`
/// (`{"metadata": {"total_size": bytes of tensor data}, "weight_map": {name: shard file}}`, names sorted).
///
/// `produce(name, shape)` is asked for each tensor in turn, so only one tensor need be in memory: a model is
/// written in the memory of its largest tensor. `dir` is prepared by [`prepare_sharded_dir`] (refused if it
/// holds anything but checkpoint files). After the index is in place, stale weight files of ours are removed:
/// `model.safetensors` (which loaders prefer to an index) and shards `model-*-of-*.safetensors` of a previous,
/// differently sharded save. Returns the shard paths, in order. Errors: a refused directory, an empty `specs`,
/// duplicate names, I/O, or any error of `produce` or [`write_tensors_typed`].
pub fn write_sharded<'a>(
    dir: &Path,
    specs: &[(String, Vec<usize>, Dtype)],
    max_shard_bytes: usize,
    mut produce: impl FnMut(&str, &[usize]) -> Result<TensorBytes<'a>, CheckpointError>,
) -> Result<Vec<PathBuf>, CheckpointError> {
    let index_path = dir.join("model.safetensors.index.json");
    let bad = |msg: String| CheckpointError::Index { path: index_path.display().to_string(), msg };
    if specs.is_empty() {
        return Err(bad("no tensors to write".into()));
    }
    let mut seen = std::collections::HashSet::new();
    for (name, _, _) in specs {
        if !seen.insert(name.as_str()) {
            return Err(bad(format!("tensor {name} is listed twice")));
        }
    }
    let plan = plan_shards(specs, max_shard_bytes)?;
    prepare_sharded_dir(dir)?;
    let n = plan.len();
    let mut paths = Vec::with_capacity(n);
    let mut weight_map = BTreeMap::new();
    let mut total = 0usize;
    for (i, range) in plan.into_iter().enumerate() {
        let file = shard_name(i + 1, n);
        let path = dir.join(&file);
        let part = &specs[range];
        write_tensors_typed(&path, part, |name, shape| produce(name, shape))?;
        for (name, shape, dtype) in part {
            total += shape.iter().product::<usize>() * dtype_width(*dtype).expect("checked by plan_shards");
            weight_map.insert(name.clone(), serde_json::Value::String(file.clone()));
        }
        paths.push(path);
    }
    let index = serde_json::json!({
        "metadata": {"total_size": total},
        "weight_map": serde_json::Value::Object(weight_map.into_iter().collect()),
    });
    let tmp = dir.join(".model.safetensors.index.json.tmp");
    let text = serde_json::to_string_pretty(&index).expect("index serializes") + "\n";
    std::fs::write(&tmp, text).map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, &index_path).map_err(io_err(&index_path))?;
    // Stale weights of a previous save of ours: a single file would shadow the index; old shards clutter.
    let single = dir.join("model.safetensors");
    if single.exists() {
        std::fs::remove_file(&single).map_err(io_err(&single))?;
    }
    for e in std::fs::read_dir(dir).map_err(io_err(dir))? {
        let e = e.map_err(io_err(dir))?;
        let name = e.file_name().to_string_lossy().to_string();
        let old_shard = name.starts_with("model-") && name.contains("-of-") && name.ends_with(".safetensors");
        if old_shard && !paths.iter().any(|p| p.file_name().is_some_and(|f| f == e.file_name().as_os_str())) {
            std::fs::remove_file(e.path()).map_err(io_err(&e.path()))?;
        }
    }
    Ok(paths)
}

/// A woven checkpoint's tensors as their nonzeros, in one safetensors file at `path`: what the weave cache keeps
/// (a dense f32 file of the 4-lane SIMT4 would take 42 GB). Each tensor is stored as its entries other than +0,
/// `NAME.idx` (U32 flat indices, or U64 for tensors of more than 2^32 entries, ascending) and `NAME.val` (F32); a
/// tensor more than half nonzero that is a matrix whose rows are mostly its first row (a woven embedding) as
/// `NAME.row0` and the entries that differ from it (`NAME.didx`, `NAME.dval`); any other as `NAME` (F32, whole).
/// The shapes are in the file's metadata. Every tensor of `config` must be in `weights`.
pub fn write_nonzeros(path: &Path, config: &Qwen35Config, weights: &WeightMap) -> Result<(), CheckpointError> {
    let mut meta = HashMap::new();
    let mut buffers: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = Vec::new();
    for (name, shape) in config.expected_tensors() {
        let t = weights.get(&name).ok_or_else(|| CheckpointError::Missing { path: "the weights to write".into(), name: name.clone() })?;
        meta.insert(name.clone(), shape_text(&t.shape));
        // The entries other than +0: in the indexed blocks when the tensor has a block index (the weaver's
        // tensors do), else in every block that is not all +0.
        let mut nz: Vec<usize> = Vec::new();
        let block_count = t.data.len().div_ceil(ZERO_BLOCK) as u64;
        let blocks: Box<dyn Iterator<Item = u64>> = match t.blocks() {
            Some(b) => Box::new(b.iter().copied()),
            None => Box::new(0..block_count),
        };
        for b in blocks {
            let base = b as usize * ZERO_BLOCK;
            let block = &t.data[base..(base + ZERO_BLOCK).min(t.data.len())];
            if block.iter().fold(0u32, |a, v| a | v.to_bits()) == 0 {
                continue;
            }
            nz.extend(block.iter().enumerate().filter(|(_, v)| v.to_bits() != 0).map(|(i, _)| base + i));
            if nz.len() * 2 > t.data.len() {
                break; // dense: stored below without the list
            }
        }
        if nz.len() * 2 > t.data.len() {
            // Dense. A woven embedding's rows are mostly its first row: then the first row and each entry that
            // differs from it (usually far fewer than the nonzeros).
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
    let bad = |msg: String| CheckpointError::Format { path: path.display().to_string(), msg };
    let views = buffers.iter().map(|(n, d, s, b)| safetensors::tensor::TensorView::new(*d, s.clone(), b).map(|v| (n.clone(), v))).collect::<Result<Vec<_>, _>>().map_err(|e| bad(e.to_string()))?;
    safetensors::serialize_to_file(views, Some(meta), path).map_err(|e| bad(e.to_string()))
}

/// Read what [`write_nonzeros`] wrote for `config`: zeroed tensors (whose untouched pages the OS never
/// materialises) filled with the stored entries, each sparse one with its block index
/// ([`HostTensor::with_blocks`]: the executors read only those blocks). Errors name the file and the tensor: a
/// missing one, a shape other than the config's, a bad dtype, indices out of range or not ascending.
pub fn read_nonzeros(path: &Path, config: &Qwen35Config) -> Result<WeightMap, CheckpointError> {
    let p = path.display().to_string();
    let bad = |msg: String| CheckpointError::Format { path: p.clone(), msg };
    let bytes = std::fs::read(path).map_err(io_err(path))?;
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).map_err(|e| bad(e.to_string()))?;
    let st = safetensors::SafeTensors::deserialize(&bytes).map_err(|e| bad(e.to_string()))?;
    let shapes = meta.metadata().clone().unwrap_or_default();
    let f32s = |t: &safetensors::tensor::TensorView<'_>, name: &str| -> Result<Vec<f32>, CheckpointError> {
        if t.dtype() != Dtype::F32 {
            return Err(CheckpointError::Dtype { path: p.clone(), name: name.to_string(), dtype: format!("{:?}", t.dtype()) });
        }
        Ok(t.data().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect())
    };
    let mut weights = WeightMap::new();
    for (name, shape) in config.expected_tensors() {
        let stored = shapes.get(&name).ok_or_else(|| CheckpointError::Missing { path: p.clone(), name: name.clone() })?;
        if *stored != shape_text(&shape) {
            return Err(bad(format!("tensor {name} has shape {stored}, the config needs {shape:?}")));
        }
        let n: usize = shape.iter().product();
        let t = match st.tensor(&name) {
            Ok(dense) => {
                let data = f32s(&dense, &name)?;
                if data.len() != n {
                    return Err(bad(format!("tensor {name} holds {} values, not {n}", data.len())));
                }
                HostTensor::new(shape, data)
            }
            Err(_) => {
                let get = |suffix: &str| st.tensor(&format!("{name}{suffix}")).map_err(|_| CheckpointError::Missing { path: p.clone(), name: format!("{name}{suffix}") });
                // Entries from row 0 (the row-0 form), else zeros; then the listed entries.
                let (mut data, idx, val, sparse) = match get(".row0") {
                    Ok(row0) => {
                        let row0 = f32s(&row0, &name)?;
                        if row0.is_empty() || n % row0.len() != 0 || shape.last() != Some(&row0.len()) {
                            return Err(bad(format!("{name}.row0 holds {} values for shape {shape:?}", row0.len())));
                        }
                        (row0.iter().cycle().take(n).copied().collect(), get(".didx")?, f32s(&get(".dval")?, &name)?, false)
                    }
                    Err(_) => (vec![0f32; n], get(".idx")?, f32s(&get(".val")?, &name)?, true),
                };
                let idx: Vec<u64> = match idx.dtype() {
                    Dtype::U32 => idx.data().chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")) as u64).collect(),
                    Dtype::U64 => idx.data().chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect(),
                    d => return Err(bad(format!("the indices of {name} have dtype {d:?}"))),
                };
                if idx.len() != val.len() || idx.iter().any(|i| *i as usize >= n) {
                    return Err(bad(format!("tensor {name}: {} indices for {} values, or an index beyond {n}", idx.len(), val.len())));
                }
                if idx.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(bad(format!("tensor {name}: indices not ascending")));
                }
                for (i, v) in idx.iter().zip(val) {
                    data[*i as usize] = v;
                }
                let t = HostTensor::new(shape, data);
                if sparse {
                    // Every other entry is +0: the executors visit only these blocks.
                    let mut blocks: Vec<u64> = idx.iter().map(|i| i / ZERO_BLOCK as u64).collect();
                    blocks.dedup();
                    t.with_blocks(blocks)
                } else {
                    t
                }
            }
        };
        weights.insert(name, t);
    }
    Ok(weights)
}

fn shape_text(shape: &[usize]) -> String {
    shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")
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

#[cfg(test)]
mod nonzeros_tests {
    use super::*;

    /// The three stored forms (nonzeros, first row and its differences, whole) read back bit for bit, a sparse
    /// tensor with the block index of its stored entries.
    #[test]
    fn nonzeros_read_back_bit_for_bit_in_every_form() {
        let config = crate::random::Preset::Tiny.config(None);
        let mut weights = crate::random::random_weights(&config, 7);
        // A woven-like sparse matrix (a few entries, one a -0 that must stay -0) and an embedding whose rows are
        // mostly its first row.
        let sparse = &crate::names::LayerTensor::GateProj.name(0);
        let t = weights.get_mut(sparse).unwrap();
        let n = t.data.len();
        t.data.iter_mut().enumerate().for_each(|(i, v)| *v = if i % 97 == 3 { 1.5 + i as f32 } else { 0.0 });
        t.data[n - 1] = -0.0;
        let embed = crate::names::EMBED_TOKENS;
        let t = weights.get_mut(embed).unwrap();
        let cols = t.shape[1];
        let row0: Vec<f32> = t.data[..cols].to_vec();
        for (i, v) in t.data.iter_mut().enumerate() {
            if i % 13 != 0 {
                *v = row0[i % cols];
            }
        }
        let dir = std::env::temp_dir().join(format!("nonzeros-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("weights.safetensors");
        write_nonzeros(&path, &config, &weights).unwrap();
        let back = read_nonzeros(&path, &config).unwrap();
        for (name, _) in config.expected_tensors() {
            let (a, b) = (&weights[&name], &back[&name]);
            assert_eq!(a.shape, b.shape, "{name}");
            assert!(a.data.iter().zip(&b.data).all(|(x, y)| x.to_bits() == y.to_bits()), "{name} bit for bit");
        }
        let blocks = back[sparse].blocks().expect("a sparse tensor has its block index");
        let want: Vec<u64> = (0..n).filter(|i| i % 97 == 3 || *i == n - 1).map(|i| (i / ZERO_BLOCK) as u64).fold(Vec::new(), |mut v, b| {
            if v.last() != Some(&b) {
                v.push(b);
            }
            v
        });
        assert_eq!(blocks, &want[..]);
        // The forms chosen: the embedding as its first row and differences, the sparse matrix as its nonzeros.
        let st_bytes = std::fs::read(&path).unwrap();
        let st = safetensors::SafeTensors::deserialize(&st_bytes).unwrap();
        assert!(st.tensor(&format!("{embed}.row0")).is_ok() && st.tensor(&format!("{sparse}.idx")).is_ok());
        // A file that lacks a tensor is an error naming it.
        let mut fewer = weights.clone();
        fewer.remove(sparse);
        assert!(write_nonzeros(&path, &config, &fewer).unwrap_err().to_string().contains(sparse));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
