//! Checkpoint I/O: save -> reload bit-identical, released multimodal layouts, bf16/f16 storage, shards, and
//! clear errors for bad input.

mod common;

use backends::random::{random_weights, Preset};
use backends::{save_checkpoint, Checkpoint, HostTensor, Qwen35Config, WeightMap};
use common::scratch;
use safetensors::tensor::TensorView;
use safetensors::Dtype;
use std::collections::HashMap;

fn tiny() -> (Qwen35Config, WeightMap) {
    let cfg = Preset::Tiny.config(None);
    let w = random_weights(&cfg, 7);
    (cfg, w)
}

#[test]
fn save_then_reload_is_bit_identical() {
    let (cfg, w) = tiny();
    let dir = scratch("roundtrip");
    save_checkpoint(&dir, &cfg, &w).unwrap();
    let ck = Checkpoint::open(&dir).unwrap();
    assert_eq!(ck.config(), &cfg);
    let back = ck.weights().unwrap();
    assert_eq!(back.len(), w.len());
    for (name, t) in &w {
        let b = &back[name];
        assert_eq!(b.shape, t.shape, "{name}");
        assert!(b.data.iter().zip(&t.data).all(|(x, y)| x.to_bits() == y.to_bits()), "{name} differs");
    }
    // The layout save_pretrained writes: config.json + model.safetensors with {"format": "pt"}.
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    assert_eq!(meta.metadata().as_ref().and_then(|m| m.get("format")).map(String::as_str), Some("pt"));
    let cj: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    assert_eq!(cj["architectures"][0], "Qwen3_5ForCausalLM");
    assert_eq!(cj["model_type"], "qwen3_5_text");
    // Saving again over our own checkpoint is allowed.
    save_checkpoint(&dir, &cfg, &w).unwrap();
}

/// A mostly-zero tensor (as woven weights are) loads with the block index of its nonzero blocks, every bit
/// equal (`-0` included), the skipped blocks `+0`; a dense tensor carries no index.
#[test]
fn mostly_zero_tensors_load_with_their_block_index() {
    let (cfg, mut w) = tiny();
    let name = "model.layers.0.mlp.up_proj.weight";
    let t = w.get_mut(name).unwrap();
    let n = t.data.len();
    assert!(n >= 64 * 32, "{n}");
    t.data.iter_mut().for_each(|v| *v = 0.0);
    t.data[5] = 1.5; // block 0
    t.data[64 * 7 + 63] = -0.0; // block 7: a -0 counts
    t.data[64 * 20] = -2.0; // block 20
    t.data[n - 1] = 3.0; // the last block
    // Layer 1's: only the first and last blocks, so the 7.5 KB between them hold a whole page, a hole of the file
    // that loading skips.
    let holed = "model.layers.1.mlp.up_proj.weight";
    let t = w.get_mut(holed).unwrap();
    t.data.iter_mut().for_each(|v| *v = 0.0);
    t.data[0] = 0.25;
    t.data[n - 64] = -4.0;
    let dir = scratch("zero-blocks");
    save_checkpoint(&dir, &cfg, &w).unwrap();
    let back = Checkpoint::open(&dir).unwrap().weights().unwrap();
    let b = &back[name];
    assert!(b.data.iter().zip(&w[name].data).all(|(x, y)| x.to_bits() == y.to_bits()));
    assert_eq!(b.blocks(), Some(&[0u64, 7, 20, ((n - 1) / 64) as u64][..]));
    assert_eq!(b.nonzeros(), 3);
    let h = &back[holed];
    assert!(h.data.iter().zip(&w[holed].data).all(|(x, y)| x.to_bits() == y.to_bits()));
    assert_eq!(h.blocks(), Some(&[0u64, ((n - 64) / 64) as u64][..]));
    for (name, t) in &w {
        assert!(back[name].data.iter().zip(&t.data).all(|(x, y)| x.to_bits() == y.to_bits()), "{name}");
    }
    let dense = "model.layers.0.mlp.gate_proj.weight";
    assert!(back[dense].blocks().is_none());
    assert!(back[dense].data.iter().zip(&w[dense].data).all(|(x, y)| x.to_bits() == y.to_bits()));
}

