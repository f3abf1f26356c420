//! The one trace decoder: tokens -> fields -> events, and the inverse.
//!
//! A machine step is written as the step fields it changes, in [`Protocol::step_fields`] order, the last one as
//! its end variant (or the single token `STEP` when nothing changed, or `HALT`); see [`crate::protocol`] for the
//! rule. Between steps the host may inject input-port values (`IN_<port>` chunks) and, in the prompt, load words
//! into memories (`LOAD_<mem>_ADDR` chunks, then `LOAD_<mem>_DATA` chunks; the last data chunk commits the word).
//!
//! - [`Protocol::emitted`] is the rule: which fields a step writes, given their values and the
//!   [`TraceHistory`] (every field's latest value); [`Protocol::step_tokens`] writes them as tokens;
//!   [`StepDecoder`] reads them back, token by token, checking that every token may stand where it stands.
//! - [`Protocol::step_events`] turns a step's written fields into what happened: every register's next value,
//!   the memory writes, the output-port writes ([`StepEvents`]).
//!
//! Every host loop, lockstep check and test reads traces through this module; nothing else decodes tokens.

use crate::protocol::{FieldRole, Protocol, Token};
use serde::{Deserialize, Serialize};

/// A memory write of one step: memory `mem`, word address `addr`, `data`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemWriteEvent {
    pub mem: u32,
    pub addr: u64,
    pub data: u64,
}

/// What one step of the trace says happened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepEvents {
    /// The step was `HALT`: nothing else happened and the run is over.
    pub halted: bool,
    /// The step fields the step wrote, in [`Protocol::step_fields`] order (`None`: not written, because its
    /// value did not change or its write or port was off); empty when halted. [`Protocol::step_tokens`] writes
    /// these back as tokens.
    pub fields: Vec<Option<u64>>,
    /// Every register's value after the step, by register index (empty when halted).
    pub regs: Vec<u64>,
    /// Memory writes of the step (those with a token: a write equal to its memory's previous write has none
    /// and changes nothing), in protocol order.
    pub writes: Vec<MemWriteEvent>,
    /// Output-port writes `(port, value)`, in protocol order.
    pub outputs: Vec<(u32, u64)>,
    /// Memories cleared by the step (every word 0 after it; their write of this step is dropped), in protocol
    /// order.
    pub clears: Vec<u32>,
}

impl StepEvents {
    /// Register `reg`'s value after the step (0 when halted).
    pub fn reg(&self, reg: u32) -> u64 {
        self.regs.get(reg as usize).copied().unwrap_or(0)
    }
    /// The value written to output port `port` this step, if it was written.
    pub fn output(&self, port: u32) -> Option<u64> {
        self.outputs.iter().find(|(p, _)| *p == port).map(|(_, v)| *v)
    }
    /// The write to memory `mem` this step, if any.
    pub fn write(&self, mem: u32) -> Option<MemWriteEvent> {
        self.writes.iter().find(|w| w.mem == mem).copied()
    }
    /// Did this step retire an instruction? Yes unless halted or the micro-step register (see
    /// [`crate::MachineFace::micro_step`]) is nonzero after it.
    pub fn retired(&self, micro_step: Option<u32>) -> bool {
        !self.halted && micro_step.is_none_or(|r| self.reg(r) == 0)
    }
}

/// What the "only what changed" rule refers to: the latest value of every step field (0 before its first
/// token) and which memories have had a write. The reference evaluator (writing a trace) and the decoder
/// (reading one) each keep one; in the woven network it is layer 0's staging heads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceHistory {
    /// Per step position (index into [`Protocol::step_fields`]).
    pub latest: Vec<u64>,
    /// Per memory index.
    pub written: Vec<bool>,
}

impl TraceHistory {
    /// The history before the first step: every value 0, no memory written.
    pub fn new(p: &Protocol) -> Self {
        let mems = p.fields.iter().filter_map(|f| if let FieldRole::LoadAddr { mem, .. } | FieldRole::MemAddr { mem, .. } = f.role { Some(mem as usize + 1) } else { None }).max().unwrap_or(0);
        Self { latest: vec![0; p.step_fields.len()], written: vec![false; mems] }
    }

