//! The dense burn path runs a woven machine to the same trace as the machine's reference evaluator.
//!
//! The acc8 test machine is woven, exported as a checkpoint directory (`config.json` + `model.safetensors`),
//! reloaded through `backends::Checkpoint` and decoded greedily by the burn model, fed back token by token by the
//! circuit-free host loop (`isa_api::host::run`). Every generated token is compared with the reference
//! evaluator's trace: on flex (burn's pure-Rust CPU backend) over more than 10,000 machine steps, on ndarray over
//! a shorter stretch, and on wgpu (software Vulkan in CI) over a few steps when `WEAVER_WGPU=1`.

use backends::model::{argmax, BackendKind, Logits, Qwen35Model};
use backends::Checkpoint;
use isa_api::examples::{acc8, acc8_stress_program};
use isa_api::Reference;
use isa_api::host;
use weaver::{weave, WeaveOptions};

/// Decode `prog` on `backend` for up to `max_steps` machine steps and compare with the reference evaluator;
/// returns (positions compared, steps).
fn dense_lockstep(backend: BackendKind, prog: &[u8], max_steps: usize) -> (usize, usize) {
    let woven = weave(&acc8(), &WeaveOptions::default()).expect("acc8 weaves");
    let dir = std::env::temp_dir().join(format!("loom-dense-acc8-{}-{}", backend.name(), std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    weaver::export::save(&woven, &dir).expect("export");
    let ck = Checkpoint::open(&dir).expect("reopen the exported checkpoint");
    let device = backend.device().expect("device");
    let model = Qwen35Model::load(&ck, &device).expect("burn model loads");
    let words: Vec<u64> = prog.iter().map(|b| *b as u64).collect();
    let prompt = host::program_prompt(&woven.protocol, 0, 0, &words);
    let mut state = model.new_state(1);
    let t0 = std::time::Instant::now();
    let got = host::run(&woven.protocol, &prompt, max_steps, |t| {
        let out = model.forward(&[vec![t]], &mut state, Logits::Last, false)?;
        let v: Vec<f32> = out.logits.into_data().try_to_vec::<f32>().expect("f32 logits");
        Ok::<u32, backends::model::ModelError>(argmax(&v))
    })
    .expect("dense model runs");
    let secs = t0.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&dir);
    let mut reference = Reference::new(acc8());
    reference.load(0, 0, &words);
    let want = reference.run(max_steps);
    let n = got.trace.generated.len().min(want.len());
    if let Some(i) = (0..n).find(|i| got.trace.generated[*i] != want[*i]) {
        let p = &woven.protocol;
        let ctx = |v: &[u32]| v[i.saturating_sub(8)..(i + 1).min(v.len())].iter().map(|t| p.describe(*t)).collect::<Vec<_>>().join(" ");
        panic!("{}: first mismatch at generated position {i}:\n model: {}\n  want: {}", backend.name(), ctx(&got.trace.generated), ctx(&want));
    }
    assert_eq!(got.trace.generated.len(), want.len(), "{}: trace lengths differ", backend.name());
    eprintln!(
        "dense {}: {} prompt + {} generated tokens, {} steps, {n} positions equal to the reference, 0 mismatches, {:.0} tokens/s",
        backend.name(),
        prompt.len(),
        got.trace.generated.len(),
        got.steps,
        (prompt.len() + got.trace.generated.len()) as f64 / secs
    );
    (n, got.steps)
}

#[test]
fn dense_flex_runs_acc8_for_10k_steps_in_lockstep() {
    // The stress program (every opcode, indirect loads, self-modifying stores), its first 10,000 steps:
    // 20,006 trace positions: a step writes only what changed (PC, ACC when it changes, a store's address and
    // data when they differ from the previous store's, OUT when written), 2.0 tokens per step.
    let (n, steps) = dense_lockstep(BackendKind::Flex, &acc8_stress_program(2), 10_000);
    assert_eq!(steps, 10_000);
    assert_eq!(n, 20_006);
}

#[test]
fn dense_ndarray_runs_acc8_in_lockstep() {
    let (_, steps) = dense_lockstep(BackendKind::Ndarray, &acc8_stress_program(1), 500);
    assert_eq!(steps, 500);
}

#[test]
fn dense_wgpu_runs_acc8_in_lockstep() {
    if std::env::var("WEAVER_WGPU").as_deref() != Ok("1") {
        eprintln!("SKIPPED: set WEAVER_WGPU=1 to run the wgpu backend (software Vulkan works)");
        return;
    }
    let (_, steps) = dense_lockstep(BackendKind::Wgpu, &acc8_stress_program(1), 12);
    assert_eq!(steps, 12);
}
