//! A memory larger than one DeltaNet head (`isa_api::examples::scatter10`: 1,024 rows in four blocks of 256):
//! the block heads of a read share one key head (the one-hot of the address's low bits), beta selects the
//! written block and the output gate `z` the read block. Woven and run on the sparse executor, and (when
//! `WEAVER_HF_PYTHON` names a python with torch + transformers) exported and decoded by transformers'
//! `Qwen3_5ForCausalLM`, token for token against the reference evaluator.

mod common;

use backends::sparse::SparseModel;
use isa_api::examples::{scatter10, scatter10_image};
use isa_api::Reference;
use weaver::allocate::KeySrc;
use isa_api::host;
use weaver::{weave, WeaveOptions};

fn reference(steps: usize, image: &[u64]) -> Vec<u32> {
    let mut r = Reference::new(scatter10());
    r.load(0, 0, image);
    r.run(steps)
}

#[test]
fn block_heads_share_key_heads_and_run_exactly_on_the_sparse_executor() {
    let w = weave(&scatter10(), &WeaveOptions::default()).unwrap();
    let a = &w.allocation;
    // Two reads of M, each split into 4 block heads; the blocks of one read share key heads.
    let block_heads: Vec<_> = a.layers.iter().flat_map(|l| l.heads.iter()).filter(|h| matches!(h.key, KeySrc::Addr { .. })).collect();
    assert_eq!(block_heads.len(), 8);
    for la in &a.layers {
        for g in &la.groups {
            let reads: Vec<_> = g.iter().map(|h| la.heads[*h].read).collect();
            assert!(reads.iter().all(|r| *r == reads[0]), "a key head serves one read: {reads:?}");
        }
    }
    assert!(a.layers.iter().any(|l| l.groups.iter().any(|g| g.len() > 1 && l.heads[g[0]].read.is_some())), "some key head serves several blocks");
    let model = SparseModel::new(&w.config, &w.weights).unwrap();
    let image = scatter10_image(300);
    let prompt = host::program_prompt(&w.protocol, 0, 0, &image);
    let steps = 1_500;
    let mut st = model.new_state();
    let got = host::run(&w.protocol, &prompt, steps, |t| model.step_argmax(&mut st, t)).unwrap();
    let want = reference(steps, &image);
    let p = &w.protocol;
    if let Some(i) = (0..want.len().min(got.trace.generated.len())).find(|i| got.trace.generated[*i] != want[*i]) {
        let ctx = |v: &[u32]| v[i.saturating_sub(8)..(i + 1).min(v.len())].iter().map(|t| p.describe(*t)).collect::<Vec<_>>().join(" ");
        panic!("first mismatch at generated position {i}:\n model: {}\n  want: {}", ctx(&got.trace.generated), ctx(&want));
    }
    assert_eq!(got.trace.generated.len(), want.len());
    eprintln!("scatter10 on the sparse executor: {} steps, {} positions equal to the reference, 0 mismatches", steps, want.len());
}

/// Zeroing the block select of one head's write gate (beta) lets it write in every block: the trace changes.
#[test]
fn ablating_the_block_select_of_beta_changes_the_trace() {
    let w = weave(&scatter10(), &WeaveOptions::default()).unwrap();
    let a = &w.allocation;
    let (l, la) = a.layers.iter().enumerate().find(|(_, l)| l.heads.iter().any(|h| h.read.is_some())).unwrap();
    let mut weights = w.weights.clone();
    let b = weights.get_mut(&format!("model.layers.{l}.linear_attn.in_proj_b.weight")).unwrap();
    // value head of the first block head: its group's index times R plus its position
    let per = w.config.linear_num_value_heads / w.config.linear_num_key_heads;
    let first = la.heads.iter().position(|h| h.read.is_some()).unwrap();
    let (g, j) = la.groups.iter().enumerate().find_map(|(g, grp)| grp.iter().position(|h| *h == first).map(|j| (g, j))).unwrap();
    let row = g * per + j;
    let KeySrc::Addr { bits, .. } = &la.heads[first].key else { panic!("address key") };
    let hi = bits[bits.len() - 1];
    let (slot, _) = a.slot(hi);
    let h = w.config.hidden_size;
    let cslot = a.slot(weaver::net::Sig::ONE).0;
    assert_ne!(b.data[row * h + slot], 0.0);
    b.data[row * h + slot] = 0.0;
    b.data[row * h + cslot] += 200.0; // the literal's +1 case: the bit no longer matters
    b.drop_index(); // written directly: the woven block index no longer says where the nonzeros are
    let model = SparseModel::new(&w.config, &weights).unwrap();
    let image = scatter10_image(300);
    let prompt = host::program_prompt(&w.protocol, 0, 0, &image);
    let mut st = model.new_state();
    let got = host::run(&w.protocol, &prompt, 600, |t| model.step_argmax(&mut st, t)).unwrap();
    assert_ne!(got.trace.generated, reference(600, &image));
}

#[test]
fn transformers_runs_the_block_memory_machine_to_the_reference_trace() {
    let Some((python, script)) = common::hf_setup("transformers_runs_the_block_memory_machine_to_the_reference_trace") else {
        return;
    };
    let w = weave(&scatter10(), &WeaveOptions { fit: None, attention_layer: true }).unwrap();
    let dir = std::env::temp_dir().join(format!("loom-weaver-hf-blocks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    weaver::export::save(&w, &dir).unwrap();
    let image = scatter10_image(40);
    let prompt = host::program_prompt(&w.protocol, 0, 0, &image);
    let pf = dir.with_extension("prompt.json");
    std::fs::write(&pf, serde_json::to_string(&prompt).unwrap()).unwrap();
    let want = reference(30, &image);
    let theirs = common::hf_decode(&python, &script, &dir, common::HfPrompt::File(&pf), want.len(), "chunked");
    assert_eq!(theirs, want, "transformers' trace");
    eprintln!("transformers: {} positions of scatter10 equal to the reference", theirs.len());
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_file(&pf).unwrap();
}
