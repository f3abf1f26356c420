//! The exported acc8 checkpoint in transformers' `Qwen3_5ForCausalLM` (`../shared/tools/hf_decode.py`, or
//! `WEAVER_HF_DECODE`): the same trace as the reference evaluator, with chunked and with stepwise prefill.
//! Runs when `WEAVER_HF_PYTHON` names a python with torch + transformers (skipped otherwise, saying so).

mod common;

use isa_api::examples::{acc8, acc8_stress_program};
use isa_api::Reference;
use isa_api::host;
use weaver::{export::save, weave, WeaveOptions};

/// The woven acc8 (with the attention layer transformers needs) saved to a fresh temporary directory named by
/// `tag`; the prompt that loads its stress program, and the reference evaluator's trace of `steps` steps.
fn saved_acc8_with_reference(tag: &str, steps: usize) -> (std::path::PathBuf, Vec<u32>, Vec<u32>) {
    let w = weave(&acc8(), &WeaveOptions { fit: None, attention_layer: true }).unwrap();
    let dir = std::env::temp_dir().join(format!("loom-weaver-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    save(&w, &dir).unwrap();
    let prog: Vec<u64> = acc8_stress_program(1).iter().map(|b| *b as u64).collect();
    let prompt = host::program_prompt(&w.protocol, 0, 0, &prog);
    let mut r = Reference::new(acc8());
    r.load(0, 0, &prog);
    (dir, prompt, r.run(steps))
}

#[test]
fn transformers_runs_the_woven_acc8_to_the_reference_trace() {
    let Some((python, script)) = common::hf_setup("transformers_runs_the_woven_acc8_to_the_reference_trace") else {
        return;
    };
    // 20 steps: transformers decodes these DeltaNet layers at a few tokens per second on 2 cores.
    let (dir, prompt, want) = saved_acc8_with_reference("hf", 20);
    let pf = dir.with_extension("prompt.json");
    std::fs::write(&pf, serde_json::to_string(&prompt).unwrap()).unwrap();
    for prefill in ["chunked", "stepwise"] {
        let theirs = common::hf_decode(&python, &script, &dir, common::HfPrompt::File(&pf), want.len(), prefill);
        assert_eq!(theirs, want, "{prefill} prefill");
        eprintln!("transformers ({prefill} prefill): {} positions equal to the reference", theirs.len());
    }
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_file(&pf).unwrap();
}

/// `backends/tools/hf_check_trace.py`, the check for checkpoints larger than memory (SIMT4's): transformers on
/// the memory-mapped weights accepts the reference trace of the woven acc8 (teacher-forced, then the tail decoded
/// greedily), counting every position, and names the position of a token changed in the trace.
#[test]
fn transformers_checks_a_recorded_trace_on_memory_mapped_weights() {
    let Some((python, _)) = common::hf_setup("transformers_checks_a_recorded_trace_on_memory_mapped_weights") else {
        return;
    };
    let (dir, prompt, want) = saved_acc8_with_reference("hfcheck", 60);
    let tf = dir.with_extension("trace.json");
    let write = |tokens: &[u32]| {
        let t = serde_json::json!({"prompt": prompt, "generated": tokens, "injected": []});
        std::fs::write(&tf, t.to_string()).unwrap();
    };
    write(&want);
    let (status, v) = common::hf_check_trace(&python, &dir, &tf, 3);
    assert_eq!(status, 0, "{v}");
    assert_eq!(v["positions_compared"], want.len(), "{v}");
    assert_eq!((v["mismatches"].as_u64(), v["decoded_greedily"].as_u64()), (Some(0), Some(3)), "{v}");
    eprintln!("hf_check_trace.py: {} positions equal to the reference ({} decoded greedily)", want.len(), 3);
    // A wrong token in the middle (teacher-forced) and one in the decoded tail are each caught, at their index.
    let flip = |t: u32| if t == 0 { 1 } else { 0 };
    let mid = want.len() / 2;
    let mut bad = want.clone();
    bad[mid] = flip(bad[mid]);
    write(&bad);
    let (status, v) = common::hf_check_trace(&python, &dir, &tf, 3);
    assert_eq!(status, 1, "{v}");
    assert_eq!(v["first_mismatches"][0]["index"], mid, "{v}");
    assert_eq!(v["first_mismatches"][0]["how"], "teacher-forced", "{v}");
    let mut bad = want.clone();
    let last = bad.len() - 1;
    bad[last] = flip(bad[last]);
    write(&bad);
    let (status, v) = common::hf_check_trace(&python, &dir, &tf, 3);
    assert_eq!((status, v["mismatches"].as_u64()), (1, Some(1)), "{v}");
    assert_eq!((&v["first_mismatches"][0]["index"], &v["first_mismatches"][0]["how"]), (&serde_json::json!(last), &serde_json::json!("decoded")), "{v}");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_file(&tf).unwrap();
}

/// acc8 woven into a Qwen3.5-shaped geometry: heads of d_k = 128 rows (not a power of 4: the norm anchor of
/// `numerics::read_scales` keeps reads exact; acc8's 256-byte memory is two block heads), grouped
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
        let theirs = common::hf_decode(&python, &script, &dir, common::HfPrompt::File(&pf), n, prefill);
        assert_eq!(theirs, want[..n], "{prefill} prefill");
        eprintln!("transformers ({prefill} prefill), d_k 128: {} positions equal to the reference", theirs.len());
    }
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_file(&pf).unwrap();
}
