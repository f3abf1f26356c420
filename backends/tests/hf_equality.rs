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
    let Some((python, script)) = test_kit::hf_setup("greedy_tokens_equal_transformers") else { return };

    for (preset, layers, tied, seed) in [(Preset::Tiny, None, false, 5u64), (Preset::Tiny, Some(5), true, 6)] {
        let mut cfg = preset.config(layers);
        cfg.tie_word_embeddings = tied;
        let dir = scratch(&format!("hf-{seed}"));
        save_checkpoint(&dir, &cfg, &random_weights(&cfg, seed)).unwrap();
        let m = Qwen35Model::load(&Checkpoint::open(&dir).unwrap(), &BackendKind::Ndarray.device().unwrap()).unwrap();
        let prompt = [7u32, 3, 99, 12, 1, 64, 5];
        for prefill in ["chunked", "stepwise"] {
            let theirs = test_kit::hf_decode(&python, &script, &dir, test_kit::HfPrompt::Ids(&prompt), 12, prefill);
            let (ours, _) = m.generate(&prompt, 12, prefill == "stepwise").unwrap();
            eprintln!("seed {seed} {prefill}: ours {ours:?} transformers {theirs:?}");
            assert_eq!(ours, theirs, "seed {seed}, {prefill} prefill");
        }
    }
}
