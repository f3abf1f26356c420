//! The exported acc8 checkpoint in transformers' `Qwen3_5ForCausalLM` (`../shared/tools/hf_decode.py`, or
//! `WEAVER_HF_DECODE`): the same trace as the reference evaluator, with chunked and with stepwise prefill.
//! Runs when `WEAVER_HF_PYTHON` names a python with torch + transformers (skipped otherwise, saying so).

mod common;

use isa_api::examples::{acc8, acc8_stress_program};
use isa_api::Reference;
use weaver::{export::save, host, weave, WeaveOptions};

#[test]
fn transformers_runs_the_woven_acc8_to_the_reference_trace() {
    let Some((python, script)) = common::hf_setup("transformers_runs_the_woven_acc8_to_the_reference_trace") else {
        return;
    };
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
        let theirs = common::hf_decode(&python, &script, &dir, &pf, want.len(), prefill);
        assert_eq!(theirs, want, "{prefill} prefill");
        eprintln!("transformers ({prefill} prefill): {} positions equal to the reference", theirs.len());
    }
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_file(&pf).unwrap();
}
