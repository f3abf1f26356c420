//! End to end: the acc8 accumulator machine woven into Qwen3.5 weights, run on the sparse executor, token
//! for token against the reference evaluator.

use backends::sparse::SparseModel;
use isa_api::examples::{acc8, acc8_stress_program};
use isa_api::Reference;
use std::sync::OnceLock;
use isa_api::host;
use weaver::{weave, WeaveOptions, Woven};

fn woven() -> &'static Woven {
    static W: OnceLock<Woven> = OnceLock::new();
    W.get_or_init(|| weave(&acc8(), &WeaveOptions::default()).expect("acc8 weaves"))
}

/// Run `prog` for up to `max_steps` steps on the model and on the reference; returns the number of trace
/// positions compared (all must match).
fn lockstep(prog: &[u8], max_steps: usize) -> (usize, usize) {
    let w = woven();
    let model = SparseModel::new(&w.config, &w.weights).expect("model builds");
    let words: Vec<u64> = prog.iter().map(|b| *b as u64).collect();
    let prompt = host::program_prompt(&w.protocol, 0, 0, &words);
    let mut st = model.new_state();
    let got = host::run(&w.protocol, &prompt, max_steps, |t| model.step_argmax(&mut st, t)).expect("model runs");
    let mut r = Reference::new(acc8());
    r.load(0, 0, &words);
    let want = r.run(max_steps);
    let n = got.trace.generated.len().min(want.len());
    for i in 0..n {
        if got.trace.generated[i] != want[i] {
            let p = &w.protocol;
            let ctx = |v: &[u32]| v[i.saturating_sub(12)..(i + 1).min(v.len())].iter().map(|t| p.describe(*t)).collect::<Vec<_>>().join(" ");
            panic!("first mismatch at generated position {i}:\n model: {}\n  want: {}", ctx(&got.trace.generated), ctx(&want));
        }
    }
    assert_eq!(got.trace.generated.len(), want.len(), "trace lengths differ");
    (n, got.steps)
}

#[test]
fn report_figures() {
    let w = woven();
    eprintln!("{}", w.report.render());
    assert_eq!(w.report.tokens_per_step, 5, "PC, ACC, M_ADDR, M_DATA, OUT (at most: every field changes; the last is its end variant)");
    assert!(w.report.layers >= 4);
    let exp = w.config.expected_tensors();
    assert_eq!(exp.len(), w.weights.len());
    for (n, s) in exp {
        assert_eq!(w.weights[&n].shape, s, "{n}");
    }
}

#[test]
fn tiny_program_outputs_and_halts() {
    use isa_api::examples::op::*;
    let prog = [LDI, 7, OUT, 0, ADDI, 250, OUT, 0, ST, 0x40, LD, 0x40, ADD, 0x40, OUT, 0, HLT, 0];
    let w = woven();
    let model = SparseModel::new(&w.config, &w.weights).unwrap();
    let words: Vec<u64> = prog.iter().map(|b| *b as u64).collect();
    let prompt = host::program_prompt(&w.protocol, 0, 0, &words);
    let mut st = model.new_state();
    let got = host::run(&w.protocol, &prompt, 100, |t| model.step_argmax(&mut st, t)).unwrap();
    let desc: Vec<String> = got.trace.generated.iter().map(|t| w.protocol.describe(*t)).collect();
    assert!(got.halted, "{desc:?}");
    assert_eq!(got.outputs, vec![(0, 7), (0, 1), (0, 2)], "{desc:?}");
    let (n, _) = lockstep(&prog, 100);
    assert_eq!(n, got.trace.generated.len());
}

#[test]
fn stress_program_lockstep_10k_steps() {
    // Two outer iterations: 16,770 steps, 100,622 trace positions, then HALT. Slow in a debug build
    // (about 10 minutes); `cargo test --release -p weaver --test acc8` takes seconds.
    let prog = acc8_stress_program(2);
    let t0 = std::time::Instant::now();
    let (n, steps) = lockstep(&prog, 20_000);
    let dt = t0.elapsed().as_secs_f64();
    eprintln!("compared {n} positions over {steps} steps, 0 mismatches ({:.0} model tokens/s incl. reference)", n as f64 / dt);
    assert!(steps >= 10_000, "{steps}");
    // Only what changed is written: the stress program averages fewer than 4 tokens per step (5-6 in a protocol
    // that wrote every field).
    let per_step = n as f64 / steps as f64;
    eprintln!("{per_step:.3} tokens per step");
    assert!(per_step < 4.0, "{per_step} tokens per step");
}

/// Ablation: zeroing one weight the computation needs changes the trace. Two weights: the down_proj entry
/// of one unit of `PC + 2` bit 1, and the out_proj entry that moves the ACC register head's bit 0 into the
/// residual.
#[test]
fn ablation_of_one_needed_weight_changes_the_trace() {
    use isa_api::examples::op::*;
    let prog = [LDI, 7, OUT, 0, ADDI, 250, OUT, 0, ST, 0x40, LD, 0x40, ADD, 0x40, OUT, 0, HLT, 0];
    let words: Vec<u64> = prog.iter().map(|b| *b as u64).collect();
    let mut r = Reference::new(acc8());
    r.load(0, 0, &words);
    let want = r.run(100);
    let w = woven();
    let run = |weights: &backends::WeightMap| {
        let model = SparseModel::new(&w.config, weights).unwrap();
        let prompt = host::program_prompt(&w.protocol, 0, 0, &words);
        let mut st = model.new_state();
        host::run(&w.protocol, &prompt, 100, |t| model.step_argmax(&mut st, t)).unwrap().trace.generated
    };
    assert_eq!(run(&w.weights), want);
    let a = &w.allocation;
    // (1) MLP: a unit of the gate named "n5.bit1" (node 5 of acc8 is PC + 2).
    let node = w.netlist.names.iter().position(|n| n == "n5.bit1").expect("PC+2 bit 1 is a gate");
    let slot = a.slot_of[node];
    let (l, u) = a.layers.iter().enumerate().find_map(|(l, la)| {
        la.units.iter().position(|u| matches!(w.netlist.nodes[node], weaver::net::Source::Gate(g) if Some(g) == u.gate())).map(|u| (l, u))
    }).unwrap();
    let mut ab = w.weights.clone();
    let t = ab.get_mut(&format!("model.layers.{l}.mlp.down_proj.weight")).unwrap();
    assert_ne!(t.at2(slot, u), 0.0);
    *t.at2_mut(slot, u) = 0.0;
    assert_ne!(run(&ab), want, "ablating down_proj[{slot}, {u}] of layer {l} left the trace unchanged");
    // (2) DeltaNet: the register head of ACC (layer 1), value entry of pattern 01 of group 0 -> ACC bit 0.
    let h = a.layers[1].heads.iter().position(|h| h.name == "register ACC").unwrap();
    let slot0 = a.slot_of[a.layers[1].heads[h].out[0] as usize];
    let mut ab = w.weights.clone();
    let t = ab.get_mut("model.layers.1.linear_attn.out_proj.weight").unwrap();
    let col = h * w.config.linear_value_head_dim + 1;
    assert_ne!(t.at2(slot0, col), 0.0);
    *t.at2_mut(slot0, col) = 0.0;
    assert_ne!(run(&ab), want, "ablating out_proj[{slot0}, {col}] of layer 1 left the trace unchanged");
}
