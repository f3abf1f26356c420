//! The host side of a decode loop: program loading, stepping, host devices. It knows only the machine's
//! published [`Protocol`] (the manifest) and a next-token function; no circuit, no reference evaluator. The
//! trace is read through the one decoder of [`crate::trace`].

use crate::protocol::Protocol;
use crate::trace::{Decoded, StepDecoder, StepEvents, TraceError};
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

/// Why a run stopped early: the executor failed, or the model wrote a token the protocol does not allow there.
#[derive(Debug, thiserror::Error)]
pub enum RunError<E> {
    #[error("executor: {0}")]
    Executor(E),
    #[error("the model left the protocol at generated token {index}: {error}")]
    Trace { index: usize, error: TraceError },
}

/// The prompt that loads `words` into memory `mem` at `base` and starts the machine (a final STEP).
pub fn program_prompt(proto: &Protocol, mem: u32, base: u64, words: &[u64]) -> Vec<u32> {
    let mut p = proto.load_tokens(mem, base, words);
    p.push(proto.step_token);
    p
}

/// What the decode loop reports while it runs (see [`run_observed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A generated (or injected) token, `index` into `generated`.
    Token { index: usize, token: u32 },
    /// A step was completed (`STEP`, or `HALT`): `steps` steps done, and what the step did.
    Step { steps: usize, step: &'a StepEvents },
}

/// Feed `prompt`, then decode greedily until HALT or `max_steps` STEP tokens. `next(token)` feeds one token
/// and returns the model's next token.
pub fn run<E>(proto: &Protocol, prompt: &[u32], max_steps: usize, next: impl FnMut(u32) -> Result<u32, E>) -> Result<RunOutcome, RunError<E>> {
    run_observed(proto, prompt, max_steps, next, |_| {})
}

/// [`run`], calling `observe` for every generated token and every completed step, in trace order (a host
/// prints console bytes as they come and draws progress from these).
pub fn run_observed<E>(
    proto: &Protocol,
    prompt: &[u32],
    max_steps: usize,
    next: impl FnMut(u32) -> Result<u32, E>,
    observe: impl FnMut(Event),
) -> Result<RunOutcome, RunError<E>> {
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
    next: impl FnMut(u32) -> Result<u32, E>,
    observe: impl FnMut(Event),
    inject: impl FnMut(usize) -> Vec<u32>,
) -> Result<RunOutcome, RunError<E>> {
    run_io_until(proto, prompt, max_steps, next, observe, inject, |_, _| Vec::new(), || false)
}

/// [`run_io`] that also answers requests within a step and stops at a step boundary where `stop()` says so
/// (the host's devices have seen what they wait for: [`crate::Devices::done`]; the machine itself runs on, so
/// the outcome is not `halted`). `answer(port, request)` gives the tokens of the answer to a request on an
/// output port that an input answers within the step ([`Protocol::answered`]): they are fed right after the
/// request, inside the step, and listed in `trace.injected` like the others. ([`run_io`] answers nothing: a
/// machine with such ports leaves the protocol there.)
pub fn run_io_until<E>(
    proto: &Protocol,
    prompt: &[u32],
    max_steps: usize,
    mut next: impl FnMut(u32) -> Result<u32, E>,
    mut observe: impl FnMut(Event),
    mut inject: impl FnMut(usize) -> Vec<u32>,
    mut answer: impl FnMut(u32, u64) -> Vec<u32>,
    mut stop: impl FnMut() -> bool,
) -> Result<RunOutcome, RunError<E>> {
    let mut out = RunOutcome { trace: Trace { prompt: prompt.to_vec(), ..Trace::default() }, ..RunOutcome::default() };
    let mut pred = None;
    for t in prompt {
        pred = Some(next(*t).map_err(RunError::Executor)?);
    }
    let Some(mut tok) = pred else { return Ok(out) };
    if max_steps == 0 {
        return Ok(out);
    }
    let mut dec = StepDecoder::new(proto);
    // The prompt's loads and its final STEP (or a prompt that stops inside a step, for tests).
    for (i, t) in prompt.iter().enumerate() {
        dec.push(*t).map_err(|error| RunError::Trace { index: i, error })?;
    }
    feed_injected(&mut out, &mut tok, inject(0), &mut dec, &mut next, &mut observe)?;
    loop {
        let index = out.trace.generated.len();
        out.trace.generated.push(tok);
        observe(Event::Token { index, token: tok });
        match dec.push(tok).map_err(|error| RunError::Trace { index, error })? {
            Decoded::Step(step) if step.halted => {
                out.halted = true;
                observe(Event::Step { steps: out.steps, step: &step });
                break;
            }
            Decoded::Step(step) => {
                out.steps += 1;
                out.outputs.extend_from_slice(&step.outputs);
                observe(Event::Step { steps: out.steps, step: &step });
                if out.steps >= max_steps || stop() {
                    break;
                }
                tok = next(tok).map_err(RunError::Executor)?;
                let tokens = inject(out.steps);
                feed_injected(&mut out, &mut tok, tokens, &mut dec, &mut next, &mut observe)?;
                continue;
            }
            Decoded::Request { port, value } => {
                tok = next(tok).map_err(RunError::Executor)?;
                feed_injected(&mut out, &mut tok, answer(port, value), &mut dec, &mut next, &mut observe)?;
                continue;
            }
            _ => {}
        }
        tok = next(tok).map_err(RunError::Executor)?;
    }
    Ok(out)
}

