//! The 471 riscv-tests operand/result vectors (rv32ui, rv32um, rv32uzba) from `$WEAVER_TESTDATA/riscv`, run on
//! the WOVEN machine: the default 64 KiB RV32IM+Zba machine woven into Qwen3.5 weights, decoded on the sparse
//! executor, on the incremental executor and on the compiled (jit) one, which must generate the same trace,
//! token for token. Each vector is its own run: the instruction word is loaded into RAM and the operands into x1, x2
//! as load tokens, then the machine runs until the instruction retires (`BUSY` = 0; a division takes 10 steps); that step must write the vector's expected result to x3
//! (register-register and immediate instructions) or move pc by +8 / +4 (branch taken / not taken). The
//! expected values come from the vectors file (riscv-tests' own macros), not from our interpreter.

mod common;
use backends::incremental::IncrementalModel;
use backends::sparse::SparseModel;
use common::*;
use isa_rv32im::circuit::{Rv32MachineOptions, mem, reg, rv32im_machine};
use isa_api::host;

const FILE: &str = "riscv/riscv-tests-rv32im-zba-vectors.json";

#[test]
fn riscv_tests_vectors_on_the_woven_machine() {
    let Some(path) = testdata_file(FILE) else {
        return;
    };
    let vectors: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(vectors.len(), 471, "vector count");
    let opts = Rv32MachineOptions { ram_base: BASE, ..Default::default() };
    let desc = rv32im_machine(&opts).unwrap();
    let woven = weaver::weave(&desc, &weaver::WeaveOptions::default()).unwrap();
    let model = SparseModel::new(&woven.config, &woven.weights).unwrap();
    let incremental = IncrementalModel::new(&woven.config, &woven.weights).unwrap();
    let jit = SparseModel::compiled(&woven.config, &woven.weights).unwrap();
    drop(woven.weights);
    let proto = &woven.protocol;
    let (mut passed, mut tokens) = (0usize, 0usize);
    let mut failures = Vec::new();
    for v in &vectors {
        let kind = v["kind"].as_str().unwrap();
        let op = v["op"].as_str().unwrap();
        let a = v["a"].as_u64().unwrap() as u32;
        let b = v["b"].as_i64().unwrap();
        let expected = v["expected"].as_u64().unwrap() as u32;
        let label = format!("{}/{} test {}", v["suite"].as_str().unwrap(), v["file"].as_str().unwrap(), v["test"]);
        let word = match kind {
            "rr" => rr(op, 3, 1, 2),
            "imm" => ri(op, 3, 1, b as i32),
            "br_taken" | "br_nottaken" => branch(op, 1, 2, 8),
            other => panic!("unknown vector kind {other}"),
        };
        let mut prompt = proto.load_tokens(mem::RAM0, 0, &[word as u64]);
        prompt.extend(proto.load_tokens(mem::X, 1, &[a as u64, b as u32 as u64]));
        prompt.push(proto.step_token);
        let mut st = model.new_state();
        // Up to 100 steps: a division takes 10; after the instruction the machine meets the zero word at +4
        // (or +8), an illegal instruction, and halts.
        let out = host::run(proto, &prompt, 100, |t| model.step_argmax(&mut st, t)).unwrap();
        tokens += prompt.len() + out.trace.generated.len();
        let mut ist = incremental.new_state();
        let inc = host::run(proto, &prompt, 100, |t| incremental.step_argmax(&mut ist, t)).unwrap();
        assert_eq!(inc.trace.generated, out.trace.generated, "{label}: the incremental executor's trace differs from the sparse one's");
        let mut jst = jit.new_state();
        let compiled = host::run(proto, &prompt, 100, |t| jit.step_argmax(&mut jst, t)).unwrap();
        assert_eq!(compiled.trace.generated, out.trace.generated, "{label}: the jit executor's trace differs from the sparse one's");
        // The first step after which BUSY is 0 retired the instruction: its pc and register-file write, read
        // through the protocol's one decoder.
        let retired = match proto.decode_steps(&out.trace.generated) {
            Ok(steps) => steps.iter().take_while(|s| !s.halted).find(|s| s.reg(reg::BUSY) == 0).map(|s| (s.reg(reg::PC), s.write(mem::X).map(|w| (w.addr, w.data)))),
            Err(_) => None,
        };
        let got = match (kind, retired) {
            ("rr" | "imm", Some((_, Some((3, d))))) => Some(d as u32),
            ("br_taken" | "br_nottaken", Some((2, _))) => Some(1),
            ("br_taken" | "br_nottaken", Some((1, _))) => Some(0),
            _ => None,
        };
        if got == Some(expected) {
            passed += 1;
        } else {
            let show: Vec<String> = out.trace.generated.iter().map(|t| proto.describe(*t)).collect();
            failures.push(format!("{label}: {op} {a:#x}, {b:#x}: expected {expected:#x}, trace {}", show.join(" ")));
        }
    }
    eprintln!("riscv-tests vectors on the woven machine (sparse, incremental and jit executors, equal traces): {passed}/{} passed, {tokens} tokens each", vectors.len());
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(passed, 471);
}
