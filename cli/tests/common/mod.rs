//! Helpers shared by the `loom` binary's integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The built `loom` binary.
pub fn loom() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loom"))
}

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A fresh, empty scratch directory for test `name` (per process).
pub fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("loom-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}
