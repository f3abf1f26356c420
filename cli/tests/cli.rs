//! The `loom` binary: `generate` prints JSON and writes logits; bad input gives a clear error and a non-zero
//! exit code, never a panic.

use std::path::Path;

mod common;
use common::*;

#[test]
fn generate_on_the_bundled_model() {
    let out_dir = scratch("generated");
    let logits = out_dir.join("logits.safetensors");
    let out = loom()
        .args(["generate", "--model"])
        .arg(repo().join("models/tiny-random"))
        .args(["--prompt-ids", "1,2,3", "--max-new-tokens", "5", "--logits-out"])
        .arg(&logits)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let generated = v["generated"].as_array().unwrap();
    assert_eq!(generated.len(), 5);
    let bytes = std::fs::read(&logits).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let t = st.tensor("logits").unwrap();
    assert_eq!(t.shape(), &[5, 128]);
    // The logged logits pick the printed tokens.
    let row0: Vec<f32> = t.data()[..128 * 4].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let am = row0.iter().enumerate().fold(0, |b, (i, x)| if *x > row0[b] { i } else { b });
    assert_eq!(generated[0].as_u64().unwrap() as usize, am);
}

fn fails_with(args: &[&str], model: &Path, needles: &[&str]) {
    let out = loom().args(["generate", "--model"]).arg(model).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "should fail: {err}");
    assert_eq!(out.status.code(), Some(1), "exit code (a panic gives 101): {err}");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}: {err}");
    }
}

#[test]
fn bad_inputs_give_clear_errors() {
    let base = ["--prompt-ids", "1,2", "--max-new-tokens", "2"];
    fails_with(&base, Path::new("/no/such/model"), &["/no/such/model"]);

    let dir = scratch("bad");
    std::fs::copy(repo().join("models/tiny-random/model.safetensors"), dir.join("model.safetensors")).unwrap();
    std::fs::write(dir.join("config.json"), "{ not json").unwrap();
    fails_with(&base, &dir, &["config.json", "malformed"]);

    // Valid config, but the weights are of another shape.
    let cfg = std::fs::read_to_string(repo().join("models/tiny-random/config.json")).unwrap();
    std::fs::write(dir.join("config.json"), cfg.replace("\"intermediate_size\": 64", "\"intermediate_size\": 65")).unwrap();
    fails_with(&base, &dir, &["model.safetensors", "model.layers.0.mlp.gate_proj.weight", "[65, 32]"]);

    let good = repo().join("models/tiny-random");
    fails_with(&["--prompt-ids", "1,x", "--max-new-tokens", "2"], &good, &["--prompt-ids", "\"x\""]);
    fails_with(&["--prompt-ids", "1,500", "--max-new-tokens", "2"], &good, &["500", "vocabulary"]);
    fails_with(&["--prompt-ids", "1", "--backend", "cuda"], &good, &["unknown backend"]);
}