/// What [`run_devices`] gave: the trace and steps, how the run ended and the devices' finish (status, summary).
#[derive(Clone, Debug, PartialEq)]
pub struct DevicesRun {
    pub out: RunOutcome,
    pub end: crate::front::RunEnd,
    pub finish: crate::front::Finish,
}

/// The host loop with a machine's host `devices` ([`crate::Devices`]): `prompt`, then the tokens `next` predicts
/// (a network's, or [`crate::Predictor`]'s), every step handed to the devices and their injections fed at each
/// step boundary (their answers to requests within a step too, [`crate::Devices::answer`]), until the machine
/// halts, the devices are done or `max_steps` steps ran; then the devices' [`crate::Devices::finish`]. `on_step(steps, tokens, devices)` follows every step (`tokens`: prompt and
/// generated so far), for a progress line. The one loop every host runs (`loom run`, `loom eval`, the NES
/// tests).
pub fn run_devices<E>(
    proto: &Protocol,
    prompt: &[u32],
    devices: &mut dyn crate::Devices,
    max_steps: usize,
    next: impl FnMut(u32) -> Result<u32, E>,
    mut on_step: impl FnMut(usize, usize, &dyn crate::Devices),
) -> Result<DevicesRun, RunError<E>> {
    use crate::front::RunEnd;
    let devices = std::cell::RefCell::new(devices);
    let mut generated = 0usize;
    let out = run_io_until(
        proto,
        prompt,
        max_steps,
        next,
        |ev| match ev {
            Event::Token { .. } => generated += 1,
            Event::Step { steps, step } => {
                devices.borrow_mut().step(step);
                on_step(steps, prompt.len() + generated, &**devices.borrow());
            }
        },
        |s| devices.borrow_mut().inject(s).into_iter().flat_map(|(port, v)| proto.input_tokens(port, v)).collect(),
        |port, request| proto.answer_of(port).map(|input| proto.input_tokens(input, devices.borrow_mut().answer(port, request))).unwrap_or_default(),
        || devices.borrow().done(),
    )?;
    let devices = devices.into_inner();
    let end = if out.halted {
        RunEnd::Halted
    } else if devices.done() {
        RunEnd::Devices
    } else {
        RunEnd::StepLimit
    };
    let finish = devices.finish(end);
    Ok(DevicesRun { out, end, finish })
}

/// Feed the tokens the host injects (at a step boundary, or a request's answer within its step), decoded and
/// checked like generated ones; `tok` becomes the model's prediction after the last one.
fn feed_injected<E>(
    out: &mut RunOutcome,
    tok: &mut u32,
    tokens: Vec<u32>,
    dec: &mut StepDecoder,
    next: &mut impl FnMut(u32) -> Result<u32, E>,
    observe: &mut impl FnMut(Event),
) -> Result<(), RunError<E>> {
    for t in tokens {
        let i = out.trace.generated.len();
        dec.push(t).map_err(|error| RunError::Trace { index: i, error })?;
        out.trace.generated.push(t);
        out.trace.injected.push((i, t));
        observe(Event::Token { index: i, token: t });
        *tok = next(t).map_err(RunError::Executor)?;
    }
    Ok(())
}
