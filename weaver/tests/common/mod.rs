//! Shared by the weaver's integration tests: running `../shared/tools/hf_decode.py` (transformers'
//! `Qwen3_5ForCausalLM`) on an exported checkpoint.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The python (`WEAVER_HF_PYTHON`) and the decode script (`WEAVER_HF_DECODE`, default
/// `../shared/tools/hf_decode.py`), or `None` after printing that `test` is skipped.
pub fn hf_setup(test: &str) -> Option<(String, PathBuf)> {
    let Some(python) = std::env::var("WEAVER_HF_PYTHON").ok().filter(|s| !s.is_empty()) else {
        eprintln!("SKIPPED {test}: set WEAVER_HF_PYTHON to a python with torch + transformers");
        return None;
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let script = std::env::var("WEAVER_HF_DECODE").map(PathBuf::from).unwrap_or_else(|_| root.join("../shared/tools/hf_decode.py"));
    assert!(script.is_file(), "{} not found", script.display());
    Some((python, script))
}

/// Greedy-decode `new_tokens` tokens of checkpoint `dir` after the prompt in `prompt_file` (a JSON list of
/// ids) with `prefill` = "chunked" or "stepwise"; returns the generated ids (hf_decode.py feeds back its own
/// argmax: a trace, not teacher forcing).
pub fn hf_decode(python: &str, script: &Path, dir: &Path, prompt_file: &Path, new_tokens: usize, prefill: &str) -> Vec<u32> {
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(dir)
        .arg("--prompt-file")
        .arg(prompt_file)
        .args(["--max-new-tokens", &new_tokens.to_string(), "--prefill", prefill])
        .output()
        .expect("run hf_decode.py");
    assert!(out.status.success(), "hf_decode.py failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.trim_start().starts_with('{')).expect("JSON line");
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    v["generated"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect()
}

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
