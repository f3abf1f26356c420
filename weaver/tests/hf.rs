//! The exported acc8 checkpoint in transformers' `Qwen3_5ForCausalLM` (`../shared/tools/hf_decode.py`, or
//! `WEAVER_HF_DECODE`): the same trace as the reference evaluator, with chunked and with stepwise prefill.
//! Runs when `WEAVER_HF_PYTHON` names a python with torch + transformers (skipped otherwise, saying so).

use isa_api::examples::{acc8, acc8_stress_program};
use isa_api::Reference;
use std::path::PathBuf;
use weaver::{export::save, host, weave, WeaveOptions};

#[test]
fn transformers_runs_the_woven_acc8_to_the_reference_trace() {
    let Some(python) = std::env::var("WEAVER_HF_PYTHON").ok().filter(|s| !s.is_empty()) else {
        eprintln!("SKIPPED transformers_runs_the_woven_acc8_to_the_reference_trace: set WEAVER_HF_PYTHON to a python with torch + transformers");
        return;
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let script = std::env::var("WEAVER_HF_DECODE").map(PathBuf::from).unwrap_or_else(|_| root.join("../shared/tools/hf_decode.py"));
    assert!(script.is_file(), "{} not found", script.display());
    let w = weave(&acc8(), &WeaveOptions { fit: None, attention_layer: true }).unwrap();
    let dir = std::env::temp_dir().join(format!("loom-weaver-hf-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    save(&w, &dir).unwrap();
    let prog: Vec<u64> = acc8_stress_program(1).iter().map(|b| *b as u64).collect();
    let prompt = host::program_prompt(&w.protocol, 0, 0, &prog);
    let pf = dir.with_extension("prompt.json");
    std::fs::write(&pf, serde_json::to_string(&prompt).unwrap()).unwrap();
    let steps = 20; // transformers decodes these DeltaNet layers at a few tokens per second on 2 cores
    let mut r = Reference::new(acc8());
    r.load(0, 0, &prog);
    let want = r.run(steps);
    for prefill in ["chunked", "stepwise"] {
        let out = std::process::Command::new(&python)
            .arg(&script)
            .arg(&dir)
            .arg("--prompt-file")
            .arg(&pf)
            .args(["--max-new-tokens", &want.len().to_string(), "--prefill", prefill])
            .output()
            .expect("run hf_decode.py");
        assert!(out.status.success(), "hf_decode.py failed: {}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().rev().find(|l| l.trim_start().starts_with('{')).expect("JSON line");
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let theirs: Vec<u32> = v["generated"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect();
        // hf_decode.py feeds back its own argmax: a trace, not teacher forcing.
        assert_eq!(theirs, want, "{prefill} prefill");
        eprintln!("transformers ({prefill} prefill): {} positions equal to the reference", theirs.len());
    }
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_file(&pf).unwrap();
}