    /// Take in a step that writes `fields` (as [`StepEvents::fields`]): their values become the latest, and a
    /// memory whose first address chunk is written has been written.
    /// Take in register presets (`(register, value)` pairs, as [`Protocol::preset_tokens`] writes them in a
    /// prompt): each register field's latest value becomes its chunk of the value.
    pub fn preset(&mut self, p: &Protocol, regs: &[(u32, u64)]) {
        for (k, &fi) in p.step_fields.iter().enumerate() {
            let f = &p.fields[fi as usize];
            if let FieldRole::RegNext { reg, .. } = f.role {
                if let Some((_, v)) = regs.iter().rev().find(|(r, _)| *r == reg) {
                    self.latest[k] = (v >> f.lo) & ((1u64 << f.width) - 1);
                }
            }
        }
    }

    pub fn record(&mut self, p: &Protocol, fields: &[Option<u64>]) {
        for (k, v) in fields.iter().enumerate() {
            if let Some(v) = v {
                self.latest[k] = *v;
                match p.fields[p.step_fields[k] as usize].role {
                    FieldRole::MemAddr { mem, chunk: 0 } => self.written[mem as usize] = true,
                    FieldRole::MemClear { mem } => {
                        // The memory's write history starts again: never written, address chunk 0 at 0.
                        self.written[mem as usize] = false;
                        let a0 = p.step_fields.iter().position(|&fi| p.fields[fi as usize].role == FieldRole::MemAddr { mem, chunk: 0 });
                        if let Some(a0) = a0 {
                            self.latest[a0] = 0;
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

/// A token the protocol does not allow where it stands. `position` counts the tokens pushed into the decoder.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("trace position {position}: {msg}")]
pub struct TraceError {
    pub position: usize,
    pub msg: String,
}

/// What one token completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// Nothing complete yet (a field inside a step, or a chunk of a load or an injection).
    Partial,
    /// A step (ended by `STEP`) or `HALT`.
    Step(StepEvents),
    /// A host load of `word` into memory `mem` at `addr` (prompt tokens).
    Load { mem: u32, addr: u64, word: u64 },
    /// A host injection of `value` on input port `port` (between steps, or within a step: the answer to its
    /// [`Decoded::Request`]).
    Input { port: u32, value: u64 },
    /// The step wrote output port `port`, which an input answers within the step ([`Protocol::answered`]):
    /// its `value` (the request). The next tokens must be the answer's `IN_<input>` chunks; the step goes on
    /// after them.
    Request { port: u32, value: u64 },
    /// The prompt's final `STEP`, which starts the machine (a bare `STEP` before the first step).
    Start,
}

impl Protocol {
    /// The rule of the trace: the fields a step writes, given the value of every step field (`values`, in
    /// [`Self::step_fields`] order; `None` for the fields of a write or port that is off this step) and the
    /// history before the step. A register chunk is written iff it changed; a memory write's chunk iff the
    /// write is on and the chunk differs from its latest value (the address's first chunk also at the memory's
    /// first write); an output port's chunks iff the port is written.
    pub fn emitted(&self, hist: &TraceHistory, values: &[Option<u64>]) -> Vec<Option<u64>> {
        self.step_fields
            .iter()
            .enumerate()
            .map(|(k, fi)| {
                let v = values[k]?;
                let changed = v != hist.latest[k];
                let write = match self.fields[*fi as usize].role {
                    FieldRole::RegNext { .. } => changed,
                    FieldRole::MemAddr { mem, chunk: 0 } => changed || !hist.written[mem as usize],
                    FieldRole::MemAddr { .. } | FieldRole::MemData { .. } => changed,
                    FieldRole::Out { .. } | FieldRole::MemClear { .. } => true,
                    FieldRole::LoadAddr { .. } | FieldRole::LoadData { .. } | FieldRole::In { .. } => false,
                };
                write.then_some(v)
            })
            .collect()
    }

    /// The tokens of one step that writes `fields` (as [`StepEvents::fields`]): each written field in order,
    /// the last as its end variant; `STEP` alone when nothing is written. The inverse of [`StepDecoder`].
    pub fn step_tokens(&self, fields: &[Option<u64>]) -> Vec<u32> {
        let last = fields.iter().rposition(|f| f.is_some());
        let Some(last) = last else { return vec![self.step_token] };
        fields.iter().enumerate().filter_map(|(k, v)| v.map(|v| self.encode(self.step_fields[k], v, k == last))).collect()
    }

    /// The events of a step that writes `fields` (as [`StepEvents::fields`]), after which `hist` holds the
    /// step's latest values ([`TraceHistory::record`]).
    pub fn step_events(&self, hist: &mut TraceHistory, fields: &[Option<u64>]) -> StepEvents {
        hist.record(self, fields);
        let nregs = self.step_fields.iter().filter_map(|f| if let FieldRole::RegNext { reg, .. } = self.fields[*f as usize].role { Some(reg as usize + 1) } else { None }).max().unwrap_or(0);
        let mut ev = StepEvents { halted: false, fields: fields.to_vec(), regs: vec![0; nregs], writes: Vec::new(), outputs: Vec::new(), clears: Vec::new() };
        // A memory's write is reported when any of its fields was written this step (and it was not cleared
        // after it: the clear resets `written`).
        let mut now = vec![false; hist.written.len()];
        for (k, &fi) in self.step_fields.iter().enumerate() {
            if let (Some(_), FieldRole::MemAddr { mem, .. } | FieldRole::MemData { mem, .. }) = (fields[k], self.fields[fi as usize].role) {
                now[mem as usize] = hist.written[mem as usize];
            }
        }
        for (k, &fi) in self.step_fields.iter().enumerate() {
            let f = &self.fields[fi as usize];
            let v = hist.latest[k] << f.lo;
            match f.role {
                FieldRole::RegNext { reg, .. } => ev.regs[reg as usize] |= v,
                FieldRole::MemAddr { mem, .. } | FieldRole::MemData { mem, .. } if now[mem as usize] => {
                    let w = match ev.writes.iter().position(|w| w.mem == mem) {
                        Some(i) => &mut ev.writes[i],
                        None => {
                            ev.writes.push(MemWriteEvent { mem, addr: 0, data: 0 });
                            ev.writes.last_mut().expect("pushed")
                        }
                    };
                    if matches!(f.role, FieldRole::MemAddr { .. }) { w.addr |= v } else { w.data |= v }
                }
                FieldRole::MemClear { mem } if fields[k].is_some() => ev.clears.push(mem),
                FieldRole::Out { port, chunk } if fields[k].is_some() => {
                    if chunk == 0 {
                        ev.outputs.push((port, 0));
                    }
                    if let Some(o) = ev.outputs.last_mut() {
                        o.1 |= v;
                    }
                }
                _ => {}
            }
        }
        ev
    }

    /// Is `token` a host-only token (a load or an input injection), which the machine never writes?
    pub fn is_host_token(&self, token: u32) -> bool {
        matches!(self.decode(token), Some(Token::Value { field, .. }) if self.fields[field as usize].host_only)
    }

    /// Decode a whole token sequence into its steps (loads and injections are skipped; see [`StepDecoder`]
    /// for them). A trailing incomplete step is dropped.
    pub fn decode_steps(&self, tokens: &[u32]) -> Result<Vec<StepEvents>, TraceError> {
        let mut d = StepDecoder::new(self);
        let mut out = Vec::new();
        for &t in tokens {
            if let Decoded::Step(s) = d.push(t)? {
                out.push(s);
            }
        }
        Ok(out)
    }
}

/// Reads a trace token by token (see the module docs).
#[derive(Clone, Debug)]
pub struct StepDecoder<'p> {
    proto: &'p Protocol,
    /// Smallest step position the next field of the current step may have (0: between steps).
    k: usize,
    fields: Vec<Option<u64>>,
    /// Step position of every step field (`usize::MAX` for host-only fields).
    position_of: Vec<usize>,
    hist: TraceHistory,
    /// A load in progress: memory, address, data so far.
    load: Option<(u32, u64, u64)>,
    /// An injection in progress: port, value so far.
    input: Option<(u32, u64)>,
    /// The input port whose answer the step waits for (after its [`Decoded::Request`]).
    awaiting: Option<u32>,
    position: usize,
    /// The machine has started: its first `STEP`, or a step that ended (a trace read from the middle).
    started: bool,
}

impl<'p> StepDecoder<'p> {
    /// A decoder at the start of a trace.
    pub fn new(proto: &'p Protocol) -> Self {
        let mut position_of = vec![usize::MAX; proto.fields.len()];
        for (k, f) in proto.step_fields.iter().enumerate() {
            position_of[*f as usize] = k;
        }
        Self { proto, k: 0, fields: vec![None; proto.step_fields.len()], position_of, hist: TraceHistory::new(proto), load: None, input: None, awaiting: None, position: 0, started: false }
    }

    /// Is the decoder between steps (no field of a step seen yet)?
    pub fn at_boundary(&self) -> bool {
        self.k == 0
    }

    /// The latest value of every step field and the memories written so far.
    pub fn history(&self) -> &TraceHistory {
        &self.hist
    }

    /// Feed one token.
    pub fn push(&mut self, token: u32) -> Result<Decoded, TraceError> {
        let pos = self.position;
        self.position += 1;
        let p = self.proto;
        let err = |msg: String| TraceError { position: pos, msg };
        let expected = |k: usize| -> String {
            match p.step_fields.get(k) {
                Some(f) => format!("field {} or a later one", p.fields[*f as usize].name),
                None => "the end of the step".to_string(),
            }
        };
        let Some(tok) = p.decode(token) else { return Err(err(format!("token {token} is outside the vocabulary ({} tokens)", p.vocab_size))) };
        match tok {
            Token::Step => {
                if self.k != 0 && !self.started && self.presets_only() {
                    // The prompt's register presets ([`Protocol::preset_tokens`]), committed by its `STEP`.
                    let fields = std::mem::take(&mut self.fields);
                    self.hist.record(p, &fields);
                    self.fields = vec![None; fields.len()];
                    self.k = 0;
                    self.started = true;
                    return Ok(Decoded::Start);
                }
                if self.k != 0 {
                    return Err(err(format!("STEP inside a step, where {} was expected", expected(self.k))));
                }
                if !self.started {
                    self.started = true;
                    return Ok(Decoded::Start);
                }
                Ok(Decoded::Step(self.finish()))
            }
            Token::Halt => {
                if self.k != 0 {
                    return Err(err(format!("HALT inside a step, where {} was expected", expected(self.k))));
                }
                Ok(Decoded::Step(StepEvents { halted: true, ..StepEvents::default() }))
            }
            Token::Value { field, value, .. } if p.fields[field as usize].host_only => {
                let f = &p.fields[field as usize];
                // Inside a step only the answer it waits for (its first chunk, or the rest of it).
                let answer = match f.role {
                    FieldRole::In { port, chunk: 0 } => self.awaiting == Some(port),
                    FieldRole::In { port, .. } => self.awaiting == Some(port) && self.input.is_some_and(|i| i.0 == port),
                    _ => false,
                };
                if self.k != 0 && !answer {
                    let want = match self.awaiting {
                        Some(i) => format!("the answer on input {i}"),
                        None => expected(self.k),
                    };
                    return Err(err(format!("host token {} inside a step, where {want} was expected", p.describe(token))));
                }
                let v = value << f.lo;
                let next_same = |pred: &dyn Fn(FieldRole) -> bool| p.fields.get(field as usize + 1).is_some_and(|n| pred(n.role));
                match f.role {
                    FieldRole::LoadAddr { mem, chunk } => {
                        let (m, a, _) = if chunk == 0 { (mem, 0, 0) } else { self.load.filter(|l| l.0 == mem).ok_or_else(|| err(format!("{} without its first chunk", f.name)))? };
                        self.load = Some((m, a | v, 0));
                        Ok(Decoded::Partial)
                    }
                    FieldRole::LoadData { mem, .. } => {
                        let (m, a, d) = self.load.filter(|l| l.0 == mem).ok_or_else(|| err(format!("{} without a load address", f.name)))?;
                        let d = d | v;
                        if next_same(&|r| matches!(r, FieldRole::LoadData { mem: n, .. } if n == mem)) {
                            self.load = Some((m, a, d));
                            Ok(Decoded::Partial)
                        } else {
                            self.load = None;
                            Ok(Decoded::Load { mem, addr: a, word: d })
                        }
                    }
                    FieldRole::In { port, chunk } => {
                        let (pt, acc) = if chunk == 0 { (port, 0) } else { self.input.filter(|i| i.0 == port).ok_or_else(|| err(format!("{} without its first chunk", f.name)))? };
                        let acc = acc | v;
                        if next_same(&|r| matches!(r, FieldRole::In { port: n, .. } if n == port)) {
                            self.input = Some((pt, acc));
                            Ok(Decoded::Partial)
                        } else {
                            self.input = None;
                            if self.awaiting == Some(port) {
                                self.awaiting = None;
                            }
                            Ok(Decoded::Input { port, value: acc })
                        }
                    }
                    _ => Err(err(format!("{} is not a host field", f.name))),
                }
            }
            Token::Value { field, value, end } => {
                if let Some(i) = self.awaiting {
                    return Err(err(format!("{} where the answer on input {i} was expected", p.describe(token))));
                }
                let kk = self.position_of[field as usize];
                if kk < self.k {
                    return Err(err(format!("{} where {} was expected", p.describe(token), expected(self.k))));
                }
                self.fields[kk] = Some(value);
                self.k = kk + 1;
                // The last chunk of a port an input answers within the step: the request.
                if let FieldRole::Out { port, .. } = p.fields[field as usize].role {
                    let last = p.step_fields.get(kk + 1).is_none_or(|n| !matches!(p.fields[*n as usize].role, FieldRole::Out { port: q, .. } if q == port));
                    if let (true, Some(input)) = (last, p.answer_of(port)) {
                        if end {
                            return Err(err(format!("the step ends at its request on port {port}, before the answer on input {input}")));
                        }
                        self.awaiting = Some(input);
                        let value = (0..=kk)
                            .filter(|&j| matches!(p.fields[p.step_fields[j] as usize].role, FieldRole::Out { port: q, .. } if q == port))
                            .map(|j| self.fields[j].unwrap_or(0) << p.fields[p.step_fields[j] as usize].lo)
                            .fold(0, |a, b| a | b);
                        return Ok(Decoded::Request { port, value });
                    }
                }
                if !end {
                    return Ok(Decoded::Partial);
                }
                self.started = true;
                // An output port is written whole or not at all: per port, (chunks written, chunks).
                let mut ports: Vec<(u32, usize, usize)> = Vec::new();
                for (j, fi) in p.step_fields.iter().enumerate() {
                    if let FieldRole::Out { port, .. } = p.fields[*fi as usize].role {
                        match ports.iter_mut().find(|e| e.0 == port) {
                            Some(e) => (e.1, e.2) = (e.1 + self.fields[j].is_some() as usize, e.2 + 1),
                            None => ports.push((port, self.fields[j].is_some() as usize, 1)),
                        }
                    }
                }
                if let Some((port, n, of)) = ports.into_iter().find(|(_, n, of)| *n != 0 && n != of) {
                    return Err(err(format!("the step writes {n} of the {of} chunks of output port {port}")));
                }
                Ok(Decoded::Step(self.finish()))
            }
        }
    }

    /// Are the fields seen so far in this step all register fields (a prompt's presets)?
    fn presets_only(&self) -> bool {
        self.fields.iter().zip(&self.proto.step_fields).all(|(v, fi)| v.is_none() || matches!(self.proto.fields[*fi as usize].role, FieldRole::RegNext { .. }))
    }

    /// Start from register presets without their tokens (a trace whose prompt preset them, read from its
    /// first generated token): see [`TraceHistory::preset`].
    pub fn preset(&mut self, regs: &[(u32, u64)]) {
        self.hist.preset(self.proto, regs);
    }

    /// End the current step: its events, and the decoder back at a boundary.
    fn finish(&mut self) -> StepEvents {
        let ev = self.proto.step_events(&mut self.hist, &self.fields);
        self.k = 0;
        self.fields.iter_mut().for_each(|f| *f = None);
        ev
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::Reference;
    use crate::protocol::Token;

    /// The decoder reads back exactly what the reference evaluator wrote: fields, registers, writes, outputs,
    /// loads and injections; a token out of place is an error naming the expected field.
    #[test]
    fn the_decoder_reads_what_the_protocol_writes() {
        let d = crate::examples::scatter10();
        let mut r = Reference::new(d.clone());
        let image = crate::examples::scatter10_image(100);
        r.load(0, 0, &image);
        let p = r.protocol.clone();
        let mut tokens = p.load_tokens(0, 0, &image);
        tokens.push(p.step_token);
        let mut want = Vec::new();
        for _ in 0..300 {
            let before = r.state.clone();
            let o = r.step();
            tokens.extend(r.step_tokens(&o));
            want.push((before, o.clone(), r.state.clone()));
            if o.halted {
                break;
            }
        }
        let mut dec = StepDecoder::new(&p);
        let (mut loads, mut steps) = (Vec::new(), Vec::new());
        for &t in &tokens {
            match dec.push(t).unwrap() {
                Decoded::Load { mem, addr, word } => loads.push((mem, addr, word)),
                Decoded::Step(s) => steps.push(s),
                _ => {}
            }
        }
        let nonzero: Vec<(u32, u64, u64)> = image.iter().enumerate().filter(|(_, w)| **w != 0).map(|(i, w)| (0, i as u64, *w)).collect();
        assert_eq!(loads, nonzero);
        assert_eq!(steps.len(), want.len());
        let mut writes = 0;
        for (s, (before, o, after)) in steps.iter().zip(&want) {
            assert_eq!(s.fields, o.fields);
            assert_eq!(s.outputs, o.outputs);
            assert_eq!(s.regs, after.regs);
            assert_eq!(p.step_tokens(&s.fields), r.step_tokens(o));
            for w in &s.writes {
                assert_eq!(after.mems[w.mem as usize][w.addr as usize], w.data);
                writes += (before.mems[w.mem as usize] != after.mems[w.mem as usize]) as usize;
            }
        }
        assert!(writes > 20, "{writes} writes");
        // Out of place: a field before one already seen, a STEP or HALT inside a step, a token outside the
        // vocabulary, part of a port.
        let (f0, f1) = (p.step_fields[0], p.step_fields[1]);
        let mut dec = StepDecoder::new(&p);
        dec.push(p.step_token).unwrap();
        dec.push(p.encode(f1, 1, false)).unwrap();
        let e = dec.push(p.encode(f0, 1, false)).unwrap_err().to_string();
        assert!(e.contains("position 2") && e.contains(&format!("field {} or a later one was expected", p.fields[p.step_fields[2] as usize].name)), "{e}");
        // A bare STEP starts the machine (the prompt's last token); after that it is a step that changes nothing.
        let mut dec = StepDecoder::new(&p);
        assert_eq!(dec.push(p.step_token).unwrap(), Decoded::Start);
        assert!(matches!(dec.push(p.step_token).unwrap(), Decoded::Step(s) if !s.halted && s.fields.iter().all(|f| f.is_none())));
        dec.push(p.encode(f0, 1, false)).unwrap();
        assert!(dec.push(p.step_token).unwrap_err().to_string().contains("STEP inside a step"));
        let mut dec = StepDecoder::new(&p);
        dec.push(p.encode(f0, 1, false)).unwrap();
        assert!(dec.push(p.halt_token).unwrap_err().to_string().contains("HALT inside a step"));
        assert!(StepDecoder::new(&p).push(p.vocab_size).unwrap_err().to_string().contains("outside the vocabulary"));
        let out = *p.step_fields.last().unwrap();
        assert!(matches!(p.decode(p.encode(out, 3, true)), Some(Token::Value { end: true, value: 3, .. })));
        // A 16-bit port is two chunks, written together or not at all.
        let mut b = crate::CircuitBuilder::new();
        let r = b.reg(0, 16);
        let en = b.konst(1, 1);
        b.output(0, r, en);
        let d = crate::MachineDesc::new("p16", vec![crate::RegisterDesc { name: "R".into(), width: 16 }], vec![], vec![crate::PortDesc::new("W", 16)], b.finish());
        let p16 = Protocol::of(&d);
        let w0 = p16.fields_where(|r| matches!(r, FieldRole::Out { chunk: 0, .. }))[0];
        let mut dec = StepDecoder::new(&p16);
        dec.push(p16.step_token).unwrap();
        let e = dec.push(p16.encode(w0, 5, true)).unwrap_err().to_string();
        assert!(e.contains("writes 1 of the 2 chunks of output port 0"), "{e}");
    }

    /// Register presets in the prompt: the decoder starts from them, and the steps it reads are those of a
    /// reference machine preset the same way (whose trace omits the chunks that did not change from them).
    #[test]
    fn prompt_presets_start_the_registers() {
        let d = crate::examples::scatter10();
        let image = crate::examples::scatter10_image(300);
        let regs = [(0u32, 0x2A7u64), (1, 0x31)];
        let load = crate::LoadImage { loads: vec![crate::MemLoad { mem: 0, base: 0, words: image.clone() }], regs: regs.to_vec() };
        let mut r = Reference::new(d.clone());
        load.load_into(&mut r);
        assert_eq!(r.state.regs, vec![0x2A7, 0x31]);
        let p = r.protocol.clone();
        let mut tokens = load.prompt(&p);
        let presets = p.preset_tokens(&regs);
        // P is 10 bits: chunks 0xA7 and 0x2; A one chunk; none an end variant.
        assert_eq!(presets.len(), 3);
        assert!(presets.iter().all(|t| matches!(p.decode(*t), Some(Token::Value { end: false, .. }))));
        assert_eq!(&tokens[tokens.len() - 4..tokens.len() - 1], &presets[..]);
        let prompt_len = tokens.len();
        let mut want = Vec::new();
        for _ in 0..50 {
            let o = r.step();
            tokens.extend(r.step_tokens(&o));
            want.push(r.state.regs.clone());
        }
        let mut dec = StepDecoder::new(&p);
        let mut got = Vec::new();
        for (i, &t) in tokens.iter().enumerate() {
            match dec.push(t).unwrap() {
                Decoded::Start => assert_eq!(i, prompt_len - 1),
                Decoded::Step(s) => got.push(s.regs),
                _ => {}
            }
        }
        assert_eq!(got, want);
        // The first step adds 0x95 to P = 0x2A7: 0x33C, so P's high chunk changes from 2 to 3 and is written.
        assert_eq!(want[0][0], 0x33C);
        // A decoder told the presets reads the generated part alone the same way.
        let mut dec = StepDecoder::new(&p);
        dec.preset(&regs);
        let alone: Vec<Vec<u64>> = tokens[prompt_len..].iter().filter_map(|t| match dec.push(*t).unwrap() {
            Decoded::Step(s) => Some(s.regs),
            _ => None,
        }).collect();
        // (Without the prompt's STEP the first step's tokens start the trace.)
        assert_eq!(alone, want);
        // Only register fields may preset: an output-port chunk before the prompt's STEP is an error.
        let out = *p.step_fields.last().unwrap();
        let mut dec = StepDecoder::new(&p);
        dec.push(p.encode(out, 1, false)).unwrap();
        assert!(dec.push(p.step_token).unwrap_err().to_string().contains("STEP inside a step"));
    }

    #[test]
    fn injections_decode_to_their_port_and_value() {
        let d = crate::examples::io8(40);
        let mut r = Reference::new(d);
        let (tokens, injected) = r.run_io(40, crate::examples::io8_devices);
        let p = &r.protocol;
        let mut dec = StepDecoder::new(p);
        let mut got = Vec::new();
        let mut boundary = 0;
        for &t in &tokens {
            match dec.push(t).unwrap() {
                Decoded::Input { port, value } => got.push((boundary, port, value)),
                Decoded::Step(_) => boundary += 1,
                _ => {}
            }
        }
        let want: Vec<(usize, u32, u64)> = (0..40).flat_map(|s| crate::examples::io8_devices(s).into_iter().map(move |(port, v)| (s, port, v))).collect();
        assert_eq!(got.len(), injected.len());
        assert_eq!(got, want[..got.len()]);
    }
}

#[cfg(test)]
mod clear_tests {
    use super::*;
    use crate::eval::Reference;
    use crate::{CircuitBuilder, MachineDesc, MemoryDesc, RegisterDesc};

    /// A counter `C` that writes `M[C % 4] = C + 1` every step and clears `M` when `C % 3 == 2` (the same
    /// step's write dropped).
    fn clearing_machine() -> MachineDesc {
        let mut b = CircuitBuilder::new();
        let c = b.reg(0, 4);
        let one = b.konst(4, 1);
        let next = b.add(c, one);
        b.set_next(0, next);
        let addr = b.slice(c, 0, 2);
        let on = b.konst(1, 1);
        b.mem_write(0, addr, next, on);
        let clear = b.lookup(1, (0..16u64).map(|v| u64::from(v % 3 == 2)).collect(), c);
        b.mem_clear(0, clear);
        MachineDesc::new("clearing", vec![RegisterDesc { name: "C".into(), width: 4 }], vec![MemoryDesc { name: "M".into(), word_width: 4, addr_width: 2 }], vec![], b.finish())
    }

    /// A clear is one token, last in its step; the decoder reports it, drops the step's write of that memory,
    /// and starts the memory's write history again (its next write writes its address chunk again).
    #[test]
    fn a_clear_is_one_token_and_resets_the_write_history() {
        let d = clearing_machine();
        d.validate().unwrap();
        let mut r = Reference::new(d.clone());
        let p = r.protocol.clone();
        let clear_field = p.fields.iter().position(|f| f.role == FieldRole::MemClear { mem: 0 }).unwrap() as u32;
        assert_eq!(*p.step_fields.last().unwrap(), clear_field, "the clear field comes last");
        let mut dec = StepDecoder::new(&p);
        dec.push(p.step_token).unwrap();
        for step in 0..9u64 {
            let o = r.step();
            let toks = r.step_tokens(&o);
            let mut ev = None;
            for &t in &toks {
                if let Decoded::Step(s) = dec.push(t).unwrap() {
                    ev = Some(s);
                }
            }
            let ev = ev.unwrap();
            let cleared = step % 3 == 2;
            assert_eq!(ev.clears, if cleared { vec![0] } else { vec![] }, "step {step}");
            if cleared {
                assert_eq!(*toks.last().unwrap(), p.encode(clear_field, 0, true), "step {step}: the clear ends the step");
                assert_eq!(ev.write(0), None, "step {step}: the write is dropped");
                assert!(r.state.mems[0].iter().all(|w| *w == 0), "step {step}");
            } else {
                assert_eq!(ev.write(0), Some(MemWriteEvent { mem: 0, addr: step % 4, data: step + 1 }), "step {step}");
                assert_eq!(r.state.mems[0][(step % 4) as usize], step + 1);
            }
            // After a clear the next write writes its address again, even where it equals the latest one.
            if step % 3 == 0 && step > 0 {
                let addr_field = p.fields.iter().position(|f| f.role == FieldRole::MemAddr { mem: 0, chunk: 0 }).unwrap() as u32;
                assert!(toks.contains(&p.encode(addr_field, step % 4, false)), "step {step}: {toks:?}");
            }
        }
    }

    /// A clear of a memory that does not exist, a second clear and a wide enable are named errors.
    #[test]
    fn bad_clears_are_named() {
        let mem = || vec![MemoryDesc { name: "M".into(), word_width: 4, addr_width: 2 }];
        let with = |f: &dyn Fn(&mut CircuitBuilder)| {
            let mut b = CircuitBuilder::new();
            f(&mut b);
            MachineDesc::new("bad", vec![], mem(), vec![], b.finish()).validate().unwrap_err().to_string()
        };
        let e = with(&|b| {
            let on = b.konst(1, 1);
            b.mem_clear(1, on);
        });
        assert!(e.contains("clear of memory 1 which does not exist"), "{e}");
        let e = with(&|b| {
            let on = b.konst(1, 1);
            b.mem_clear(0, on);
            b.mem_clear(0, on);
        });
        assert!(e.contains("memory M is cleared twice"), "{e}");
        let e = with(&|b| {
            let wide = b.konst(2, 1);
            b.mem_clear(0, wide);
        });
        assert!(e.contains("clear of memory M: the enable must be a 1-bit node"), "{e}");
    }
}
