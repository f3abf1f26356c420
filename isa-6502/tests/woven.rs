//! The 2A03 WOVEN into Qwen3.5 weights (`weaver::weave` of `isa_6502::circuit`), decoded greedily on the
//! incremental executor, against independent data and the interpreter:
//!
//! - nestest in automation mode: every line of the golden log against the registers the trace carries;
//! - Tom Harte's single-instruction tests, `HARTE_PER_OPCODE` per opcode (2 by default, 472 tests: each is a
//!   fresh sequence whose first token computes every product in full, about 0.1 s; `HARTE_PER_OPCODE=10` runs
//!   2,360), each
//!   from a state loaded as tokens: final registers and RAM as the data gives them, cycles as the interpreter
//!   counts them, and every token equal to the reference evaluator's;
//! - Klaus Dormann's functional test: the first `KLAUS_INSTRUCTIONS` (default 20,000) in lockstep with the
//!   interpreter (`loom lockstep` runs more);
//! - the demo: its console output and exit status, in lockstep with the interpreter.
//!
//! One weave serves every test (a `OnceLock`); the executor is built once per test.

mod common;
use common::{HarteCase, harte_files, log_state};

use backends::incremental::IncrementalModel;
use isa_6502::circuit::{Mos6502Options, mem, mos6502_machine};
use isa_6502::front::{CpuState, Mos6502Keys, Mos6502Machine, interpreter_lockstep, state_image};
use isa_6502::{Bus, FlatRam};
use isa_api::front::{Machine, Program};
use isa_api::host::{self, Trace};
use isa_api::{MachineDesc, Protocol};
use std::sync::OnceLock;

struct Woven {
    desc: MachineDesc,
    protocol: Protocol,
    model: IncrementalModel,
}

fn weave(opts: &Mos6502Options) -> Woven {
    let desc = mos6502_machine(opts);
    let t = std::time::Instant::now();
    let woven = weaver::weave(&desc, &weaver::WeaveOptions::default()).expect("the 6502 weaves");
    let c = &woven.config;
    eprintln!(
        "6502 woven in {:.1} s: {} layers, hidden {}, intermediate {}, {} parameters (dense), vocabulary {}",
        t.elapsed().as_secs_f64(),
        c.num_hidden_layers,
        c.hidden_size,
        c.intermediate_size,
        c.parameter_count(),
        c.vocab_size
    );
    let model = IncrementalModel::new(&woven.config, &woven.weights).expect("the incremental executor builds");
    Woven { desc, protocol: woven.protocol, model }
}

fn flat() -> &'static Woven {
    static W: OnceLock<Woven> = OnceLock::new();
    W.get_or_init(|| weave(&Mos6502Options::default()))
}

