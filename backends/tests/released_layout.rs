//! The released layout of `random-model` (`save_random_released`): a Hugging Face download's files, read back by
//! `Checkpoint::open` as the text layout's model rounded to bf16, bit for bit; the shard index; the refusal to
//! write into a directory holding other files; the released presets' parameter counts.

mod common;

use backends::checkpoint::{plan_shards, write_sharded, CheckpointError, TensorBytes};
use backends::random::{
    random_tensor, released_name, released_specs, save_random_checkpoint, save_random_released, Preset,
};
use backends::{Checkpoint, Qwen35Config};
use common::scratch;
use safetensors::Dtype;
use std::collections::{BTreeMap, BTreeSet};

fn bf16_bits(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| half::bf16::from_f32(*x).to_bits().to_le_bytes()).collect()
}

fn read_json(p: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

/// Write `cfg` in both layouts, open both, and check the released one is the text one rounded to bf16.
fn check_both_layouts(name: &str, cfg: &Qwen35Config, seed: u64, shard_bytes: usize) -> std::path::PathBuf {
    let rel = scratch(&format!("released-{name}"));
    let txt = scratch(&format!("text-{name}"));
    let shards = save_random_released(&rel, cfg, seed, shard_bytes).unwrap();
    save_random_checkpoint(&txt, cfg, seed).unwrap();
    let r = Checkpoint::open(&rel).unwrap();
    let t = Checkpoint::open(&txt).unwrap();
    assert_eq!(r.config(), cfg, "text_config reads back as the config");

    // Exactly the text tensors are seen: model.visual.* and mtp.* are ignored, no lm_head when tied.
    let expected: BTreeSet<String> = cfg.expected_tensors().into_iter().map(|(n, _)| n).collect();
    let seen: BTreeSet<String> = r.names().map(str::to_string).collect();
    assert_eq!(seen, expected);
    assert_eq!(seen.contains("lm_head.weight"), !cfg.tie_word_embeddings);

    // Every text tensor: bf16 storage equal, bit for bit, to the text layout's f32 rounded to bf16, and to
    // random_tensor of the canonical name.
    for (n, shape) in cfg.expected_tensors() {
        let (dtype, raw) = r.raw(&n).unwrap();
        assert_eq!(dtype, Dtype::BF16, "{n}");
        let text = t.tensor(&n).unwrap();
        assert_eq!(text.shape, shape);
        assert!(raw == bf16_bits(&text.data).as_slice(), "{n}: released != text layout rounded to bf16");
        assert!(raw == bf16_bits(&random_tensor(&n, &shape, seed)).as_slice(), "{n}");
    }

    // The index: each stored tensor listed once, in the shard that holds it; total_size is the data bytes.
    let index = read_json(&rel.join("model.safetensors.index.json"));
    let map = index["weight_map"].as_object().unwrap();
    let specs = released_specs(cfg);
    assert_eq!(map.len(), specs.len());
    let mut in_files: BTreeMap<String, String> = BTreeMap::new();
    let mut total = 0usize;
    for (i, p) in shards.iter().enumerate() {
        let file = p.file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(file, format!("model-{:05}-of-{:05}.safetensors", i + 1, shards.len()));
        let bytes = std::fs::read(p).unwrap();
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        for (tn, view) in st.tensors() {
            assert!(in_files.insert(tn.clone(), file.clone()).is_none(), "{tn} in two shards");
            total += view.data().len();
        }
    }
    for (n, s, _) in &specs {
        assert_eq!(map.get(n).and_then(|v| v.as_str()), in_files.get(n).map(String::as_str), "{n}");
        assert!(in_files.contains_key(n), "{n} is in no shard");
        let _ = s;
    }
    assert_eq!(in_files.len(), specs.len());
    assert_eq!(index["metadata"]["total_size"].as_u64(), Some(total as u64));
    assert!(map.keys().any(|k| k.starts_with("model.visual.")) && map.keys().any(|k| k.starts_with("mtp.")));
    assert!(map.keys().all(|k| !k.starts_with("model.layers.") && k != "model.embed_tokens.weight"));
    assert!(map.contains_key(&released_name("model.embed_tokens.weight")));

    // The configs.
    let cj = read_json(&rel.join("config.json"));
    assert_eq!(cj["architectures"][0], "Qwen3_5ForConditionalGeneration");
    assert_eq!(cj["model_type"], "qwen3_5");
    assert_eq!(cj["text_config"]["model_type"], "qwen3_5_text");
    assert_eq!(cj["tie_word_embeddings"], cfg.tie_word_embeddings);
    assert_eq!(cj["text_config"]["tie_word_embeddings"], cfg.tie_word_embeddings);
    assert!(cj["vision_config"].is_object());
    let gj = read_json(&rel.join("generation_config.json"));
    assert_eq!(gj["eos_token_id"], serde_json::json!([248046, 248044]));
    let _ = std::fs::remove_dir_all(&txt);
    rel
}

#[test]
fn released_tiny_is_the_text_model_in_bf16() {
    let cfg = Preset::Tiny.config(None);
    assert!(!cfg.tie_word_embeddings);
    // A small shard limit, to get several shards.
    let dir = check_both_layouts("tiny", &cfg, 3, 20_000);
    let n = std::fs::read_dir(&dir).unwrap().filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("model-")).count();
    assert!(n > 2, "expected several shards, got {n}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn released_tiny_tied_has_no_lm_head() {
    let mut cfg = Preset::Tiny.config(Some(5));
    cfg.tie_word_embeddings = true;
    let dir = check_both_layouts("tiny-tied", &cfg, 4, 1 << 30);
    let index = read_json(&dir.join("model.safetensors.index.json"));
    assert!(index["weight_map"].get("lm_head.weight").is_none());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 4, "one shard, index, config, generation config");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rewrite_replaces_our_files_and_refuses_foreign_ones() {
    let cfg = Preset::Tiny.config(None);
    let dir = scratch("released-rewrite");
    // Over a text-layout checkpoint: its model.safetensors (which would shadow the index) goes.
    save_random_checkpoint(&dir, &cfg, 1).unwrap();
    save_random_released(&dir, &cfg, 1, 20_000).unwrap();
    assert!(!dir.join("model.safetensors").exists());
    let many = save_random_released(&dir, &cfg, 1, 20_000).unwrap().len();
    // Fewer shards: the old ones go.
    let few = save_random_released(&dir, &cfg, 1, 1 << 30).unwrap();
    assert!(many > 1 && few.len() == 1);
    let shards: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("model-"))
        .collect();
    assert_eq!(shards, vec!["model-00001-of-00001.safetensors".to_string()]);
    // Tokenizer files count as ours.
    std::fs::write(dir.join("tokenizer.json"), "{}").unwrap();
    std::fs::write(dir.join("tokenizer_config.json"), "{}").unwrap();
    save_random_released(&dir, &cfg, 1, 1 << 30).unwrap();
    Checkpoint::open(&dir).unwrap();
    // Anything else: refused, nothing touched.
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let before: BTreeSet<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string()).collect();
    let e = save_random_released(&dir, &cfg, 2, 20_000).unwrap_err();
    assert!(matches!(e, CheckpointError::Refuse { .. }), "{e}");
    assert!(e.to_string().contains("notes.txt"), "{e}");
    let after: BTreeSet<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string()).collect();
    assert_eq!(before, after);
    assert_eq!(std::fs::read_to_string(dir.join("notes.txt")).unwrap(), "mine");
    // A subdirectory is not ours either.
    std::fs::remove_file(dir.join("notes.txt")).unwrap();
    std::fs::create_dir(dir.join("model-sub.safetensors")).unwrap();
    assert!(matches!(save_random_released(&dir, &cfg, 2, 20_000), Err(CheckpointError::Refuse { .. })));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shard_plan_and_writer_edge_cases() {
    let s = |n: &str, len: usize| (n.to_string(), vec![len], Dtype::BF16);
    // 2-byte values: a 100-byte limit holds 50 values; an oversized tensor gets a shard of its own.
    let specs = vec![s("a", 30), s("b", 20), s("c", 1), s("d", 80), s("e", 10)];
    assert_eq!(plan_shards(&specs, 100).unwrap(), vec![0..2, 2..3, 3..4, 4..5]);
    assert_eq!(plan_shards(&specs, 1 << 20).unwrap(), vec![0..5]);
    let dir = scratch("sharded-writer");
    let paths = write_sharded(&dir, &specs, 100, |_, shape| Ok(TensorBytes::F32(vec![1.5; shape[0]].into()))).unwrap();
    assert_eq!(paths.len(), 4);
    let dup = vec![s("a", 1), s("a", 1)];
    assert!(write_sharded(&dir, &dup, 100, |_, _| Ok(TensorBytes::F32(vec![0.0].into()))).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn released_presets_have_the_published_sizes() {
    // Text parameters (embedding, layers, final norm, lm_head unless tied), exact for these configs.
    for (name, tied, params) in [
        ("qwen3.5-0.8b", true, 752_393_024usize),
        ("qwen3.5-2b", true, 1_881_825_088),
        ("qwen3.5-4b", true, 4_205_751_296),
        ("qwen3.5-9b", false, 8_953_803_264),
    ] {
        let c = Preset::parse(name).unwrap().config(None);
        c.validate().unwrap();
        println!("{name}: {} text parameters", c.parameter_count());
        assert_eq!(c.tie_word_embeddings, tied, "{name}");
        assert_eq!(c.parameter_count(), params, "{name}");
        assert_eq!((c.vocab_size, c.head_dim, c.linear_num_key_heads, c.linear_key_head_dim), (248_320, 256, 16, 128));
        assert_eq!(c.rotary_dim(), 64);
        assert_eq!(c.layer_types.iter().filter(|t| **t == backends::config::LayerType::FullAttention).count(), c.num_hidden_layers / 4);
    }
    let c = Preset::parse("qwen3.5-0.8b").unwrap().config(Some(8));
    assert_eq!((c.num_hidden_layers, c.layer_types.len(), c.hidden_size), (8, 8, 1024));
    assert_eq!(Preset::parse("qwen3.5-0.8b").unwrap().config(None).max_position_embeddings, 262_144);
}
