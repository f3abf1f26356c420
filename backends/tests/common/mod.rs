//! Helpers shared by the integration tests: where the fixtures are, which backends to run, error norms.
#![allow(dead_code)]

#[cfg(feature = "burn")]
use backends::model::BackendKind;
use std::path::{Path, PathBuf};

/// The repository root (the parent of this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crate has a parent").to_path_buf()
}

/// True when running under CI (`CI=true`), where missing test data is a failure, not a skip.
#[allow(unused_imports)]
pub use test_kit::ci as in_ci;

/// Every `qwen35-*` fixture directory, sorted.
pub fn fixtures(test: &str) -> Vec<PathBuf> {
    let Some(dir) = test_kit::fixtures_dir() else { return vec![] };
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures dir is readable")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("qwen35-")))
        .collect();
    v.sort();
    assert!(!v.is_empty() || !in_ci(), "{test}: no qwen35-* fixtures in {}", dir.display());
    v
}

/// The CPU backends always, wgpu when `WEAVER_WGPU=1`.
#[cfg(feature = "burn")]
pub fn backends_under_test() -> Vec<BackendKind> {
    let mut v = vec![BackendKind::Ndarray, BackendKind::Flex];
    if std::env::var("WEAVER_WGPU").is_ok_and(|v| v == "1") {
        v.push(BackendKind::Wgpu);
    } else {
        eprintln!("wgpu not tested (set WEAVER_WGPU=1 to include it)");
    }
    v
}

/// `||a - b|| / ||b||` (b the reference).
pub fn rel_err(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len(), "length mismatch");
    let mut d = 0f64;
    let mut n = 0f64;
    for (x, y) in a.iter().zip(b) {
        d += (*x as f64 - *y as f64).powi(2);
        n += (*y as f64).powi(2);
    }
    (d / n.max(1e-300)).sqrt()
}

/// A fresh empty scratch directory under the system temp dir.
pub fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("loom-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).expect("create scratch dir");
    p
}

/// Read all tensors of a safetensors file: name -> (shape, f32 values); I64 tensors are converted.
pub fn read_safetensors(path: &Path) -> std::collections::BTreeMap<String, (Vec<usize>, Vec<f32>)> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let st = safetensors::SafeTensors::deserialize(&bytes).expect("valid safetensors");
    let mut m = std::collections::BTreeMap::new();
    for (name, view) in st.tensors() {
        let data: Vec<f32> = match view.dtype() {
            safetensors::Dtype::F32 => view.data().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect(),
            safetensors::Dtype::I64 => {
                view.data().chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f32).collect()
            }
            other => panic!("{name}: unexpected dtype {other:?}"),
        };
        m.insert(name, (view.shape().to_vec(), data));
    }
    m
}
