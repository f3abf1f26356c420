//! Batches of independent sequences give what each sequence gives alone, in prefill and in decode; chunked
//! and stepwise prefill agree; the bundled tiny model loads and generates.
#![cfg(feature = "burn")]

mod common;

use backends::model::{BackendKind, Logits, Qwen35Model};
use backends::random::{random_weights, Preset};
use backends::{save_checkpoint, Checkpoint};
use common::*;

fn model(name: &str, backend: BackendKind) -> Qwen35Model {
    let cfg = Preset::Tiny.config(None);
    let dir = scratch(name);
    save_checkpoint(&dir, &cfg, &random_weights(&cfg, 11)).unwrap();
    Qwen35Model::load(&Checkpoint::open(&dir).unwrap(), &backend.device().unwrap()).unwrap()
}

fn vec3(t: burn::tensor::Tensor<3>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

#[test]
fn batch_of_two_equals_each_alone() {
    for backend in [BackendKind::Ndarray, BackendKind::Flex] {
        let m = model(&format!("batch-{}", backend.name()), backend);
        let a: Vec<u32> = vec![5, 17, 99, 3, 42, 8, 1];
        let b: Vec<u32> = vec![120, 0, 64, 64, 7, 33, 2];
        let mut sb = m.new_state(2);
        let both = vec3(m.forward(&[a.clone(), b.clone()], &mut sb, Logits::All, false).unwrap().logits);
        let v = m.config().vocab_size;
        let n = a.len() * v;
        let mut alone = Vec::new();
        let mut states = Vec::new();
        for s in [&a, &b] {
            let mut st = m.new_state(1);
            alone.push(vec3(m.forward(&[s.clone()], &mut st, Logits::All, false).unwrap().logits));
            states.push(st);
        }
        assert!(rel_err(&both[..n], &alone[0]) < 1e-6, "{}: first sequence differs in a batch", backend.name());
        assert!(rel_err(&both[n..], &alone[1]) < 1e-6, "{}: second sequence differs in a batch", backend.name());
        // Three decode steps, batched and alone.
        for (step, (ta, tb)) in [(9u32, 10u32), (11, 12), (13, 14)].into_iter().enumerate() {
            let both = vec3(m.forward(&[vec![ta], vec![tb]], &mut sb, Logits::Last, false).unwrap().logits);
            let one = vec3(m.forward(&[vec![ta]], &mut states[0], Logits::Last, false).unwrap().logits);
            let two = vec3(m.forward(&[vec![tb]], &mut states[1], Logits::Last, false).unwrap().logits);
            assert!(rel_err(&both[..v], &one) < 1e-6, "{} decode step {step}, sequence 0", backend.name());
            assert!(rel_err(&both[v..], &two) < 1e-6, "{} decode step {step}, sequence 1", backend.name());
        }
    }
}

#[test]
fn chunked_and_stepwise_prefill_agree() {
    let m = model("prefill-modes", BackendKind::Ndarray);
    let prompt = [3u32, 1, 4, 1, 5, 9, 2, 6];
    let (g1, l1) = m.generate(&prompt, 6, false).unwrap();
    let (g2, l2) = m.generate(&prompt, 6, true).unwrap();
    assert_eq!(g1, g2);
    for (a, b) in l1.iter().zip(&l2) {
        assert!(rel_err(a, b) < 1e-5);
    }
    assert_eq!(g1.len(), 6);
}

#[test]
fn bad_token_ids_are_errors_not_panics() {
    let m = model("badids", BackendKind::Ndarray);
    let mut st = m.new_state(1);
    let e = m.forward(&[vec![1, 128]], &mut st, Logits::Last, false).err().unwrap().to_string();
    assert!(e.contains("128") && e.contains("vocabulary"), "{e}");
    let mut st = m.new_state(2);
    let e = m.forward(&[vec![1, 2], vec![3]], &mut st, Logits::Last, false).err().unwrap().to_string();
    assert!(e.contains("same length"), "{e}");
}

#[test]
fn bundled_tiny_model_loads_and_generates() {
    let dir = repo_root().join("models/tiny-random");
    let ck = Checkpoint::open(&dir).unwrap();
    let m = Qwen35Model::load(&ck, &BackendKind::Ndarray.device().unwrap()).unwrap();
    let (g, logits) = m.generate(&[1, 2, 3], 8, false).unwrap();
    assert_eq!(g.len(), 8);
    assert!(g.iter().all(|&t| (t as usize) < m.config().vocab_size));
    assert_eq!(logits[0].len(), m.config().vocab_size);
}
