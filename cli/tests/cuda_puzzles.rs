//! The 17 GPU puzzles (srush/GPU-Puzzles as data in `$WEAVER_TESTDATA/cuda/gpu_puzzles_specs.json`), solved by
//! our kernels in `examples/cuda/puzzles/`, on the woven SIMT4 network: the machine is woven once per lane
//! count, every puzzle runs on the incremental executor, its arrays (read from the trace) must equal the spec's
//! expected output, and the trace must agree with the reference interpreter after every step.
//! (POCL and the interpreter against the same spec: `isa-simt4/tests/pocl.rs`.)

use backends::ExecutorKind;
use isa_api::front::{Devices, Machine, Program};
use isa_simt4::front::{KernelDevices, Simt4Machine, trace_lockstep_count};
use isa_simt4::Simt4Config;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The spec's problems, or `None` (SKIPPED) without the test data; under `CI=true` missing data fails.
fn problems() -> Option<Vec<serde_json::Value>> {
    let path = test_kit::testdata("cuda/gpu_puzzles_specs.json")?;
    let text = std::fs::read_to_string(path).expect("the GPU puzzle specs");
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    Some(j["problems"].as_array().unwrap().clone())
}

fn puzzles_on_the_network(lanes: u32) {
    let Some(problems) = problems() else { return };
    let dir = repo().join("examples/cuda/puzzles");
    let mut launches: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "toml")).collect();
    launches.sort();
    assert_eq!(launches.len(), 17);
    assert_eq!(problems.len(), 17);
    let cfg = Simt4Config { lanes, ..Default::default() };
    let machine = Simt4Machine::new(cfg);
    let desc = machine.describe().unwrap();
    let woven = weaver::weave(&desc, &weaver::WeaveOptions::default()).unwrap();
    let exec = backends::executor::build(ExecutorKind::Incremental, &woven.config, &woven.weights).unwrap();
    drop(woven.weights);
    let (mut steps, mut tokens, mut positions) = (0u64, 0usize, 0u64);
    for (launch, p) in launches.iter().zip(&problems) {
        let program = Program { name: launch.display().to_string(), bytes: std::fs::read(launch).unwrap(), expected_console: None };
        let image = machine.load(&program).unwrap();
        let kernel = machine.compile(&program).unwrap();
        let mut devices = KernelDevices::new(&desc.face, kernel.clone(), Box::new(std::io::sink())).unwrap();
        let mut session = exec.session();
        let out = isa_api::host::run_observed(&woven.protocol, &image.prompt(&woven.protocol), 200_000, |t| session.step_argmax(t), |ev| {
            if let isa_api::host::Event::Step { step, .. } = ev {
                devices.step(step);
            }
        })
        .unwrap();
        let name = p["name"].as_str().unwrap();
        assert!(out.halted, "{name} ({lanes} lanes): the kernel did not halt");
        let arrays = devices.arrays();
        assert_eq!(arrays["out"], p["expected"], "{name} ({lanes} lanes): the network's out");
        let c = trace_lockstep_count(&cfg, &desc.face, &woven.protocol, &kernel, &out.trace.generated).unwrap_or_else(|e| panic!("{name} ({lanes} lanes): {e}"));
        assert_eq!(c.steps as usize, out.steps, "{name}");
        eprintln!("{name:<20} {lanes} lanes: {:>6} steps, {:>7} tokens, out = {}", out.steps, out.trace.generated.len() + out.trace.prompt.len(), arrays["out"]);
        steps += c.steps;
        tokens += out.trace.generated.len() + out.trace.prompt.len();
        positions += c.positions;
    }
    eprintln!("17 puzzles on {lanes} lanes: {steps} steps, {tokens} tokens, {positions} state words equal to the interpreter's, 0 mismatches");
}

/// 4 lanes, then 8 (one after the other: the 8-lane machine needs about 13 GB while it is built).
#[test]
fn the_gpu_puzzles_run_on_the_woven_network_on_4_and_8_lanes() {
    puzzles_on_the_network(4);
    puzzles_on_the_network(8);
}
