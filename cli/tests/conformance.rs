//! The executor conformance suite: every executor (`backends::ExecutorKind`: sparse, incremental, jit,
//! ndarray, flex, and wgpu with `WEAVER_WGPU=1`) runs the same checks through the one executor interface (`backends::Executor`), so a
//! new executor is added by implementing the trait and passing this file.
//!
//! 1. the shared fixtures against transformers: each position's logits of token-by-token decoding within a
//!    relative error of 1e-4 of the reference transformers wrote; a batch of two sequences decodes as each alone;
//! 2. the woven acc8 machine in lockstep with its reference evaluator: every generated position equal;
//! 3. a woven RV32 program (1 KiB machine: `exit(12)` after a few ALU instructions) replayed against the
//!    reference interpreter and the circuit's reference: on the sparse, incremental and jit executors always; the dense executors
//!    hold its 0.8 G parameters as f32 (3.2 GB), so they run it with `LOOM_CONFORMANCE_DENSE_RV32=1`
//!    (sparse, ndarray and flex together: 125 s and 3.9 GB peak on 2 cores, 2026-12-01).

mod common;
use common::tiny_elf;

use backends::{Executor, ExecutorKind};
use isa_api::front::{MemLoad, Program};
use isa_api::{LoadImage, MachineFront, host};

fn kinds() -> Vec<ExecutorKind> {
    let wgpu = std::env::var("WEAVER_WGPU").is_ok_and(|v| v == "1");
    if !wgpu {
        eprintln!("wgpu not tested (set WEAVER_WGPU=1 to include it)");
    }
    ExecutorKind::ALL.into_iter().filter(|k| *k != ExecutorKind::Wgpu || wgpu).collect()
}

/// The fixtures directory (`WEAVER_FIXTURES`), or `None` with SKIPPED outside CI.
fn fixtures() -> Vec<std::path::PathBuf> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let dir = std::env::var("WEAVER_FIXTURES").map(std::path::PathBuf::from).unwrap_or_else(|_| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures"));
    if !dir.is_dir() {
        assert!(!ci, "fixtures missing under CI=true: {}", dir.display());
        eprintln!("SKIPPED: no fixtures at {} (set WEAVER_FIXTURES)", dir.display());
        return vec![];
    }
    let mut v: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("qwen35-"))).collect();
    v.sort();
    assert!(!v.is_empty() || !ci, "no qwen35-* fixtures in {}", dir.display());
    v
}

fn read_f32(path: &std::path::Path, name: &str) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let t = st.tensor(name).unwrap();
    match t.dtype() {
        safetensors::Dtype::F32 => t.data().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect(),
        safetensors::Dtype::I64 => t.data().chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f32).collect(),
        d => panic!("{name}: dtype {d:?}"),
    }
}

fn rel_err(a: &[f32], b: &[f32]) -> f64 {
    let (mut d, mut n) = (0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        d += (*x as f64 - *y as f64).powi(2);
        n += (*y as f64).powi(2);
    }
    (d / n.max(1e-300)).sqrt()
}

