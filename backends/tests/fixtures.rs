//! Agreement with transformers on the shared fixtures: every hidden state and the logits of a whole-prompt
//! prefill, and the logits of one-token-at-a-time decoding, within a relative error of 1e-4, on ndarray and
//! flex (and wgpu with `WEAVER_WGPU=1`).
#![cfg(feature = "burn")]

mod common;

use backends::model::{BackendKind, Logits, Qwen35Model};
use backends::Checkpoint;
use common::*;

const TOL: f64 = 1e-4;

fn check_fixture(dir: &std::path::Path, backend: BackendKind) {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let reference = read_safetensors(&dir.join("reference.safetensors"));
    let ids: Vec<u32> = reference["input_ids"].1.iter().map(|v| *v as u32).collect();
    let t = ids.len();
    let ck = Checkpoint::open(dir).unwrap_or_else(|e| panic!("{e}"));
    let device = backend.device().unwrap();
    let model = Qwen35Model::load(&ck, &device).unwrap();
    let vocab = model.config().vocab_size;

    // Prefill: the whole prompt in one call.
    let mut state = model.new_state(1);
    let out = model.forward(&[ids.clone()], &mut state, Logits::All, true).unwrap();
    let n_hidden = model.config().num_hidden_layers + 1;
    assert_eq!(out.hidden.len(), n_hidden);
    for (i, h) in out.hidden.into_iter().enumerate() {
        let ours = h.into_data().try_to_vec::<f32>().unwrap();
        let (shape, want) = &reference[&format!("hidden_{i}")];
        assert_eq!(ours.len(), want.len(), "{name} hidden_{i} shape {shape:?}");
        let e = rel_err(&ours, want);
        eprintln!("{name} [{}] prefill hidden_{i}: rel err {e:.3e}", backend.name());
        assert!(e <= TOL, "{name} [{}] hidden_{i}: relative error {e:.3e} > {TOL}", backend.name());
    }
    let logits = out.logits.into_data().try_to_vec::<f32>().unwrap();
    let e = rel_err(&logits, &reference["logits"].1);
    eprintln!("{name} [{}] prefill logits: rel err {e:.3e}", backend.name());
    assert!(e <= TOL, "{name} [{}] prefill logits: relative error {e:.3e} > {TOL}", backend.name());

    // Decode: one token at a time with the caches; each position's logits against the reference's.
    let want = &reference["decode_logits"].1;
    let mut state = model.new_state(1);
    let mut worst = 0f64;
    for (p, &tok) in ids.iter().enumerate() {
        let out = model.forward(&[vec![tok]], &mut state, Logits::Last, false).unwrap();
        let row = out.logits.into_data().try_to_vec::<f32>().unwrap();
        let e = rel_err(&row, &want[p * vocab..(p + 1) * vocab]);
        worst = worst.max(e);
        assert!(e <= TOL, "{name} [{}] decode position {p}: relative error {e:.3e} > {TOL}", backend.name());
    }
    assert_eq!(state.position, t);
    eprintln!("{name} [{}] decode: worst per-position rel err {worst:.3e}", backend.name());
}

#[test]
fn fixtures_match_transformers_on_every_backend() {
    let dirs = fixtures("fixtures_match_transformers_on_every_backend");
    for backend in backends_under_test() {
        for dir in &dirs {
            check_fixture(dir, backend);
        }
    }
}
