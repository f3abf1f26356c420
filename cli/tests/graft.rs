//! `loom graft` and `loom text-check` on small random bases: the grafted checkpoint's layout, the machine's
//! exact run on its route, the base's text bit for bit on the text route, and the refusals (a base of another
//! architecture, a partial base, a machine that does not fit, a destination that is not ours), each leaving
//! the base untouched and nothing written.

mod common;

use backends::config::{LayerType, Qwen35Config, RopeParameters};
use common::{loom, repo, scratch};
use std::path::Path;

/// A small base of the released Qwen3.5 vocabulary (248,320 ids, so the Qwen3.5 tokenizer's ids fit) whose
/// layer shape holds the acc8 machine.
fn small_base_config(tied: bool) -> Qwen35Config {
    Qwen35Config {
        vocab_size: 248_320,
        hidden_size: 256,
        intermediate_size: 1024,
        num_hidden_layers: 4,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        head_dim: 32,
        linear_key_head_dim: 64,
        linear_value_head_dim: 32,
        linear_num_key_heads: 4,
        linear_num_value_heads: 8,
        layer_types: vec![],
        tie_word_embeddings: tied,
        rope_parameters: RopeParameters { rope_theta: 10_000_000.0, mrope_section: Some(vec![2, 1, 1]), ..Default::default() },
        max_position_embeddings: 4096,
        ..Qwen35Config::default()
    }
    .normalized()
}

fn write_base(dir: &Path, tied: bool) {
    backends::random::save_random_checkpoint(dir, &small_base_config(tied), 7).unwrap();
}

/// Every file of `dir` with its bytes' hash, to show a directory was not modified.
fn fingerprint(dir: &Path) -> Vec<(String, u64, u64)> {
    let mut v: Vec<(String, u64, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = std::fs::read(e.path()).unwrap();
            let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100_0000_01b3));
            (e.file_name().to_string_lossy().to_string(), bytes.len() as u64, h)
        })
        .collect();
    v.sort();
    v
}

fn ck_vocab(dir: &Path) -> usize {
    backends::Checkpoint::open(dir).unwrap().config().vocab_size
}

fn run_ok(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{:?} failed:\n{}\n{}", cmd, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// The grafted checkpoint `g`'s machine replayed against its reference (`loom lockstep CONFIG --model g`) at every
/// position: no program disagrees.
fn lockstep_agrees(config: &Path, g: &Path) {
    let ls = run_ok(loom().args(["lockstep"]).arg(config).arg("--model").arg(g));
    let text = String::from_utf8_lossy(&ls.stdout);
    assert!(text.contains("0 programs disagreeing"), "{text}");
}

/// `loom text-check --json` of the grafted checkpoint `g` against its base `b` over 48 positions: its figures
/// (checked to cover the 48 positions).
fn text_check_48(b: &Path, g: &Path) -> serde_json::Value {
    let out = run_ok(loom().args(["text-check", "--json", "--positions", "48", "--base"]).arg(b).arg("--model").arg(g));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["positions"], 48, "{r}");
    r
}