fn demo_machine() -> Mos6502Machine {
    Mos6502Machine { keys: Mos6502Keys { console: Some(0xF001), exit: Some(0xF002), load_at: 0x0400, ..Default::default() } }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Decodes `prompt` then up to `max_steps` steps on the woven machine.
fn run(w: &Woven, prompt: &[u32], max_steps: usize) -> host::RunOutcome {
    let mut st = w.model.new_state();
    host::run(&w.protocol, prompt, max_steps, |t| w.model.step_argmax(&mut st, t)).expect("the woven machine runs")
}

#[test]
fn nestest_every_log_line_on_the_woven_machine() {
    let (Some(rom), Some(log)) = (common::testdata_file("nes/nestest.nes"), common::testdata_file("nes/nestest.log")) else {
        return;
    };
    let w = flat();
    let m = Mos6502Machine { keys: Mos6502Keys { entry: Some(0xC000), ..Default::default() } };
    let program = Program { name: "nestest.nes".into(), bytes: std::fs::read(rom).unwrap(), expected_console: None };
    let img = m.image(&program).unwrap();
    let log = std::fs::read_to_string(log).unwrap();
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    let prompt = img.load_image(&m.options()).prompt(&w.protocol);
    let t = std::time::Instant::now();
    let out = run(w, &prompt, lines.len() + 1);
    let secs = t.elapsed().as_secs_f64();
    let steps = w.protocol.decode_steps(&out.trace.generated).expect("decodes");
    assert_eq!(steps.len(), lines.len() + 1);
    for (n, line) in lines.iter().enumerate() {
        // Line n is the state before instruction n: after the boot step (n = 0) or instruction n - 1.
        let st = &steps[n];
        let got = isa_6502::face::architectural_registers(|r| st.reg(r)).to_vec();
        assert_eq!(got, log_state(line), "nestest.log line {} (PC A X Y S P CYC) on the woven machine", n + 1);
    }
    let generated = out.trace.generated.len();
    eprintln!(
        "nestest on the woven machine: {} log lines compared, 0 mismatches; {} prompt + {generated} generated tokens ({:.2} per instruction) in {secs:.1} s",
        lines.len(),
        prompt.len(),
        generated as f64 / lines.len() as f64
    );
}

#[test]
fn tom_harte_tests_on_the_woven_machine() {
    let Some(files) = harte_files() else { return };
    let per_opcode = env_usize("HARTE_PER_OPCODE", 2);
    let w = flat();
    let (mut compared, mut tokens) = (0usize, 0usize);
    let t = std::time::Instant::now();
    for path in &files {
        let cases: Vec<HarteCase> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        for case in cases.iter().take(per_opcode) {
            let i = &case.initial;
            let start = CpuState { pc: i.pc, a: i.a, x: i.x, y: i.y, s: i.s, p: i.p, cycles: 0 };
            let image = state_image(&start, i.ram.iter().copied());
            let prompt = image.prompt(&w.protocol);
            let out = run(w, &prompt, 2);
            tokens += prompt.len() + out.trace.generated.len();
            // Token for token against the circuit's reference evaluator.
            let rep = isa_api::lockstep::replay(&w.desc, &image, &out.trace);
            assert!(rep.mismatch.is_none(), "{} {}: {:?}", path.display(), case.name, rep.mismatch);
            let steps = w.protocol.decode_steps(&out.trace.generated).unwrap();
            let after = &steps[1];
            let mut ram = FlatRam::new();
            for &(a, v) in &i.ram {
                ram.write(a, v);
            }
            let mut cpu = start.cpu();
            cpu.step(&mut ram).unwrap();
            let e = &case.expected;
            let want = [u64::from(e.pc), u64::from(e.a), u64::from(e.x), u64::from(e.y), u64::from(e.s), u64::from(e.p), cpu.cycles];
            let got = isa_6502::face::architectural_registers(|r| after.reg(r));
            assert_eq!(got, want, "{} {}: PC A X Y S P CYC", path.display(), case.name);
            // RAM: the initial bytes, then the bytes the instruction's step wrote.
            let mut memory: std::collections::HashMap<u16, u8> = i.ram.iter().copied().collect();
            for wr in after.writes.iter().filter(|w| mem::BANKS.contains(&w.mem)) {
                memory.insert(((wr.addr << 2) | u64::from(wr.mem)) as u16, wr.data as u8);
            }
            for &(a, v) in &e.ram {
                assert_eq!(memory.get(&a).copied().unwrap_or(0), v, "{} {}: RAM ${a:04X}", path.display(), case.name);
            }
            compared += 1;
        }
    }
    eprintln!(
        "Tom Harte's tests on the woven machine: {compared} tests ({per_opcode} per opcode, {} opcodes), 0 mismatches; {tokens} tokens in {:.1} s",
        files.len(),
        t.elapsed().as_secs_f64()
    );
    assert_eq!(compared, files.len() * per_opcode.min(100));
}

#[test]
fn klaus_dormann_in_lockstep_with_the_interpreter_on_the_woven_machine() {
    let Some(bin) = common::testdata_file("6502/6502_functional_test.bin") else { return };
    let n = env_usize("KLAUS_INSTRUCTIONS", 20_000);
    let w = flat();
    let memory = std::fs::read(bin).unwrap();
    let img = isa_6502::front::ProgramImage { bytes: memory.iter().enumerate().map(|(a, &v)| (a as u16, v)).collect(), start: CpuState::after_reset(0x0400), prg_rom: None };
    let prompt = img.load_image(&Mos6502Options::default()).prompt(&w.protocol);
    let t = std::time::Instant::now();
    let out = run(w, &prompt, n + 1);
    let secs = t.elapsed().as_secs_f64();
    let trace = Trace { prompt: prompt.clone(), generated: out.trace.generated.clone(), injected: vec![] };
    let check = interpreter_lockstep(&Mos6502Options::default(), &img, &w.protocol, &trace).expect("lockstep with the interpreter");
    assert_eq!(check.instructions, n as u64);
    eprintln!(
        "Klaus Dormann's test on the woven machine: {n} instructions in lockstep with the interpreter, 0 mismatches; {} prompt + {} generated tokens in {secs:.1} s",
        prompt.len(),
        trace.generated.len()
    );
}

#[test]
fn the_demo_on_the_woven_machine() {
    let m = demo_machine();
    let w = weave(&m.options());
    let demo = m.demo().unwrap();
    let img = m.image(&demo).unwrap();
    let prompt = img.load_image(&m.options()).prompt(&w.protocol);
    let t = std::time::Instant::now();
    let out = run(&w, &prompt, env_usize("DEMO_STEPS", 100_000));
    let secs = t.elapsed().as_secs_f64();
    let rep = isa_api::lockstep::replay(&w.desc, &img.load_image(&m.options()), &out.trace);
    assert!(rep.mismatch.is_none(), "{:?} after {} steps", rep.mismatch, rep.steps);
    assert!(out.halted, "the demo halts");
    let check = interpreter_lockstep(&m.options(), &img, &w.protocol, &out.trace).expect("lockstep with the interpreter");
    assert_eq!(check.end, "exit 0");
    assert_eq!(String::from_utf8_lossy(&check.console), String::from_utf8_lossy(isa_6502::front::DEMO_OUTPUT));
    let rep = isa_api::lockstep::replay(&w.desc, &img.load_image(&m.options()), &out.trace);
    assert!(rep.mismatch.is_none(), "{:?}", rep.mismatch);
    eprintln!(
        "demo on the woven machine: {} instructions, {} generated tokens, {:.0} tokens/s, {:.0} instructions/s",
        check.instructions,
        out.trace.generated.len(),
        out.trace.generated.len() as f64 / secs,
        check.instructions as f64 / secs
    );
}
