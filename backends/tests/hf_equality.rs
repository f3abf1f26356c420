//! Greedy tokens equal to transformers' on a checkpoint we saved, with chunked and with stepwise prefill.
//! Runs when `WEAVER_HF_PYTHON` names a python with torch + transformers (skipped otherwise, saying so);
//! uses `../shared/tools/hf_decode.py` (or `WEAVER_HF_DECODE`).
#![cfg(feature = "burn")]

mod common;

use backends::model::{BackendKind, Qwen35Model};
use backends::random::{random_weights, Preset};
use backends::{save_checkpoint, Checkpoint};
use common::*;

#[test]
fn greedy_tokens_equal_transformers() {
    let Some(python) = std::env::var("WEAVER_HF_PYTHON").ok().filter(|s| !s.is_empty()) else {
        eprintln!("SKIPPED greedy_tokens_equal_transformers: set WEAVER_HF_PYTHON to a python with torch + transformers");
        return;
    };
    let script = std::env::var("WEAVER_HF_DECODE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("../shared/tools/hf_decode.py"));
    assert!(script.is_file(), "{} not found", script.display());

    for (preset, layers, tied, seed) in [(Preset::Tiny, None, false, 5u64), (Preset::Tiny, Some(5), true, 6)] {
        let mut cfg = preset.config(layers);
        cfg.tie_word_embeddings = tied;
        let dir = scratch(&format!("hf-{seed}"));
        save_checkpoint(&dir, &cfg, &random_weights(&cfg, seed)).unwrap();
        let m = Qwen35Model::load(&Checkpoint::open(&dir).unwrap(), &BackendKind::Ndarray.device().unwrap()).unwrap();
        let prompt = [7u32, 3, 99, 12, 1, 64, 5];
        for prefill in ["chunked", "stepwise"] {
            let out = std::process::Command::new(&python)
                .arg(&script)
                .arg(&dir)
                .args(["--prompt-ids", "7,3,99,12,1,64,5", "--max-new-tokens", "12", "--prefill", prefill])
                .output()
                .expect("run hf_decode.py");
            assert!(out.status.success(), "hf_decode.py failed: {}", String::from_utf8_lossy(&out.stderr));
            let stdout = String::from_utf8_lossy(&out.stdout);
            let line = stdout.lines().rev().find(|l| l.trim_start().starts_with('{')).expect("JSON line");
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let theirs: Vec<u32> = v["generated"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect();
            let (ours, _) = m.generate(&prompt, 12, prefill == "stepwise").unwrap();
            eprintln!("seed {seed} {prefill}: ours {ours:?} transformers {theirs:?}");
            assert_eq!(ours, theirs, "seed {seed}, {prefill} prefill");
        }
    }
}