/// Zero pages are left as holes of a sparse file: a 4 MB tensor of four nonzeros takes a few pages of disk, the
/// file has its full length (a tensor of zeros at the end included), and every value reads back bit for bit.
#[test]
fn zero_pages_are_holes_and_read_back_as_zeros() {
    let n = 1 << 20;
    let mut sparse = vec![0f32; n];
    for (i, v) in [(3, 1.0), (5_000, -2.5), (700_000, 3.0), (n - 1, f32::MIN_POSITIVE)] {
        sparse[i] = v;
    }
    sparse[300_000] = -0.0; // a -0 is a nonzero byte, written
    let dense: Vec<f32> = (0..100).map(|i| i as f32 * 0.37 - 9.0).collect();
    let tensors = [
        ("sparse", HostTensor::new(vec![1024, 1024], sparse)),
        ("dense", HostTensor::new(vec![100], dense)),
        ("zeros", HostTensor::new(vec![3000], vec![0.0; 3000])),
    ];
    let dir = scratch("holes");
    let path = dir.join("t.safetensors");
    let refs: Vec<(&str, &HostTensor)> = tensors.iter().map(|(n, t)| (*n, t)).collect();
    backends::checkpoint::write_tensors(&path, &refs).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    for (name, t) in &tensors {
        let v = st.tensor(name).unwrap();
        assert_eq!(v.shape(), &t.shape[..], "{name}");
        let back: Vec<u32> = v.data().chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        assert!(back.iter().zip(&t.data).all(|(x, y)| *x == y.to_bits()), "{name} differs");
    }
    let len = std::fs::metadata(&path).unwrap().len() as usize;
    assert_eq!(len, bytes.len());
    assert!(len > 4 * ((1 << 20) + 3100), "{len}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let on_disk = std::fs::metadata(&path).unwrap().blocks() as usize * 512;
        assert!(on_disk <= 16 * 4096, "{on_disk} bytes on disk for a file of {len}: zero pages were written");
    }
}

#[test]
fn tied_checkpoint_omits_lm_head() {
    let mut cfg = Preset::Tiny.config(None);
    cfg.tie_word_embeddings = true;
    let w = random_weights(&cfg, 3);
    let dir = scratch("tied");
    save_checkpoint(&dir, &cfg, &w).unwrap();
    let ck = Checkpoint::open(&dir).unwrap();
    assert!(!ck.names().any(|n| n == "lm_head.weight"));
}

#[test]
fn refuses_to_overwrite_user_files() {
    let (cfg, w) = tiny();
    let dir = scratch("refuse");
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let e = save_checkpoint(&dir, &cfg, &w).unwrap_err().to_string();
    assert!(e.contains("refusing") && e.contains("notes.txt"), "{e}");
    assert_eq!(std::fs::read_to_string(dir.join("notes.txt")).unwrap(), "mine");
}

/// Write `tensors` (name -> (dtype, shape, raw bytes)) as one safetensors file.
fn write_raw(path: &std::path::Path, tensors: &[(String, Dtype, Vec<usize>, Vec<u8>)]) {
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .map(|(n, d, s, b)| (n.clone(), TensorView::new(*d, s.clone(), b).unwrap()))
        .collect();
    safetensors::serialize_to_file(views, None::<HashMap<String, String>>, path).unwrap();
}

