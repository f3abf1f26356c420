//! Host input devices in the weights: `isa_api::examples::io8` reads two input ports (DATA, and IRQ as an
//! interrupt line) that the host sets by injecting tokens between steps. The woven machine on the sparse
//! executor, driven by the circuit-free host loop (`host::run_io`), gives the reference evaluator's trace with
//! the injected tokens at the same positions; transformers gives the same trace when fed the same injections.
//! `isa_api::examples::ask8` asks the host within a step (a request port that an input answers): the answer's
//! token comes inside the step, after the request, and the woven machine goes on with it.

mod common;

use isa_api::examples::{ask8, ask8_answer, io8, io8_devices};
use isa_api::Reference;
use isa_api::host;
use weaver::{export::save, weave, WeaveOptions};

#[test]
fn injected_inputs_drive_the_woven_machine_like_the_reference() {
    let w = weave(&io8(120), &WeaveOptions::default()).unwrap();
    let model = backends::sparse::SparseModel::new(&w.config, &w.weights).unwrap();
    let mut r = Reference::new(io8(120));
    let (want, want_injected) = r.run_io(1000, io8_devices);
    let proto = &w.protocol;
    let prompt = vec![proto.step_token];
    let mut st = model.new_state();
    let devices = |s: usize| io8_devices(s).into_iter().flat_map(|(p, v)| proto.input_tokens(p, v)).collect::<Vec<u32>>();
    let out = host::run_io(proto, &prompt, 1000, |t| model.step_argmax(&mut st, t), |_| {}, devices).unwrap();
    assert!(out.halted);
    assert_eq!(out.trace.generated, want);
    assert_eq!(out.trace.injected, want_injected);
    let irqs = out.outputs.len();
    assert_eq!(irqs, 17, "an interrupt every 7 steps: OUT shows ACC at each");
    eprintln!("io8: {} positions ({} injected) equal to the reference, {irqs} interrupts taken", want.len(), want_injected.len());
    // Without the interrupt line the trace differs: the injections are what drives it.
    let mut st = model.new_state();
    let data_only = |s: usize| io8_devices(s).into_iter().filter(|(p, _)| *p == 0).flat_map(|(p, v)| proto.input_tokens(p, v)).collect::<Vec<u32>>();
    let out2 = host::run_io(proto, &prompt, 1000, |t| model.step_argmax(&mut st, t), |_| {}, data_only).unwrap();
    assert!(out2.outputs.is_empty());
    assert_ne!(out2.trace.generated, want);
}

/// transformers follows the injected inputs ([`hf_follows`]: decoded in segments between them).
#[test]
fn transformers_follows_injected_inputs() {
    let Some((python, script)) = common::hf_setup("transformers_follows_injected_inputs") else {
        return;
    };
    let w = weave(&io8(12), &WeaveOptions { fit: None, attention_layer: true }).unwrap();
    // Injections only at step boundaries 0 and 5, so that three segments cover the run.
    let devices = |s: usize| if s == 0 || s == 5 { io8_devices(s + 3) } else { Vec::new() };
    let mut r = Reference::new(io8(12));
    let (want, injected) = r.run_io(100, devices);
    assert!(injected.len() >= 2);
    hf_follows(&python, &script, &w, &want, &injected, "io");
    eprintln!("transformers: {} positions ({} injected) equal to the reference", want.len(), injected.len());
}

/// transformers has no injection hook in `hf_decode.py`, so `w`'s run is decoded in segments: greedy from the
/// prompt (`STEP`) up to the first injected token, then from the prompt, the trace so far and the injected
/// tokens, and so on; every segment must be `want`'s (`injected`: index in `want` and token, as the host loop
/// lists them). `tag` names the checkpoint's temporary directory.
fn hf_follows(python: &str, script: &std::path::Path, w: &weaver::Woven, want: &[u32], injected: &[(usize, u32)], tag: &str) {
    let dir = std::env::temp_dir().join(format!("loom-weaver-hf-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    save(w, &dir).unwrap();
    let pf = dir.with_extension("prompt.json");
    let mut seq = vec![w.protocol.step_token];
    let mut pos = 0;
    while pos < want.len() {
        // copy injected tokens, then decode greedily up to the next injection (or the end)
        while let Some((_, t)) = injected.iter().find(|(i, _)| *i == pos) {
            seq.push(*t);
            pos += 1;
        }
        let stop = injected.iter().map(|(i, _)| *i).find(|i| *i > pos).unwrap_or(want.len());
        std::fs::write(&pf, serde_json::to_string(&seq).unwrap()).unwrap();
        let got = common::hf_decode(python, script, &dir, common::HfPrompt::File(&pf), stop - pos, "chunked");
        assert_eq!(got, want[pos..stop], "segment from position {pos}");
        seq.extend(&got);
        pos = stop;
    }
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_file(&pf).unwrap();
}

/// The woven ask8 on the sparse executor, its requests answered within the step by the host loop: the reference's
/// trace, answers at the same positions; transformers, fed the same answers, decodes the same tokens between them.
#[test]
fn answers_within_a_step_drive_the_woven_machine_like_the_reference() {
    let w = weave(&ask8(60), &WeaveOptions::default()).unwrap();
    let model = backends::sparse::SparseModel::new(&w.config, &w.weights).unwrap();
    let mut r = Reference::new(ask8(60));
    let (want, want_injected) = r.run_io_answered(1000, |_| Vec::new(), ask8_answer);
    assert_eq!(want_injected.len(), 30);
    let proto = &w.protocol;
    let prompt = vec![proto.step_token];
    let mut st = model.new_state();
    let answer = |port: u32, req: u64| proto.input_tokens(proto.answer_of(port).unwrap(), ask8_answer(port, req));
    let out = host::run_io_until(proto, &prompt, 1000, |t| model.step_argmax(&mut st, t), |_| {}, |_| Vec::new(), answer, || false).unwrap();
    assert!(out.halted);
    assert_eq!(out.trace.generated, want);
    assert_eq!(out.trace.injected, want_injected);
    eprintln!("ask8: {} positions ({} answers within a step) equal to the reference", want.len(), want_injected.len());
    let Some((python, script)) = common::hf_setup("answers_within_a_step_drive_the_woven_machine_like_the_reference") else {
        return;
    };
    let w = weave(&ask8(8), &WeaveOptions { fit: None, attention_layer: true }).unwrap();
    let mut r = Reference::new(ask8(8));
    let (want, injected) = r.run_io_answered(100, |_| Vec::new(), ask8_answer);
    hf_follows(&python, &script, &w, &want, &injected, "ask");
    eprintln!("transformers: ask8, {} positions ({} answers within a step) equal to the reference", want.len(), injected.len());
}
