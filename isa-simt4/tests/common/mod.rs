//! Helpers of the SIMT4 oracle tests (`tests/pocl.rs`, `tests/corpus.rs`): the POCL runner, the reference
//! interpreter run of a kernel, the kernel files and the skip rules.
#![allow(dead_code)]

pub mod pocl;

use isa_simt4::{LaunchSpec, Simt, Simt4Config, Stop};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Steps the interpreter may take for one kernel.
pub const MAX_STEPS: u64 = 50_000_000;

/// Whether this run is CI (`CI=true`): skips become failures there; skip a test (print `SKIPPED: why`), or
/// fail it under `CI=true`.
#[allow(unused_imports)]
pub use test_kit::{ci, skip};

/// The kernel examples, `examples/cuda` of the workspace.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cuda")
}

/// The `.cu` files of `dir` that have a launch file (`.toml`) beside them, sorted by name.
pub fn kernels_in(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let mut v: Vec<(PathBuf, PathBuf)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .filter_map(|p| {
            let t = p.with_extension("toml");
            t.exists().then_some((p, t))
        })
        .collect();
    v.sort();
    v
}

/// A kernel's source and launch.
pub fn load(cu: &Path, toml: &Path) -> (String, LaunchSpec) {
    let src = std::fs::read_to_string(cu).unwrap_or_else(|e| panic!("{}: {e}", cu.display()));
    let spec = LaunchSpec::from_file(toml).unwrap_or_else(|e| panic!("{e}"));
    (src, spec)
}

/// One interpreter run: the arrays (as `KernelImage::arrays_json`), the program's instructions, the steps.
pub struct InterpRun {
    pub arrays: Value,
    pub instructions: usize,
    pub steps: u64,
}

/// Why a kernel did not run on the interpreter.
#[derive(Debug)]
pub enum InterpError {
    /// The front end rejected the kernel.
    Compile(String),
    /// The machine faulted, did not halt, or did not load.
    Run(String),
}

/// Compile `src` for `spec` on `lanes` lanes (the default machine otherwise) and run it to `HALT`.
pub fn run_interp(src: &str, file: &str, spec: &LaunchSpec, lanes: u32) -> Result<InterpRun, InterpError> {
    let cfg = Simt4Config { lanes, ..Default::default() };
    let image = match isa_simt4::cuda::compile(src, file, spec, &cfg) {
        Ok(i) => i,
        Err(e) => return Err(InterpError::Compile(e.to_string())),
    };
    let mut m = Simt::new(cfg, &image.words(), &image.global).map_err(|e| InterpError::Run(e.to_string()))?;
    match m.run(MAX_STEPS) {
        Some(Stop::Halt) => {}
        Some(Stop::Fault(f)) => return Err(InterpError::Run(format!("{file} ({lanes} lanes): fault {f:?}"))),
        None => return Err(InterpError::Run(format!("{file} ({lanes} lanes): no HALT in {MAX_STEPS} steps"))),
    }
    Ok(InterpRun { arrays: image.arrays_json(&m.global), instructions: image.program.len(), steps: m.steps })
}

/// Words in a JSON array value (nested for 2-D).
pub fn words(v: &Value) -> usize {
    match v {
        Value::Array(a) => a.iter().map(words).sum(),
        Value::Object(o) => o.values().map(words).sum(),
        _ => 1,
    }
}

/// The first difference of two `{"name": [..]}` objects, if any (`None`: equal).
pub fn first_difference(what_a: &str, a: &Value, what_b: &str, b: &Value) -> Option<String> {
    let (Some(ao), Some(bo)) = (a.as_object(), b.as_object()) else {
        return (a != b).then(|| format!("{what_a} {a} != {what_b} {b}"));
    };
    let mut names: Vec<&String> = ao.keys().chain(bo.keys()).collect();
    names.sort();
    names.dedup();
    for n in names {
        match (ao.get(n), bo.get(n)) {
            (Some(x), Some(y)) if x == y => {}
            (Some(x), Some(y)) => return Some(format!("array {n}: {what_a} {x} != {what_b} {y}")),
            (x, y) => return Some(format!("array {n}: {what_a} has {}, {what_b} has {}", x.is_some(), y.is_some())),
        }
    }
    None
}