fn f32_bytes(t: &HostTensor) -> Vec<u8> {
    t.data.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn reads_released_multimodal_layout_in_bf16() {
    let (cfg, w) = tiny();
    let dir = scratch("multimodal");
    // config.json of a multimodal Qwen3_5Config: the text part under text_config.
    let cj = serde_json::json!({"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
        "text_config": cfg.to_hf_json(), "vision_config": {"depth": 2}});
    std::fs::write(dir.join("config.json"), cj.to_string()).unwrap();
    let mut raw = Vec::new();
    for (name, t) in &w {
        let stored = name.replacen("model.", "model.language_model.", 1);
        let stored = if name == "lm_head.weight" { name.clone() } else { stored };
        let bytes: Vec<u8> = t.data.iter().flat_map(|v| half::bf16::from_f32(*v).to_bits().to_le_bytes()).collect();
        raw.push((stored, Dtype::BF16, t.shape.clone(), bytes));
    }
    raw.push(("model.visual.blocks.0.attn.qkv.weight".into(), Dtype::F32, vec![2, 2], vec![0u8; 16]));
    raw.push(("mtp.fc.weight".into(), Dtype::F32, vec![3], vec![0u8; 12]));
    write_raw(&dir.join("model.safetensors"), &raw);
    let ck = Checkpoint::open(&dir).unwrap();
    assert_eq!(ck.config(), &cfg);
    assert!(!ck.names().any(|n| n.contains("visual") || n.starts_with("mtp")));
    let got = ck.tensor("model.layers.0.mlp.up_proj.weight").unwrap();
    let want = &w["model.layers.0.mlp.up_proj.weight"];
    for (g, v) in got.data.iter().zip(&want.data) {
        assert_eq!(*g, half::bf16::from_f32(*v).to_f32());
    }
}

#[test]
fn reads_f16_shards_with_an_index() {
    let (cfg, w) = tiny();
    let dir = scratch("shards");
    std::fs::write(dir.join("config.json"), cfg.to_hf_json().to_string()).unwrap();
    let mut shards: [Vec<(String, Dtype, Vec<usize>, Vec<u8>)>; 2] = [vec![], vec![]];
    let mut map = serde_json::Map::new();
    for (i, (name, t)) in w.iter().enumerate() {
        let k = i % 2;
        let (dtype, bytes) = if k == 0 {
            (Dtype::F16, t.data.iter().flat_map(|v| half::f16::from_f32(*v).to_bits().to_le_bytes()).collect())
        } else {
            (Dtype::F32, f32_bytes(t))
        };
        shards[k].push((name.clone(), dtype, t.shape.clone(), bytes));
        map.insert(name.clone(), format!("model-0000{}-of-00002.safetensors", k + 1).into());
    }
    for (k, s) in shards.iter().enumerate() {
        write_raw(&dir.join(format!("model-0000{}-of-00002.safetensors", k + 1)), s);
    }
    std::fs::write(dir.join("model.safetensors.index.json"), serde_json::json!({"metadata": {}, "weight_map": map}).to_string())
        .unwrap();
    let ck = Checkpoint::open(&dir).unwrap();
    let back = ck.weights().unwrap();
    for (i, (name, t)) in w.iter().enumerate() {
        for (g, v) in back[name].data.iter().zip(&t.data) {
            let want = if i % 2 == 0 { half::f16::from_f32(*v).to_f32() } else { *v };
            assert_eq!(g.to_bits(), want.to_bits(), "{name}");
        }
    }
}

#[test]
fn missing_directory_is_a_clear_error() {
    let e = Checkpoint::open("/nonexistent/loom-model").err().expect("must fail").to_string();
    assert!(e.contains("/nonexistent/loom-model"), "{e}");
}

#[test]
fn malformed_config_is_a_clear_error() {
    let (cfg, w) = tiny();
    let dir = scratch("badconfig");
    save_checkpoint(&dir, &cfg, &w).unwrap();
    std::fs::write(dir.join("config.json"), "{\"hidden_size\": \"wide\"").unwrap();
    let e = Checkpoint::open(&dir).err().expect("must fail").to_string();
    assert!(e.contains("config.json") && e.contains("malformed"), "{e}");
    std::fs::write(dir.join("config.json"), "{\"num_hidden_layers\": 2, \"layer_types\": [\"linear_attention\"]}").unwrap();
    let e = Checkpoint::open(&dir).err().expect("must fail").to_string();
    assert!(e.contains("config.json") && e.contains("layer_types"), "{e}");
}

#[test]
fn misshapen_and_missing_tensors_are_named() {
    let (cfg, mut w) = tiny();
    let dir = scratch("badtensor");
    std::fs::write(dir.join("config.json"), cfg.to_hf_json().to_string()).unwrap();
    let name = "model.layers.1.mlp.up_proj.weight";
    w.insert(name.into(), HostTensor::zeros(vec![3, 5]));
    let tensors: Vec<(&str, &HostTensor)> = w.iter().map(|(n, t)| (n.as_str(), t)).collect();
    backends::checkpoint::write_tensors(&dir.join("model.safetensors"), &tensors).unwrap();
    let e = Checkpoint::open(&dir).err().expect("must fail").to_string();
    assert!(e.contains("model.safetensors") && e.contains(name) && e.contains("[3, 5]") && e.contains("[64, 32]"), "{e}");

    w.remove(name);
    let tensors: Vec<(&str, &HostTensor)> = w.iter().map(|(n, t)| (n.as_str(), t)).collect();
    backends::checkpoint::write_tensors(&dir.join("model.safetensors"), &tensors).unwrap();
    let e = Checkpoint::open(&dir).err().expect("must fail").to_string();
    assert!(e.contains("model.safetensors") && e.contains(name) && e.contains("missing"), "{e}");

    std::fs::write(dir.join("model.safetensors"), b"not a safetensors file").unwrap();
    let e = Checkpoint::open(&dir).err().expect("must fail").to_string();
    assert!(e.contains("model.safetensors") && e.contains("not a valid safetensors"), "{e}");

    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    let e = Checkpoint::open(&dir).err().expect("must fail").to_string();
    assert!(e.contains("no model.safetensors"), "{e}");
}
