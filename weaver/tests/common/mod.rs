//! Shared by the weaver's integration tests: running `../shared/tools/hf_decode.py` (transformers'
//! `Qwen3_5ForCausalLM`) on an exported checkpoint.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The transformers check's python and decode script, and greedy decoding in transformers (the test kit's).
#[allow(unused_imports)]
pub use test_kit::{HfPrompt, hf_decode, hf_setup};

/// Run `backends/tools/hf_check_trace.py` (transformers on memory-mapped weights, teacher-forced, then the
/// last `decode_tail` tokens decoded greedily) on checkpoint `dir` and trace file `trace`; returns the exit
/// status and the JSON report it prints.
pub fn hf_check_trace(python: &str, dir: &Path, trace: &Path, decode_tail: usize) -> (i32, serde_json::Value) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../backends/tools/hf_check_trace.py");
    let out = std::process::Command::new(python)
        .arg(&script)
        .arg(dir)
        .arg(trace)
        .args(["--decode-tail", &decode_tail.to_string()])
        .output()
        .expect("run hf_check_trace.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("hf_check_trace.py printed no report ({e}): {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), v)
}
