//! Why the SIMT4 machine description could not be built, and the errors of the config, the interpreter's
//! load, a launch and the OpenCL translation.

use isa_api::DescError;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// An error of [`crate::circuit::simt4_machine`].
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Simt4Error {
    /// The config is out of range ([`crate::isa::Simt4Config::validate`]); the message names the bad key.
    #[error("simt4 config out of range: {0}")]
    Config(#[from] ConfigError),
    /// The built description fails [`isa_api::MachineDesc::validate`] (a bug in the circuit, not in the input).
    #[error("simt4 machine description is malformed: {0}")]
    Desc(#[from] DescError),
}

/// A [`crate::isa::Simt4Config`] key out of range ([`crate::isa::Simt4Config::validate`]); names the key.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    #[error("lanes = {0} (4, 8, 16 or 32)")]
    Lanes(u32),
    #[error("warps = {0} (a power of two, 1 to 32)")]
    Warps(u32),
    /// `shared_words` or `global_words`.
    #[error("{key} = {value} (a power of two, 128 to 65536)")]
    Words { key: &'static str, value: u32 },
}

/// Why the reference interpreter cannot load a kernel ([`crate::interp::Simt::new`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LoadError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the program has {len} instructions; the machine holds {max}")]
    ProgramTooLong { len: usize, max: u32 },
    #[error("the arrays need {need} words of global memory; the machine has {have}")]
    GlobalTooSmall { need: usize, have: u32 },
}

/// A bad launch ([`crate::launch`]): a launch file, a `--grid`/`--block`/`--arg` override or an argument's
/// value. The context variants ([`LaunchError::File`], [`LaunchError::Key`], [`LaunchError::Flag`],
/// [`LaunchError::Arg`]) name the file, key, flag or argument at fault in front of the problem.
#[derive(Debug, Error)]
pub enum LaunchError {
    /// A file (a launch file, an `@file.json` argument) could not be read.
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// A problem inside the file `path`.
    #[error("{}: {source}", path.display())]
    File { path: PathBuf, source: Box<LaunchError> },
    /// A problem with the value of the launch file's key `key` (`grid`, `block`, `args.NAME`).
    #[error("{key}: {source}")]
    Key { key: String, source: Box<LaunchError> },
    /// A problem with the value of a `--grid` or `--block` flag.
    #[error("{flag} {source}")]
    Flag { flag: &'static str, source: Box<LaunchError> },
    /// A problem with the value of `--arg NAME=...`.
    #[error("--arg {name}: {source}")]
    Arg { name: String, source: Box<LaunchError> },
    /// The launch file is not TOML (the parser's message).
    #[error("{0}")]
    Toml(String),
    #[error("kernel: a file name expected")]
    KernelNotText,
    #[error("args: a table expected")]
    ArgsNotTable,
    #[error("unknown key {0:?} (kernel, grid, block, args)")]
    UnknownKey(String),
    #[error("{}: no such kernel file", .0.display())]
    NoKernel(PathBuf),
    #[error(
        "{}: no launch: give --grid, --block and --arg NAME=VALUE per parameter, --launch FILE, or write {} beside it",
        .0.display(),
        .0.with_extension("toml").display()
    )]
    NoLaunch(PathBuf),
    #[error("the kernel path names no file")]
    KernelNoFileName,
    /// A `--grid`/`--block` value that is not `X` or `X,Y` numbers.
    #[error("{0:?}: X or X,Y with positive whole numbers expected")]
    DimsNotNumbers(String),
    #[error("{0:?}: X or X,Y expected")]
    DimsShape(String),
    #[error("{0:?}: sizes must be at least 1")]
    DimsZero(String),
    /// A launch file's size (the TOML value as written).
    #[error("{0} is not a size from 1 to 65535")]
    NotASize(String),
    #[error("a number or [x, y] expected")]
    DimsExpected,
    /// `--arg TEXT` without `=`.
    #[error("--arg {0:?}: NAME=VALUE expected")]
    ArgNoValue(String),
    #[error("--arg {text:?}: {name:?} is not a parameter name")]
    ArgName { text: String, name: String },
    /// A launch file's argument value of another TOML type (the value as written).
    #[error("{0} is not a number, an array, \"zeros(N)\" or \"@file.json\"")]
    TomlArg(String),
    /// A launch file's array that has no JSON form.
    #[error("{0}")]
    TomlArray(#[source] serde_json::Error),
    #[error("{0:?}: zeros(N) or zeros(ROWS,COLS) expected")]
    Zeros(String),
    /// An `@file.json` argument that is not JSON.
    #[error("{}: {source}", path.display())]
    JsonFile { path: PathBuf, source: serde_json::Error },
    /// An inline `[..]` argument that is not JSON.
    #[error("{text:?}: {source}")]
    JsonText { text: String, source: serde_json::Error },
    /// An argument's text of no known form.
    #[error("{0:?} is not a number, a JSON array, zeros(N) or @file.json")]
    ArgValue(String),
    /// An array element (the JSON value as written).
    #[error("{0} is not a 32-bit integer")]
    NotInt32(String),
    #[error("an array expected")]
    NotArray,
    #[error("an empty array")]
    EmptyArray,
    #[error("rows of a 2-D array must all be arrays")]
    RowNotArray,
    #[error("the rows of a 2-D array must have one non-zero length")]
    RaggedRows,
}

impl LaunchError {
    /// This error, in the file `path`.
    pub fn in_file(self, path: &Path) -> Self {
        LaunchError::File { path: path.to_path_buf(), source: Box::new(self) }
    }
    /// This error, in the value of `key`.
    pub fn at_key(self, key: impl Into<String>) -> Self {
        LaunchError::Key { key: key.into(), source: Box::new(self) }
    }
}

/// A kernel [`crate::opencl::to_opencl`] cannot translate; `line` is the kernel's line (1-based).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OpenclError {
    #[error("no __global__ kernel in the source")]
    NoKernel,
    #[error("line {line}: unbalanced parentheses")]
    Unbalanced { line: usize },
    /// `threadIdx`, `blockIdx`, `blockDim` or `gridDim` without a dimension.
    #[error("line {line}: {builtin} without .x, .y or .z")]
    NoDimension { line: usize, builtin: String },
    #[error("line {line}: __syncthreads() takes no arguments")]
    SyncthreadsArguments { line: usize },
    /// `__umulhi`, `__mulhi` or `abs` called with another number of arguments than `want`.
    #[error("line {line}: {function} takes {want} argument{}", if *.want == 1 { "" } else { "s" })]
    Arguments { line: usize, function: String, want: usize },
}