#[test]
fn every_executor_decodes_the_fixtures_like_transformers() {
    for dir in fixtures() {
        let reference = dir.join("reference.safetensors");
        let ids: Vec<u32> = read_f32(&reference, "input_ids").iter().map(|v| *v as u32).collect();
        let want = read_f32(&reference, "decode_logits");
        for kind in kinds() {
            let ex = backends::executor::open(kind, &dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            assert_eq!(ex.kind(), kind);
            let vocab = ex.config().vocab_size;
            let mut s = ex.session();
            let mut worst = 0f64;
            for (p, &t) in ids.iter().enumerate() {
                let row = s.step(t).unwrap();
                let e = rel_err(&row, &want[p * vocab..(p + 1) * vocab]);
                worst = worst.max(e);
                assert!(e <= 1e-4, "{} [{kind}] position {p}: relative error {e:.3e}", dir.display());
            }
            assert_eq!(s.position(), ids.len());
            if kind == ExecutorKind::Incremental {
                // Trained weights are not small dyadic rationals: every projection falls back to its full sum.
                let c: std::collections::HashMap<_, _> = s.counters().into_iter().collect();
                assert!(c["full_products"] > 0 && c["incremental_products"] == 0, "{} [{kind}] {c:?}", dir.display());
            }
            // Batches: two sequences side by side give what each gives alone.
            let other: Vec<u32> = ids.iter().rev().copied().collect();
            let batch = ex.generate_batch(&[ids.clone(), other.clone()], 4).unwrap();
            let alone: Vec<Vec<u32>> = [ids.clone(), other].iter().map(|p| ex.generate_batch(std::slice::from_ref(p), 4).unwrap().remove(0)).collect();
            assert_eq!(batch, alone, "{} [{kind}] batch of two", dir.display());
            eprintln!("{} [{kind}]: {} positions, worst relative error {worst:.2e}", dir.file_name().unwrap().to_string_lossy(), ids.len());
        }
    }
}

/// Run `image` on `ex` for up to `steps` steps and replay the trace on the reference of `desc`; returns
/// (positions compared, steps).
fn lockstep(ex: &dyn Executor, desc: &isa_api::MachineDesc, image: &LoadImage, steps: usize) -> (usize, usize) {
    let proto = isa_api::Protocol::of(desc);
    let mut s = ex.session();
    let out = host::run(&proto, &image.prompt(&proto), steps, |t| s.step_argmax(t)).unwrap();
    let rep = isa_api::lockstep::replay(desc, image, &out.trace);
    assert_eq!(rep.mismatch, None, "[{}] {}", ex.kind(), desc.name);
    assert_eq!(rep.positions, out.trace.generated.len());
    (rep.positions, out.steps)
}

#[test]
fn every_executor_runs_acc8_in_lockstep_with_its_reference() {
    let desc = isa_api::examples::acc8();
    let woven = weaver::weave(&desc, &weaver::WeaveOptions::default()).unwrap();
    let prog: Vec<u64> = isa_api::examples::acc8_stress_program(1).iter().map(|b| *b as u64).collect();
    let image = LoadImage::of_loads(vec![MemLoad { mem: 0, base: 0, words: prog }]);
    for kind in kinds() {
        let ex = backends::executor::build(kind, &woven.config, &woven.weights).unwrap();
        let steps = match kind {
            ExecutorKind::Sparse | ExecutorKind::Incremental | ExecutorKind::Jit => 3000,
            ExecutorKind::Flex => 1000,
            ExecutorKind::Ndarray => 300,
            ExecutorKind::Wgpu => 12,
        };
        let (positions, done) = lockstep(ex.as_ref(), &desc, &image, steps);
        assert_eq!(done, steps);
        eprintln!("acc8 [{kind}]: {steps} steps, {positions} positions equal to the reference, 0 mismatches");
    }
}

/// On woven weights the incremental and the jit executors' logits are the sparse executor's, bit for bit, at
/// every position, and nearly every product of the incremental one is an incremental update (after the first
/// token's, at most as many full products again). A second incremental session takes the greedy token (`step_argmax`: its split lm_head)
/// and, every seventh position, the logits instead; its token is the sparse logits' argmax at every position.
#[test]
fn incremental_and_jit_logits_equal_the_sparse_executors_bit_for_bit() {
    let acc8 = isa_api::examples::acc8();
    let prog: Vec<u64> = isa_api::examples::acc8_stress_program(1).iter().map(|b| *b as u64).collect();
    let acc8_image = LoadImage::of_loads(vec![MemLoad { mem: 0, base: 0, words: prog }]);
    let mut keys = isa_api::toml::Table::new();
    keys.insert("ram_size".into(), 1024.into());
    let rv32 = isa_rv32im::front::Rv32Front.configure(&keys).unwrap();
    let rv32_desc = rv32.describe().unwrap();
    let program = Program { name: "exit12".into(), bytes: tiny_elf(&[0x0050_0093, 0x0070_8113, 0x05d0_0893, 0x0001_0513, 0x0000_0073]), expected_console: None };
    let rv32_image = rv32.load(&program).unwrap();
    for (desc, image, steps) in [(&acc8, &acc8_image, 400), (&rv32_desc, &rv32_image, 100)] {
        let woven = weaver::weave(desc, &weaver::WeaveOptions::default()).unwrap();
        let sparse = backends::executor::build(ExecutorKind::Sparse, &woven.config, &woven.weights).unwrap();
        let inc = backends::executor::build(ExecutorKind::Incremental, &woven.config, &woven.weights).unwrap();
        let jit = backends::executor::build(ExecutorKind::Jit, &woven.config, &woven.weights).unwrap();
        drop(woven.weights);
        let proto = isa_api::Protocol::of(desc);
        let (mut a, mut b, mut j, mut g) = (sparse.session(), inc.session(), jit.session(), inc.session());
        let mut positions = 0usize;
        let (mut diverged, mut jit_diverged, mut greedy_diverged) = (None, None, None);
        let same = |x: &[f32], y: &[f32]| x.len() == y.len() && x.iter().zip(y).all(|(x, y)| x.to_bits() == y.to_bits());
        let out = host::run(&proto, &image.prompt(&proto), steps, |t| {
            let (la, lb, lj) = (a.step(t)?, b.step(t)?, j.step(t)?);
            if diverged.is_none() && !same(&la, &lb) {
                diverged = Some(positions);
            }
            if jit_diverged.is_none() && !same(&la, &lj) {
                jit_diverged = Some(positions);
            }
            let want = backends::cpu::argmax(&la);
            let greedy = if positions % 7 == 6 { backends::cpu::argmax(&g.step(t)?) } else { g.step_argmax(t)? };
            if greedy_diverged.is_none() && greedy != want {
                greedy_diverged = Some(positions);
            }
            positions += 1;
            Ok::<_, backends::ExecError>(want)
        })
        .unwrap();
        assert_eq!(diverged, None, "{}: incremental logits differ at position {diverged:?}", desc.name);
        assert_eq!(jit_diverged, None, "{}: jit logits differ at position {jit_diverged:?}", desc.name);
        assert_eq!(greedy_diverged, None, "{}: incremental greedy token differs at position {greedy_diverged:?}", desc.name);
        assert_eq!(j.position(), positions);
        let c: std::collections::HashMap<_, _> = b.counters().into_iter().collect();
        assert_eq!(c["tokens"] as usize, positions);
        // At most as many full products after the first token as in it (a session fed the first token alone
        // counts those): every product is computed in full at the first token, nearly none later. (Counted
        // against the first token, not against all products: layers whose inputs did not change make none.)
        let first_token = image.prompt(&proto)[0];
        let mut one = inc.session();
        one.step(first_token).unwrap();
        let first: std::collections::HashMap<_, _> = one.counters().into_iter().collect();
        assert!(c["full_products"] <= 2 * first["full_products"], "{}: full products {c:?}, the first token's {first:?}", desc.name);
        assert!(c["incremental_products"] > c["full_products"], "{}: {c:?}", desc.name);
        // Register heads are written at every step, with the value they already hold unless the register
        // changed: such writes are skipped as settled (and the logits above stayed bit-identical).
        assert!(c["settled_writes"] > 0, "{}: no settled write skipped {c:?}", desc.name);
        eprintln!("{}: {positions} positions ({} steps), logits bit-identical; counters {c:?}", desc.name, out.steps);
    }
}

#[test]
fn every_executor_runs_a_woven_rv32_program() {
    let dense = std::env::var("LOOM_CONFORMANCE_DENSE_RV32").is_ok_and(|v| v == "1");
    let mut keys = isa_api::toml::Table::new();
    keys.insert("ram_size".into(), 1024.into());
    let machine = isa_rv32im::front::Rv32Front.configure(&keys).unwrap();
    let desc = machine.describe().unwrap();
    let woven = weaver::weave(&desc, &weaver::WeaveOptions::default()).unwrap();
    // addi x1, x0, 5; addi x2, x1, 7; addi a7, x0, 93; addi a0, x2, 0; ecall: exit(12)
    let program = Program { name: "exit12".into(), bytes: tiny_elf(&[0x0050_0093, 0x0070_8113, 0x05d0_0893, 0x0001_0513, 0x0000_0073]), expected_console: None };
    let image = machine.load(&program).unwrap();
    for kind in kinds() {
        if kind.is_dense() && !dense {
            eprintln!("rv32 [{kind}]: not run (0.8 G dense parameters; set LOOM_CONFORMANCE_DENSE_RV32=1)");
            continue;
        }
        let ex = backends::executor::build(kind, &woven.config, &woven.weights).unwrap();
        let proto = isa_api::Protocol::of(&desc);
        let mut s = ex.session();
        let out = host::run(&proto, &image.prompt(&proto), 100, |t| s.step_argmax(t)).unwrap();
        assert!(out.halted, "[{kind}] the program halts");
        let rep = isa_api::lockstep::replay(&desc, &image, &out.trace);
        assert_eq!((rep.mismatch, rep.positions), (None, out.trace.generated.len()), "[{kind}]");
        let check = machine.check_trace(&program, &proto, &out.trace).expect("rv32 has an interpreter").unwrap();
        assert_eq!((check.instructions, check.end.as_str()), (5, "exit 12"), "[{kind}]");
        eprintln!("rv32 [{kind}]: {} positions equal to the reference, 5 instructions equal to the interpreter", rep.positions);
    }
}
