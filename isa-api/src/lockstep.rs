//! Lockstep of a trace against the machine's reference evaluator: the trace a model generated (with its
//! host-injected tokens) is replayed on [`Reference`], which computes every step from the circuit; each
//! generated position must equal the reference's token. The reference only checks the finished trace; it never
//! drives the model.

use crate::eval::Reference;
use crate::front::LoadImage;
use crate::host::Trace;
use crate::machine::MachineDesc;
use crate::trace::{Decoded, StepDecoder};

/// The first position where the trace and the reference differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Index into `generated`.
    pub position: usize,
    /// Machine step (0-based) it falls in.
    pub step: usize,
    /// The trace's token and the reference's, described (`PC.0=17`).
    pub model: String,
    pub reference: String,
}

/// What a lockstep replay compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayReport {
    /// Generated positions compared (injected ones included: the reference applies them).
    pub positions: usize,
    /// Machine steps replayed.
    pub steps: usize,
    /// Instructions the reference retired in those steps (micro-step rule).
    pub instructions: u64,
    /// The reference halted within the trace.
    pub halted: bool,
    /// The first difference, if any (the replay stops there).
    pub mismatch: Option<Mismatch>,
}

/// Replay `trace.generated` on the reference machine of `desc` loaded with `image`.
pub fn replay(desc: &MachineDesc, image: &LoadImage, trace: &Trace) -> ReplayReport {
    let mut r = Reference::new(desc.clone());
    image.load_into(&mut r);
    let tokens = &trace.generated;
    let p = r.protocol.clone();
    let mut rep = ReplayReport { positions: 0, steps: 0, instructions: 0, halted: false, mismatch: None };
    let mut pos = 0;
    let mut host = StepDecoder::new(&p);
    while pos < tokens.len() {
        // Host-injected tokens at this step boundary: the reference takes the same values.
        while pos < tokens.len() && p.is_host_token(tokens[pos]) {
            match host.push(tokens[pos]) {
                Ok(Decoded::Input { port, value }) => r.inject(port, value),
                Ok(_) => {}
                Err(e) => {
                    rep.mismatch = Some(Mismatch { position: pos, step: rep.steps, model: p.describe(tokens[pos]), reference: format!("(not an injection: {e})") });
                    return rep;
                }
            }
            pos += 1;
            rep.positions += 1;
        }
        if pos == tokens.len() {
            break;
        }
        // An answer within the step (after its request, [`crate::Protocol::answered`]): the reference takes it
        // before computing the step, which the request does not depend on.
        let ends = |t: u32| !matches!(p.decode(t), Some(crate::protocol::Token::Value { end: false, .. }));
        for &t in tokens[pos..].iter().take_while(|&&t| !ends(t)) {
            r.inject_token(t);
        }
        let o = r.step();
        let want = r.step_tokens(&o);
        let mut j = 0;
        for w in &want {
            while tokens.get(pos + j).is_some_and(|&t| p.is_host_token(t)) {
                j += 1;
                rep.positions += 1;
            }
            let Some(g) = tokens.get(pos + j) else { break };
            if g != w {
                rep.mismatch = Some(Mismatch { position: pos + j, step: rep.steps, model: p.describe(*g), reference: p.describe(*w) });
                return rep;
            }
            j += 1;
            rep.positions += 1;
        }
        pos += j;
        if o.halted {
            rep.halted = true;
            break;
        }
        rep.steps += 1;
        if desc.micro_step.is_none_or(|m| r.state.regs[m as usize] == 0) {
            rep.instructions += 1;
        }
    }
    rep
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::MemLoad;

    #[test]
    fn a_reference_trace_replays_and_a_changed_token_is_found() {
        let d = crate::examples::acc8();
        let prog: Vec<u64> = crate::examples::acc8_stress_program(1).iter().map(|b| *b as u64).collect();
        let image = LoadImage::of_loads(vec![MemLoad { mem: 0, base: 0, words: prog.clone() }]);
        let mut r = Reference::new(d.clone());
        r.load(0, 0, &prog);
        let generated = r.run(500);
        let mut trace = Trace { prompt: image.prompt(&r.protocol), generated: generated.clone(), injected: vec![] };
        let rep = replay(&d, &image, &trace);
        assert_eq!((rep.positions, rep.steps, rep.mismatch.clone()), (generated.len(), 500, None));
        trace.generated[100] = if trace.generated[100] == 2 { 3 } else { 2 };
        let m = replay(&d, &image, &trace).mismatch.expect("a mismatch");
        assert_eq!(m.position, 100);
        // io8 with its devices' injections
        let d = crate::examples::io8(40);
        let mut r = Reference::new(d.clone());
        let (generated, injected) = r.run_io(100, crate::examples::io8_devices);
        let trace = Trace { prompt: vec![0], generated: generated.clone(), injected };
        let rep = replay(&d, &LoadImage::default(), &trace);
        assert_eq!((rep.positions, rep.halted, rep.mismatch), (generated.len(), true, None));
    }
}
