//! The host side of a decode loop: program loading, stepping, the output port. It knows only the machine's
//! published [`Protocol`] (the manifest) and a next-token function; no circuit, no reference evaluator.

use isa_api::{FieldRole, Protocol, Token};
use serde::{Deserialize, Serialize};

/// A replayable trace: `{"prompt": [ids], "generated": [ids], "injected": [[i, id], ...]}` where `injected`
/// lists host-injected tokens with their index in `generated`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub prompt: Vec<u32>,
    pub generated: Vec<u32>,
    pub injected: Vec<(usize, u32)>,
}

/// What a run produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutcome {
    pub trace: Trace,
    pub halted: bool,
    /// Completed machine steps (STEP tokens generated).
    pub steps: usize,
    /// Output-port writes `(port, value)` in order.
    pub outputs: Vec<(u32, u64)>,
}

/// The prompt that loads `words` into memory `mem` at `base` and starts the machine (a final STEP).
pub fn program_prompt(proto: &Protocol, mem: u32, base: u64, words: &[u64]) -> Vec<u32> {
    let mut p = proto.load_tokens(mem, base, words);
    p.push(proto.step_token);
    p
}

/// What the decode loop reports while it runs (see [`run_observed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A complete value was written to output port `port` (all its chunks seen).
    Output { port: u32, value: u64 },
    /// A generated token (`index` into `generated`), decoded.
    Token { index: usize, token: u32 },
    /// A STEP token was generated: `steps` steps done.
    Step { steps: usize },
}

/// Feed `prompt`, then decode greedily until HALT or `max_steps` STEP tokens. `next(token)` feeds one token
/// and returns the model's next token.
pub fn run<E>(proto: &Protocol, prompt: &[u32], max_steps: usize, next: impl FnMut(u32) -> Result<u32, E>) -> Result<RunOutcome, E> {
    run_observed(proto, prompt, max_steps, next, |_| {})
}

/// [`run`], calling `observe` for every generated token, completed output-port write and step, in trace
/// order (a host prints console bytes as they come and draws progress from these).
pub fn run_observed<E>(
    proto: &Protocol,
    prompt: &[u32],
    max_steps: usize,
    next: impl FnMut(u32) -> Result<u32, E>,
    observe: impl FnMut(Event),
) -> Result<RunOutcome, E> {
    run_io(proto, prompt, max_steps, next, observe, |_| Vec::new())
}

/// [`run_observed`] for a host with input devices: at every step boundary (after the prompt, `steps = 0`,
/// and after each generated `STEP`) `inject(steps)` returns the tokens the host injects there (input-port
/// values, [`Protocol::input_tokens`]: an answer to an IO read request seen in the step's output, an
/// interrupt line raised or lowered, a controller state). Each is fed to the model in place of its
/// prediction, appended to `generated` and listed in `trace.injected` with its index, so the trace replays.
pub fn run_io<E>(
    proto: &Protocol,
    prompt: &[u32],
    max_steps: usize,
    mut next: impl FnMut(u32) -> Result<u32, E>,
    mut observe: impl FnMut(Event),
    mut inject: impl FnMut(usize) -> Vec<u32>,
) -> Result<RunOutcome, E> {
    let mut out = RunOutcome { trace: Trace { prompt: prompt.to_vec(), ..Trace::default() }, ..RunOutcome::default() };
    let mut pred = None;
    for t in prompt {
        pred = Some(next(*t)?);
    }
    let Some(mut tok) = pred else { return Ok(out) };
    inject_at(&mut out, &mut tok, 0, &mut next, &mut inject, &mut observe)?;
    let mut chunks: Vec<u64> = Vec::new();
    loop {
        out.trace.generated.push(tok);
        observe(Event::Token { index: out.trace.generated.len() - 1, token: tok });
        match proto.decode(tok) {
            Some(Token::Halt) => {
                out.halted = true;
                break;
            }
            Some(Token::Step) => {
                out.steps += 1;
                observe(Event::Step { steps: out.steps });
                if out.steps >= max_steps {
                    break;
                }
                tok = next(tok)?;
                let steps = out.steps;
                inject_at(&mut out, &mut tok, steps, &mut next, &mut inject, &mut observe)?;
                continue;
            }
            Some(Token::Value { field, value }) => {
                if let FieldRole::Out { port, chunk } = proto.fields[field as usize].role {
                    if chunk == 0 {
                        chunks.clear();
                    }
                    chunks.push(value << proto.fields[field as usize].lo);
                    let last = proto.fields.get(field as usize + 1).is_none_or(|f| !matches!(f.role, FieldRole::Out { port: p, .. } if p == port));
                    if last {
                        let value = chunks.iter().fold(0, |a, b| a | b);
                        out.outputs.push((port, value));
                        observe(Event::Output { port, value });
                    }
                }
            }
            _ => {}
        }
        tok = next(tok)?;
    }
    Ok(out)
}

/// Feed the tokens the host injects at step boundary `steps`; `tok` becomes the model's prediction after the
/// last one.
fn inject_at<E>(
    out: &mut RunOutcome,
    tok: &mut u32,
    steps: usize,
    next: &mut impl FnMut(u32) -> Result<u32, E>,
    inject: &mut impl FnMut(usize) -> Vec<u32>,
    observe: &mut impl FnMut(Event),
) -> Result<(), E> {
    for t in inject(steps) {
        let i = out.trace.generated.len();
        out.trace.generated.push(t);
        out.trace.injected.push((i, t));
        observe(Event::Token { index: i, token: t });
        *tok = next(t)?;
    }
    Ok(())
}