#[test]
fn acc8_grafted_onto_tied_and_untied_bases() {
    let acc8 = repo().join("configs/acc8.toml");
    let want = run_ok(loom().args(["run"]).arg(&acc8));
    for tied in [true, false] {
        let d = scratch(&format!("graft-acc8-{tied}"));
        let (b, g) = (d.join("base"), d.join("grafted"));
        write_base(&b, tied);
        let before = fingerprint(&b);
        let out = run_ok(loom().args(["graft", "--json", "--base"]).arg(&b).arg("--machine").arg(&acc8).arg("--out").arg(&g));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(fingerprint(&b), before, "the base was modified");

        // Layout: the machine's layers in front, its tokens after the base's vocabulary.
        let gm: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(g.join("graft.json")).unwrap()).unwrap();
        let m = gm["machine_layers"][1].as_u64().unwrap() as usize;
        assert!(m > 0);
        assert_eq!(gm["base_layers"], serde_json::json!([m, m + 4]));
        assert_eq!(gm["base_vocab"], 248_320);
        // T trace tokens: inputs and outputs share ids with an untied lm_head, need two rows each with a tied one.
        let t = report["vocab_rows"].as_u64().unwrap() as usize / 2;
        assert!(t > 0);
        let ids = |k: &str| (gm[k][0].as_u64().unwrap() as usize, gm[k][1].as_u64().unwrap() as usize);
        assert_eq!(ids("machine_input_tokens"), (248_320, 248_320 + t));
        assert_eq!(ids("machine_output_tokens"), if tied { (248_320 + t, 248_320 + 2 * t) } else { (248_320, 248_320 + t) });
        assert_eq!(ck_vocab(&g), 248_320 + if tied { 2 * t } else { t });
        let ck = backends::Checkpoint::open(&g).unwrap();
        let base = backends::Checkpoint::open(&b).unwrap();
        assert_eq!(ck.config().num_hidden_layers, m + 4);
        assert_eq!(ck.config().tie_word_embeddings, tied);
        assert_eq!(&ck.config().layer_types[m..], &base.config().layer_types[..]);
        // The machine's layer pattern is the base's: every 4th layer full attention.
        for (i, lt) in ck.config().layer_types[..m].iter().enumerate() {
            assert_eq!(*lt == LayerType::FullAttention, (i + 1) % 4 == 0, "layer {i}");
        }
        // The base's layers and text rows, bit for bit.
        for (name, _) in base.config().expected_tensors() {
            let renamed = match name.strip_prefix("model.layers.") {
                Some(rest) => {
                    let (i, tail) = rest.split_once('.').unwrap();
                    format!("model.layers.{}.{tail}", i.parse::<usize>().unwrap() + m)
                }
                None => name.clone(),
            };
            let (a, bt) = (base.raw(&name).unwrap().1, ck.raw(&renamed).unwrap().1);
            if name == "model.embed_tokens.weight" || name == "lm_head.weight" {
                assert_eq!(&bt[..a.len()], a, "{name}: text rows");
            } else {
                assert_eq!(a, bt, "{name}");
            }
        }
        for f in ["config.json", "model.safetensors", "graft.json", "machine.json", "README.md"] {
            assert!(g.join(f).is_file(), "{f} missing");
        }

        // The machine on its route: the stand-alone machine's output and exit status, on two executors.
        for ex in ["incremental", "sparse"] {
            let got = loom().args(["run", "--executor", ex, "--model"]).arg(&g).output().unwrap();
            assert_eq!(got.status.code(), want.status.code(), "{ex}: {}", String::from_utf8_lossy(&got.stderr));
            assert_eq!(got.stdout, want.stdout, "{ex}");
        }
        // The machine's run replayed against its reference at every position.
        lockstep_agrees(&acc8, &g);

        // The base's text: bit-identical on the text route.
        let r = text_check_48(&b, &g);
        assert_eq!(r["bit_identical"], 48, "{r}");
        assert_eq!(r["max_abs_logit_diff"], 0.0, "{r}");
        assert_eq!(r["kl_max"], 0.0, "{r}");
        assert_eq!(r["argmax_agreement"], 1.0, "{r}");
        // A plain pass through every layer changes the text (the machine's layers are not closed on text).
        let plain = &r["plain"];
        assert_eq!(plain["positions"], 48, "{r}");
        assert!(plain["trace_token_mass_mean"].as_f64().unwrap() >= 0.0, "{r}");
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[test]
fn bad_bases_and_impossible_fits_are_named_and_nothing_is_written() {
    let d = scratch("graft-bad");
    let b = d.join("base");
    write_base(&b, true);
    let acc8 = repo().join("configs/acc8.toml");
    let graft = |base: &Path, machine: &Path, out: &Path| loom().args(["graft", "--base"]).arg(base).arg("--machine").arg(machine).arg("--out").arg(out).output().unwrap();
    let check_refused = |out: std::process::Output, needle: &str, dest: &Path| {
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(!out.status.success(), "expected a refusal naming {needle:?}");
        assert!(err.contains(needle), "expected {needle:?} in: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(!dest.exists() || std::fs::read_dir(dest).unwrap().next().is_none() || dest == b, "{} was written", dest.display());
    };

    // Another architecture.
    let llama = d.join("llama");
    std::fs::create_dir_all(&llama).unwrap();
    std::fs::write(llama.join("config.json"), r#"{"model_type": "llama", "hidden_size": 256}"#).unwrap();
    check_refused(graft(&llama, &acc8, &d.join("o1")), "model_type \"llama\"", &d.join("o1"));

    // A partial base: a shard named by the index is missing.
    let partial = d.join("partial");
    std::fs::create_dir_all(&partial).unwrap();
    std::fs::copy(b.join("config.json"), partial.join("config.json")).unwrap();
    std::fs::copy(b.join("model.safetensors"), partial.join("model-00001-of-00002.safetensors")).unwrap();
    std::fs::write(
        partial.join("model.safetensors.index.json"),
        r#"{"weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors", "model.norm.weight": "model-00002-of-00002.safetensors"}}"#,
    )
    .unwrap();
    check_refused(graft(&partial, &acc8, &d.join("o2")), "model-00002-of-00002.safetensors", &d.join("o2"));

    // A machine wider than the base.
    let before = fingerprint(&b);
    let rv = repo().join("configs/rv32im-64k.toml");
    check_refused(graft(&b, &rv, &d.join("o3")), "does not fit the layer shape of the base", &d.join("o3"));

    // Destinations: the base itself, a directory of other files.
    check_refused(graft(&b, &acc8, &b), "base directory", &b);
    let other = d.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let out = graft(&b, &acc8, &other);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a grafted checkpoint"));
    assert_eq!(std::fs::read_to_string(other.join("notes.txt")).unwrap(), "mine");
    assert_eq!(fingerprint(&b), before, "the base was modified");
    let _ = std::fs::remove_dir_all(&d);
}

/// RV32IM in Qwen3.5-4B's layer shape, as `loom graft` weaves it (gates sunk): the shape it takes, and its
/// traces equal to the circuit's reference and the interpreter's.
#[test]
fn rv32im_in_the_4b_shape_with_sunk_gates_is_exact() {
    let cfg = repo().join("configs/rv32im-qwen35-4b.toml");
    let out = run_ok(loom().args(["weave", "--plan"]).arg(&cfg));
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(plan.contains("19 layers (4 full attention), hidden 2560, intermediate 9216"), "{plan}");
    // Without sinking the same shape does not hold it.
    let d = scratch("rv32-4b-nosink");
    let nosink = d.join("nosink.toml");
    std::fs::write(&nosink, std::fs::read_to_string(&cfg).unwrap().replace("sink = true", "sink = false")).unwrap();
    let out = loom().args(["weave", "--plan"]).arg(&nosink).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("hidden_size needs 2573"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run_ok(loom().args(["lockstep"]).arg(&cfg).args(["--examples", "hello,isa_selftest,muldiv"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("0 programs disagreeing"), "{text}");
    let _ = std::fs::remove_dir_all(&d);
}

/// acc8 onto a base narrower than it needs (hidden 128, one key / two value DeltaNet heads): refused as it
/// is, grafted with `--widen` onto a wider copy of the base's layer shape. The base's weights sit in the first
/// rows and columns of every widened tensor (its DeltaNet heads first in each q/k/v section, the residual's
/// writers and norms rescaled), the rest is zero; the machine runs exactly on its route; the text equals the
/// base's to float rounding.
#[test]
fn acc8_widened_onto_a_narrow_base() {
    let d = scratch("graft-widen");
    let (b, g) = (d.join("base"), d.join("grafted"));
    let narrow = Qwen35Config {
        hidden_size: 128,
        intermediate_size: 256,
        linear_num_key_heads: 1,
        linear_num_value_heads: 2,
        ..small_base_config(true)
    }
    .normalized();
    backends::random::save_random_checkpoint(&b, &narrow, 11).unwrap();
    let acc8 = repo().join("configs/acc8.toml");
    let out = loom().args(["graft", "--base"]).arg(&b).arg("--machine").arg(&acc8).arg("--out").arg(&g).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("does not fit the layer shape") && err.contains("--widen"), "{err}");
    assert!(!g.exists(), "a refused graft wrote {}", g.display());

    let before = fingerprint(&b);
    let out = run_ok(loom().args(["graft", "--widen", "--json", "--base"]).arg(&b).arg("--machine").arg(&acc8).arg("--out").arg(&g));
    assert_eq!(fingerprint(&b), before, "the base was modified");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = &report["widened"];
    let (hw, iw, kw, vw) = (
        w["hidden_size"].as_u64().unwrap() as usize,
        w["intermediate_size"].as_u64().unwrap() as usize,
        w["linear_num_key_heads"].as_u64().unwrap() as usize,
        w["linear_num_value_heads"].as_u64().unwrap() as usize,
    );
    assert!(hw > 128 && hw % 64 == 0 && iw >= 256 && iw % 64 == 0, "{report}");
    assert!(kw > 1 && vw == 2 * kw, "the base's key/value ratio is kept: {report}");
    let gm: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(g.join("graft.json")).unwrap()).unwrap();
    assert_eq!(gm["widened"], *w);
    let m = gm["machine_layers"][1].as_u64().unwrap() as usize;

    // The base's tensors in the widened ones: values at their places, zeros elsewhere; the norms rescaled.
    let base = backends::Checkpoint::open(&b).unwrap();
    let ck = backends::Checkpoint::open(&g).unwrap();
    let c = ck.config();
    assert_eq!((c.hidden_size, c.intermediate_size, c.linear_num_key_heads, c.linear_num_value_heads), (hw, iw, kw, vw));
    let qk = 64; // one key head of d_k 64 in the base
    for (name, shape) in base.config().expected_tensors() {
        let renamed = match name.strip_prefix("model.layers.") {
            Some(rest) => {
                let (i, tail) = rest.split_once('.').unwrap();
                format!("model.layers.{}.{tail}", i.parse::<usize>().unwrap() + m)
            }
            None => name.clone(),
        };
        let (bt, gt) = (base.tensor(&name).unwrap(), ck.tensor(&renamed).unwrap());
        let (rows, cols) = (shape[0], shape[1..].iter().product::<usize>());
        let gcols = gt.shape[1..].iter().product::<usize>();
        let is_norm = name == "model.norm.weight" || name.ends_with("layernorm.weight");
        let sectioned = name.ends_with("in_proj_qkv.weight") || name.ends_with("conv1d.weight");
        // The text residual is carried scaled by alpha = sqrt(hw / 128): the embedding and the projections
        // that write the residual are scaled, the norm gains divided (the final one twice: the lm_head is tied).
        let scaled = name == "model.embed_tokens.weight" || ["out_proj.weight", "o_proj.weight", "down_proj.weight"].iter().any(|s| name.ends_with(s));
        let mut placed = vec![false; gt.data.len()];
        for i in 0..rows {
            let j = if !sectioned || i < qk { i } else if i < 2 * qk { i - qk + kw * 64 } else { i - 2 * qk + 2 * kw * 64 };
            for k in 0..cols {
                let (x, y) = (bt.data[i * cols + k], gt.data[j * gcols + k]);
                if is_norm {
                    let alpha2 = hw as f64 / 128.0;
                    let want = (1.0 + x as f64) / if name == "model.norm.weight" { alpha2 } else { alpha2.sqrt() } - 1.0;
                    assert!((y as f64 - want).abs() < 1e-6, "{name}[{i}]: {y} vs {want}");
                } else if scaled {
                    let want = x as f64 * (hw as f64 / 128.0).sqrt();
                    assert!((y as f64 - want).abs() <= want.abs() * 1e-7, "{name}[{i}, {k}]: {y} vs {want}");
                } else {
                    assert_eq!(x.to_bits(), y.to_bits(), "{name}[{i}, {k}] -> {renamed}[{j}, {k}]");
                }
                placed[j * gcols + k] = true;
            }
        }
        if name == "model.embed_tokens.weight" {
            continue; // the machine's rows follow the text rows
        }
        if !is_norm {
            assert!(gt.data.iter().zip(&placed).all(|(y, p)| *p || *y == 0.0), "{renamed}: nonzero outside the base's values");
        }
    }

    // The machine on its route, exactly.
    let want = run_ok(loom().args(["run"]).arg(&acc8));
    let got = run_ok(loom().args(["run", "--model"]).arg(&g));
    assert_eq!(got.stdout, want.stdout);
    lockstep_agrees(&acc8, &g);

    // The text: the base's greedy tokens, logits equal to float rounding.
    let r = text_check_48(&b, &g);
    assert_eq!(r["argmax_agreement"], 1.0, "{r}");
    assert!(r["max_abs_logit_diff"].as_f64().unwrap() < 1e-3, "{r}");
    assert!(r["kl_max"].as_f64().unwrap() < 1e-9, "{r}");
    let _ = std::fs::remove_dir_all(&d);
}
