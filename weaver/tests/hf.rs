//! The exported acc8 checkpoint in transformers' `Qwen3_5ForCausalLM` (`../shared/tools/hf_decode.py`, or
//! `WEAVER_HF_DECODE`): the same trace as the reference evaluator, with chunked and with stepwise prefill.
//! Runs when `WEAVER_HF_PYTHON` names a python with torch + transformers (skipped otherwise, saying so).

mod common;

use isa_api::examples::{acc8, acc8_stress_program};
use isa_api::Reference;
use isa_api::host;
use weaver::{export::save, weave, WeaveOptions};

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

/// acc8 woven into a Qwen3.5-shaped geometry: heads of d_k = 128 rows (not a power of 4: the value scale
/// 362.0387 of `numerics::value_scale` keeps reads exact; acc8's 256-byte memory is two block heads), grouped
/// keys (2 value heads per key head), every 4th layer full attention. Our sparse and incremental executors and
/// transformers (chunked and stepwise prefill) all give the reference trace.
#[test]
fn transformers_runs_acc8_in_a_qwen35_shaped_geometry() {
    let m = weave(&acc8(), &WeaveOptions::default()).unwrap().allocation.geometry;
    let fit = weaver::Geometry { layers: 0, key_heads: 4, value_heads: 8, dk: 128, dv: 128, attention_interval: 4, ..m };
    let w = weave(&acc8(), &WeaveOptions { fit: Some(fit.into()), attention_layer: false }).unwrap();
    assert_eq!((w.config.linear_key_head_dim, w.config.linear_num_value_heads), (128, 8));
    assert!(w.config.layer_types.iter().any(|t| *t == backends::LayerType::FullAttention));
    let prog: Vec<u64> = acc8_stress_program(1).iter().map(|b| *b as u64).collect();
    let prompt = host::program_prompt(&w.protocol, 0, 0, &prog);
    let steps = 400;
    let mut r = Reference::new(acc8());
    r.load(0, 0, &prog);
    let want = r.run(steps);
    let model = backends::sparse::SparseModel::new(&w.config, &w.weights).unwrap();
    let mut st = model.new_state();
    let ours = host::run(&w.protocol, &prompt, steps, |t| model.step_argmax(&mut st, t)).unwrap().trace.generated;
    assert_eq!(ours, want, "sparse executor");
    eprintln!("sparse executor, d_k 128: {} positions equal to the reference", ours.len());
    let inc = backends::incremental::IncrementalModel::new(&w.config, &w.weights).unwrap();
    let mut ist = inc.new_state();
    let ours = host::run(&w.protocol, &prompt, steps, |t| inc.step_argmax(&mut ist, t)).unwrap().trace.generated;
    assert_eq!(ours, want, "incremental executor");
    let c = ist.counters();
    assert!(c.incremental_products > 10 * c.full_products, "{c:?}");
    eprintln!("incremental executor, d_k 128: {} positions equal to the reference; {c:?}", ours.len());
    let Some((python, script)) = common::hf_setup("transformers_runs_acc8_in_a_qwen35_shaped_geometry") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("loom-weaver-hf128-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    save(&w, &dir).unwrap();
    let pf = dir.with_extension("prompt.json");
    std::fs::write(&pf, serde_json::to_string(&prompt).unwrap()).unwrap();
    let n = want.len().min(120);
    for prefill in ["chunked", "stepwise"] {
        let theirs = common::hf_decode(&python, &script, &dir, &pf, n, prefill);
        assert_eq!(theirs, want[..n], "{prefill} prefill");
        eprintln!("transformers ({prefill} prefill), d_k 128: {} positions equal to the reference", theirs.len());
    }
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_file(&pf).unwrap();
}
