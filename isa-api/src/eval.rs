//! The reference evaluator: runs a machine straight from its circuit, word by word, and writes the reference
//! trace in the machine's [`Protocol`].

use crate::circuit::{CmpKind, Op, ShiftKind};
use crate::machine::MachineDesc;
use crate::protocol::{Field, FieldRole, Protocol};
use crate::trace::TraceHistory;

/// Architectural state: register values and memory contents (words masked to their widths).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineState {
    pub regs: Vec<u64>,
    pub mems: Vec<Vec<u64>>,
    /// The latest injected value of every input port.
    pub inputs: Vec<u64>,
}

impl MachineState {
    /// The reset state: everything zero.
    pub fn reset(m: &MachineDesc) -> Self {
        Self { regs: vec![0; m.registers.len()], mems: m.memories.iter().map(|d| vec![0; 1usize << d.addr_width]).collect(), inputs: vec![0; m.inputs.len()] }
    }
}

/// The effects of one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepOutcome {
    /// The halt bit was set: nothing else happened.
    pub halted: bool,
    /// The step fields the step writes, in `step_fields` order (`None`: not written; see
    /// [`Protocol::emitted`]).
    pub fields: Vec<Option<u64>>,
    /// Output-port writes `(port, value)` this step.
    pub outputs: Vec<(u32, u64)>,
}

fn mask(w: u32) -> u64 {
    if w >= 64 { u64::MAX } else { (1u64 << w) - 1 }
}

fn sext(v: u64, w: u32) -> i64 {
    if w >= 64 { v as i64 } else { ((v << (64 - w)) as i64) >> (64 - w) }
}

/// Evaluate every node of the circuit on `state`; returns one word per node.
pub fn eval_nodes(m: &MachineDesc, state: &MachineState) -> Vec<u64> {
    let c = &m.circuit;
    let mut val: Vec<u64> = Vec::with_capacity(c.nodes.len());
    for n in &c.nodes {
        let w = n.width;
        let g = |id: &u32| val[*id as usize];
        let gw = |id: &u32| c.nodes[*id as usize].width;
        let v: u64 = match &n.op {
            Op::Const { value } => *value,
            Op::Reg { reg } => state.regs[*reg as usize],
            Op::Input { port } => state.inputs[*port as usize],
            Op::Load { mem, addr } => state.mems[*mem as usize][g(addr) as usize],
            Op::Add { a, b, cin } => g(a).wrapping_add(g(b)).wrapping_add(cin.map_or(0, |c| val[c as usize])),
            Op::Sub { a, b } => g(a).wrapping_sub(g(b)),
            Op::And { a, b } => g(a) & g(b),
            Op::Or { a, b } => g(a) | g(b),
            Op::Xor { a, b } => g(a) ^ g(b),
            Op::Not { a } => !g(a),
            Op::ShiftConst { kind, a, by } => shift(*kind, g(a), *by as u64, w),
            Op::Shift { kind, a, by } => shift(*kind, g(a), g(by), w),
            Op::Cmp { kind, a, b } => {
                let (x, y, aw) = (g(a), g(b), gw(a));
                (match kind {
                    CmpKind::Eq => x == y,
                    CmpKind::Ne => x != y,
                    CmpKind::Ltu => x < y,
                    CmpKind::Leu => x <= y,
                    CmpKind::Lts => sext(x, aw) < sext(y, aw),
                    CmpKind::Les => sext(x, aw) <= sext(y, aw),
                }) as u64
            }
            Op::Mux { sel, if0, if1 } => {
                if g(sel) & 1 == 1 { g(if1) } else { g(if0) }
            }
            Op::Zext { a } => g(a),
            Op::Sext { a } => sext(g(a), gw(a)) as u64,
            Op::Slice { a, lo } => g(a) >> lo,
            Op::Concat { parts } => {
                let mut acc = 0u64;
                let mut off = 0;
                for p in parts {
                    if off < 64 {
                        acc |= g(p) << off;
                    }
                    off += gw(p);
                }
                acc
            }
            Op::MulLo { a, b } => g(a).wrapping_mul(g(b)),
            Op::MulHi { a, b, signed_a, signed_b } => {
                let ext = |x: u64, s: bool| -> i128 { if s { sext(x, w) as i128 } else { x as i128 } };
                let p = ext(g(a), *signed_a).wrapping_mul(ext(g(b), *signed_b));
                (p >> w) as u64
            }
            Op::Lookup { table, index } => table.get(g(index) as usize).copied().unwrap_or(0),
            Op::AndOr { cases } | Op::OneHot { cases } => cases.iter().filter(|(s, _)| val[*s as usize] & 1 == 1).fold(0, |a, (_, v)| a | val[*v as usize]),
            Op::Sum { terms, konst } => terms.iter().fold(*konst, |acc, t| {
                let x = if t.shift >= 64 { 0 } else { val[t.node as usize] << t.shift };
                if t.neg { acc.wrapping_sub(x) } else { acc.wrapping_add(x) }
            }),
        };
        val.push(v & mask(w));
    }
    val
}

fn shift(kind: ShiftKind, x: u64, by: u64, w: u32) -> u64 {
    let x = x & mask(w);
    let r = match kind {
        ShiftKind::Shl => if by >= w as u64 { 0 } else { x << by },
        ShiftKind::Shr => if by >= w as u64 { 0 } else { x >> by },
        ShiftKind::Sar => {
            let s = sext(x, w);
            (if by >= w as u64 { s >> 63 } else { s >> by }) as u64
        }
        ShiftKind::Rotl | ShiftKind::Rotr => {
            let k = (by % w as u64) as u32;
            let k = if kind == ShiftKind::Rotl { k } else { (w - k) % w };
            if k == 0 { x } else { (x << k) | (x >> (w - k)) }
        }
    };
    r & mask(w)
}

/// A reference machine: description, protocol and state.
#[derive(Clone, Debug)]
pub struct Reference {
    pub desc: MachineDesc,
    pub protocol: Protocol,
    pub state: MachineState,
    /// The latest value of every step field (what the trace's "only what changed" rule compares with).
    pub history: TraceHistory,
}

impl Reference {
    /// A machine in its reset state (the description must be validated).
    pub fn new(desc: MachineDesc) -> Self {
        let protocol = Protocol::of(&desc);
        let state = MachineState::reset(&desc);
        let history = TraceHistory::new(&protocol);
        Self { desc, protocol, state, history }
    }

    /// Load words into memory `mem` from `base` (what the host's load tokens do).
    pub fn load(&mut self, mem: u32, base: u64, words: &[u64]) {
        let md = &self.desc.memories[mem as usize];
        for (i, w) in words.iter().enumerate() {
            let a = ((base + i as u64) & mask(md.addr_width)) as usize;
            self.state.mems[mem as usize][a] = w & mask(md.word_width);
        }
    }

    /// Preset registers (`(register, value)` pairs) before the first step, as the prompt's
    /// [`Protocol::preset_tokens`] do: their values and their fields' latest values.
    pub fn preset(&mut self, regs: &[(u32, u64)]) {
        for &(r, v) in regs {
            self.state.regs[r as usize] = v & mask(self.desc.registers[r as usize].width);
        }
        self.history.preset(&self.protocol, regs);
    }

    /// Inject `value` on input port `port` (what the host's input tokens do between steps).
    pub fn inject(&mut self, port: u32, value: u64) {
        self.state.inputs[port as usize] = value & mask(self.desc.inputs[port as usize].width);
    }

    /// Apply input token `token` (one `IN_<port>` chunk: its bits of the port's value, as the network stages
    /// chunk by chunk); other tokens change nothing. Returns whether it was an input chunk.
    pub fn inject_token(&mut self, token: u32) -> bool {
        match self.protocol.decode(token) {
            Some(crate::protocol::Token::Value { field, value, .. }) => match self.protocol.fields[field as usize] {
                Field { role: FieldRole::In { port, .. }, width, lo, .. } => {
                    apply_chunk(&mut self.state.inputs, (port, value, width, lo));
                    true
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// Run one step, updating the state.
    pub fn step(&mut self) -> StepOutcome {
        let d = &self.desc;
        let val = eval_nodes(d, &self.state);
        let c = &d.circuit;
        if let Some(h) = c.halt {
            if val[h as usize] == 1 {
                return StepOutcome { halted: true, fields: vec![], outputs: vec![] };
            }
        }
        let mut next = self.state.regs.clone();
        for rn in &c.next {
            next[rn.reg as usize] = val[rn.value as usize];
        }
        let mut values = Vec::new();
        for &fi in &self.protocol.step_fields {
            let f = &self.protocol.fields[fi as usize];
            let chunk = |v: u64| Some((v >> f.lo) & mask(f.width));
            let v = match f.role {
                FieldRole::RegNext { reg, .. } => chunk(next[reg as usize]),
                FieldRole::MemAddr { mem, .. } => {
                    let w = c.mem_writes.iter().find(|w| w.mem == mem).expect("protocol from this circuit");
                    if val[w.enable as usize] == 1 { chunk(val[w.addr as usize]) } else { None }
                }
                FieldRole::MemData { mem, .. } => {
                    let w = c.mem_writes.iter().find(|w| w.mem == mem).expect("protocol from this circuit");
                    if val[w.enable as usize] == 1 { chunk(val[w.data as usize]) } else { None }
                }
                FieldRole::Out { port, .. } => {
                    let o = c.outputs.iter().find(|o| o.port == port).expect("protocol from this circuit");
                    if val[o.enable as usize] == 1 { chunk(val[o.value as usize]) } else { None }
                }
                FieldRole::MemClear { mem } => {
                    let cl = c.mem_clears.iter().find(|x| x.mem == mem).expect("protocol from this circuit");
                    (val[cl.enable as usize] == 1).then_some(0)
                }
                FieldRole::LoadAddr { .. } | FieldRole::LoadData { .. } | FieldRole::In { .. } => unreachable!("host-only fields are not step fields"),
            };
            values.push(v);
        }
        let fields = self.protocol.emitted(&self.history, &values);
        self.history.record(&self.protocol, &fields);
        let mut outputs = Vec::new();
        for o in &c.outputs {
            if val[o.enable as usize] == 1 {
                outputs.push((o.port, val[o.value as usize]));
            }
        }
        for w in &c.mem_writes {
            if val[w.enable as usize] == 1 {
                self.state.mems[w.mem as usize][val[w.addr as usize] as usize] = val[w.data as usize];
            }
        }
        // A clear comes last: the memory is all zeros after the step, its write of this step dropped.
        for cl in &c.mem_clears {
            if val[cl.enable as usize] == 1 {
                self.state.mems[cl.mem as usize].fill(0);
            }
        }
        self.state.regs = next;
        StepOutcome { halted: false, fields, outputs }
    }

    /// The tokens of one step outcome (field tokens then STEP, or HALT): [`Protocol::step_tokens`].
    pub fn step_tokens(&self, o: &StepOutcome) -> Vec<u32> {
        if o.halted {
            return vec![self.protocol.halt_token];
        }
        self.protocol.step_tokens(&o.fields)
    }

    /// One step whose requests on ports that an input answers within the step ([`Protocol::answered`]) get
    /// `answer(port, request)`: the step is computed again with the answer injected, as the host's answer
    /// within the step makes the network do. Returns the outcome and its tokens, each with whether the host
    /// injects it (the answer's `IN_<input>` chunks, right after the request port's last chunk).
    pub fn step_answered(&mut self, mut answer: impl FnMut(u32, u64) -> u64) -> (StepOutcome, Vec<(u32, bool)>) {
        let before = (self.state.clone(), self.history.clone());
        let o = self.step();
        let Some((port, request, input)) = o.outputs.iter().find_map(|&(port, v)| self.protocol.answer_of(port).map(|i| (port, v, i))) else {
            let tokens = self.step_tokens(&o).into_iter().map(|t| (t, false)).collect();
            return (o, tokens);
        };
        let value = answer(port, request);
        (self.state, self.history) = before;
        self.inject(input, value);
        let o = self.step();
        let p = &self.protocol;
        // The request's fields lead the step: the answer follows its last chunk.
        let at = o.fields.iter().zip(&p.step_fields).filter(|(v, fi)| v.is_some() && matches!(p.fields[**fi as usize].role, FieldRole::Out { port: q, .. } if q == port)).count();
        let mut tokens: Vec<(u32, bool)> = self.step_tokens(&o).into_iter().map(|t| (t, false)).collect();
        let ins = p.input_tokens(input, value).into_iter().map(|t| (t, true));
        tokens.splice(at..at, ins);
        (o, tokens)
    }

    /// [`Self::run`] with host input devices: at every step boundary `s` (0 before the first step) `inject(s)`
    /// gives the `(port, value)` injections, applied to the state and written as input tokens; a request within
    /// a step gets `answer(port, request)` ([`Self::step_answered`]). Returns the generated tokens and the
    /// `(index, token)` of every injected one (the replay format of a host's trace).
    pub fn run_io_answered(
        &mut self,
        max_steps: usize,
        mut inject: impl FnMut(usize) -> Vec<(u32, u64)>,
        mut answer: impl FnMut(u32, u64) -> u64,
    ) -> (Vec<u32>, Vec<(usize, u32)>) {
        let (mut out, mut injected) = (Vec::new(), Vec::new());
        for s in 0..max_steps {
            for (port, value) in inject(s) {
                self.inject(port, value);
                for t in self.protocol.input_tokens(port, value) {
                    injected.push((out.len(), t));
                    out.push(t);
                }
            }
            let (o, tokens) = self.step_answered(&mut answer);
            for (t, host) in tokens {
                if host {
                    injected.push((out.len(), t));
                }
                out.push(t);
            }
            if o.halted {
                break;
            }
        }
        (out, injected)
    }

    /// [`Self::run_io_answered`] for machines whose inputs are all injected between steps (a request within a
    /// step would read 0).
    pub fn run_io(&mut self, max_steps: usize, inject: impl FnMut(usize) -> Vec<(u32, u64)>) -> (Vec<u32>, Vec<(usize, u32)>) {
        self.run_io_answered(max_steps, inject, |_, _| 0)
    }

    /// Run up to `max_steps` steps (stopping at HALT); returns the generated tokens.
    pub fn run(&mut self, max_steps: usize) -> Vec<u32> {
        let mut out = Vec::new();
        for _ in 0..max_steps {
            let o = self.step();
            out.extend(self.step_tokens(&o));
            if o.halted {
                break;
            }
        }
        out
    }
}

/// Input chunk `(port, value, width, lo)` into `inputs`: its bits of the port's value.
fn apply_chunk(inputs: &mut [u64], (port, value, width, lo): (u32, u64, u32, u32)) {
    let old = inputs[port as usize];
    inputs[port as usize] = (old & !(mask(width) << lo)) | ((value & mask(width)) << lo);
}

/// The reference evaluator as the token source of a host loop ([`crate::host::run_io_until`]'s `next`): fed the
/// trace a host builds (the prompt, then the generated and injected tokens), it predicts each next token as the
/// woven network does, so a program runs with its host devices and no weights (`loom eval`). A step is computed
/// when its first token is asked for; injections that follow (at a step boundary, after the prediction) undo
/// that step and compute it again with them, as the network's next position would.
#[derive(Clone, Debug)]
pub struct Predictor {
    r: Reference,
    /// Prompt tokens still to come (the image is loaded into the state directly).
    prompt_left: usize,
    /// The tokens of the step computed last that are still to be fed.
    pending: std::collections::VecDeque<u32>,
    /// The state and history before the step computed last, while none of its tokens has been fed.
    undo: Option<(MachineState, TraceHistory)>,
    /// The same once its tokens are being fed, and those fed so far: an answer within the step (an input that
    /// answers a request port, [`Protocol::answered`]) computes the step again from there.
    started: Option<(MachineState, TraceHistory, Vec<u32>)>,
    /// Steps taken (each one's first token fed).
    pub steps: usize,
}

/// A token fed to [`Predictor::next`] that is neither the reference's prediction nor an injection.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("position {position}: fed {fed}, the reference predicted {predicted}")]
pub struct Unpredicted {
    pub position: usize,
    pub fed: String,
    pub predicted: String,
}

impl Predictor {
    /// The machine `desc` (validated) with `image` loaded; `prompt_len` tokens of prompt (its loads, presets and
    /// `STEP`, as [`crate::LoadImage::prompt`] writes them) come first.
    pub fn new(desc: MachineDesc, image: &crate::LoadImage, prompt_len: usize) -> Self {
        let mut r = Reference::new(desc);
        image.load_into(&mut r);
        Self { r, prompt_left: prompt_len, pending: Default::default(), undo: None, started: None, steps: 0 }
    }

    /// The reference machine (its state after the steps fed, and the one computed for the next token).
    pub fn reference(&self) -> &Reference {
        &self.r
    }

    /// Feed `token` at `position`; the token the reference writes next.
    pub fn next(&mut self, position: usize, token: u32) -> Result<u32, Unpredicted> {
        let p = &self.r.protocol;
        if self.prompt_left > 0 {
            self.prompt_left -= 1;
            if self.prompt_left > 0 {
                return Ok(p.step_token); // inside the prompt: nothing is predicted
            }
        } else if p.is_host_token(token) {
            if let Some((state, history, fed)) = self.started.as_mut() {
                // An answer within the step: the step again from its start, with the answer; the tokens fed so
                // far (the request) must come out the same.
                (self.r.state, self.r.history) = (state.clone(), history.clone());
                self.r.inject_token(token);
                state.inputs.clone_from(&self.r.state.inputs);
                let fed = fed.clone();
                let o = self.r.step();
                let again = self.r.step_tokens(&o);
                if again.len() <= fed.len() || again[..fed.len()] != fed[..] {
                    let p = &self.r.protocol;
                    let predicted = again.iter().map(|t| p.describe(*t)).collect::<Vec<_>>().join(" ");
                    return Err(Unpredicted { position, fed: p.describe(token), predicted: format!("a step that changed with the answer: {predicted}") });
                }
                self.pending = again[fed.len()..].iter().copied().collect();
                return Ok(self.pending[0]);
            }
            // An injection at a step boundary: the step computed for this position had not started.
            if let Some((state, history)) = self.undo.take() {
                (self.r.state, self.r.history) = (state, history);
                self.pending.clear();
            }
            self.r.inject_token(token);
        } else {
            match self.pending.front() {
                Some(&want) if want == token => {
                    self.pending.pop_front();
                    if let Some((state, history)) = self.undo.take() {
                        self.steps += 1;
                        self.started = Some((state, history, Vec::new()));
                    }
                    if let Some((_, _, fed)) = self.started.as_mut() {
                        fed.push(token);
                    }
                }
                want => {
                    let predicted = want.map_or("nothing (no step computed)".to_string(), |w| p.describe(*w));
                    return Err(Unpredicted { position, fed: p.describe(token), predicted });
                }
            }
        }
        if self.pending.is_empty() {
            self.started = None;
            self.undo = Some((self.r.state.clone(), self.r.history.clone()));
            let o = self.r.step();
            self.pending.extend(self.r.step_tokens(&o));
        }
        Ok(self.pending[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Token;
    use crate::circuit::CircuitBuilder;
    use crate::machine::{MemoryDesc, PortDesc, RegisterDesc};

    /// The host loop driven by a predictor: the generated and injected tokens.
    fn through_host_loop(d: &MachineDesc, image: &crate::LoadImage, steps: usize, devices: fn(usize) -> Vec<(u32, u64)>) -> (Vec<u32>, Vec<(usize, u32)>, usize) {
        let proto = Protocol::of(d);
        let prompt = image.prompt(&proto);
        let mut pred = Predictor::new(d.clone(), image, prompt.len());
        let mut pos = 0;
        let next = |t| {
            pos += 1;
            pred.next(pos - 1, t)
        };
        let inject = |s| devices(s).into_iter().flat_map(|(port, v)| proto.input_tokens(port, v)).collect();
        let out = crate::host::run_io(&proto, &prompt, steps, next, |_| {}, inject).expect("the predictor predicts every token it is fed");
        (out.trace.generated, out.trace.injected, pred.steps)
    }

    #[test]
    fn the_predictor_writes_the_reference_trace_through_the_host_loop() {
        // acc8 with its stress program loaded by the prompt: the reference's own run, token for token.
        let d = crate::examples::acc8();
        let prog: Vec<u64> = crate::examples::acc8_stress_program(1).iter().map(|b| *b as u64).collect();
        let image = crate::LoadImage::of_loads(vec![crate::MemLoad { mem: 0, base: 0, words: prog.clone() }]);
        let mut r = Reference::new(d.clone());
        r.load(0, 0, &prog);
        let want = r.run(500);
        let (got, injected, steps) = through_host_loop(&d, &image, 500, |_| Vec::new());
        assert_eq!((got.len(), injected.len(), steps), (want.len(), 0, 500));
        assert_eq!(got, want);
        // io8 with its devices' injections at step boundaries: each injection undoes the step computed before it.
        let d = crate::examples::io8(40);
        let mut r = Reference::new(d.clone());
        let (want, want_injected) = r.run_io(100, crate::examples::io8_devices);
        let (got, injected, _) = through_host_loop(&d, &crate::LoadImage::default(), 100, crate::examples::io8_devices);
        assert!(!want_injected.is_empty());
        assert_eq!((got, injected), (want, want_injected));
    }

    /// ask8's requests (port ASK) are answered within their step: the request leads the step, the answer follows
    /// its last chunk, and the reference, the predictor through the host loop and the replay agree on every
    /// position; a host that does not answer leaves the protocol at the step's next token.
    #[test]
    fn answers_within_a_step_follow_their_request() {
        use crate::examples::{ask8, ask8_answer};
        let d = ask8(40);
        d.validate().unwrap();
        let proto = Protocol::of(&d);
        let names: Vec<&str> = proto.step_fields.iter().map(|f| proto.fields[*f as usize].name.as_str()).collect();
        assert_eq!(names, ["ASK.0", "ASK.1", "ACC", "N"]);
        assert_eq!((proto.answer_of(0), proto.request_of(0)), (Some(0), Some(0)));
        let mut r = Reference::new(d.clone());
        let (want, injected) = r.run_io_answered(100, |_| Vec::new(), ask8_answer);
        assert_eq!(injected.len(), 20, "N odd in 0..40: twenty requests, one answer token each");
        for &(i, _) in &injected {
            let before = proto.decode(want[i - 1]);
            assert!(matches!(before, Some(Token::Value { field, end: false, .. }) if proto.fields[field as usize].name == "ASK.1"), "{before:?}");
        }
        // ACC as an independent loop computes it.
        let mut acc = 0u8;
        for n in 0..40u8 {
            if n & 1 == 1 {
                acc = acc.wrapping_add(ask8_answer(0, (u64::from(n) << 4) | u64::from(acc & 15)) as u8);
            } else {
                acc ^= n;
            }
        }
        assert_eq!(r.state.regs[0], u64::from(acc));
        let image = crate::LoadImage::default();
        let prompt = image.prompt(&proto);
        let answer = |port: u32, req: u64| proto.input_tokens(proto.answer_of(port).unwrap(), ask8_answer(port, req));
        let mut pred = Predictor::new(d.clone(), &image, prompt.len());
        let mut pos = 0;
        let next = |t| {
            pos += 1;
            pred.next(pos - 1, t)
        };
        let out = crate::host::run_io_until(&proto, &prompt, 100, next, |_| {}, |_| Vec::new(), answer, || false).unwrap();
        assert!(out.halted);
        assert_eq!((&out.trace.generated, &out.trace.injected), (&want, &injected));
        let rep = crate::lockstep::replay(&d, &image, &out.trace);
        assert_eq!((rep.mismatch, rep.positions, rep.steps), (None, want.len(), 40));
        // A changed answer is found where the step goes on with it.
        let mut bad = out.trace.clone();
        let (i, t) = bad.injected[3];
        bad.generated[i] = t ^ 1;
        let rep = crate::lockstep::replay(&d, &image, &bad);
        assert_eq!(rep.mismatch.map(|m| m.position), Some(i + 1));
        // No answer: the decoder refuses the field after the request.
        let mut pred = Predictor::new(d.clone(), &image, prompt.len());
        let mut pos = 0;
        let next = |t| {
            pos += 1;
            pred.next(pos - 1, t)
        };
        let err = crate::host::run_io(&proto, &prompt, 100, next, |_| {}, |_| Vec::new()).unwrap_err();
        assert!(err.to_string().contains("where the answer on input 0 was expected"), "{err}");
    }

    #[test]
    fn the_predictor_refuses_a_token_it_did_not_predict() {
        let d = crate::examples::acc8();
        let image = crate::LoadImage::default();
        let proto = Protocol::of(&d);
        let prompt = image.prompt(&proto);
        let mut pred = Predictor::new(d, &image, prompt.len());
        let mut t = 0;
        for (i, &p) in prompt.iter().enumerate() {
            t = pred.next(i, p).unwrap();
        }
        let wrong = if t == proto.halt_token { proto.step_token } else { proto.halt_token };
        let e = pred.next(prompt.len(), wrong).unwrap_err();
        assert_eq!((e.position, e.fed, e.predicted), (prompt.len(), proto.describe(wrong), proto.describe(t)));
    }

    #[test]
    fn input_ports_are_latches_the_host_sets_between_steps() {
        let d = crate::examples::io8(40);
        d.validate().unwrap();
        let p = Protocol::of(&d);
        let data_f = p.fields_where(|r| matches!(r, FieldRole::In { port: 0, .. }));
        assert_eq!(data_f.len(), 1);
        assert!(p.fields[data_f[0] as usize].host_only && !p.step_fields.contains(&data_f[0]));
        assert_eq!(p.input_tokens(0, 200), vec![p.encode(data_f[0], 200, false)]);
        let mut r = Reference::new(d.clone());
        let (tokens, injected) = r.run_io(100, crate::examples::io8_devices);
        // every injected token is where the list says, and is an input token
        for (i, t) in &injected {
            assert_eq!(tokens[*i], *t);
            assert!(matches!(p.decode(*t), Some(Token::Value { field, .. }) if matches!(p.fields[field as usize].role, FieldRole::In { .. })));
        }
        assert_eq!(*tokens.last().unwrap(), p.halt_token);
        // ACC sums DATA between interrupts; OUT shows it at each interrupt (IRQ raised at s = 3, 10, 17, ...)
        let (mut acc, mut data, mut irq, mut outs) = (0u64, 0u64, 0u64, Vec::new());
        for s in 0..40 {
            for (port, v) in crate::examples::io8_devices(s) {
                if port == 0 { data = v } else { irq = v }
            }
            if irq == 1 {
                outs.push(acc);
                acc = 0;
            } else {
                acc = (acc + data) & 0xff;
            }
        }
        let mut r = Reference::new(d);
        let mut seen = Vec::new();
        for s in 0..41 {
            for (port, v) in crate::examples::io8_devices(s) {
                r.inject(port, v);
            }
            let o = r.step();
            seen.extend(o.outputs.iter().map(|(_, v)| *v));
            if o.halted {
                break;
            }
        }
        assert_eq!(seen, outs);
        assert_eq!(outs.len(), 6, "{outs:?}");
        // an Input node of the wrong width, or of a port that does not exist, is named
        let mut bad = crate::examples::io8(5);
        bad.inputs.pop();
        assert!(bad.validate().unwrap_err().to_string().contains("no input port 1"));
        // IO ranges name existing ports and do not overlap
        let range = |name: &str, base: u64| crate::IoRange { name: name.into(), base, size: 8, write_port: Some(0), read_request_port: Some(0), read_port: Some(0) };
        let mut m = crate::examples::io8(5);
        m.io_ranges = vec![range("A", 0x2000), range("B", 0x2008)];
        m.validate().unwrap();
        assert_eq!(MachineDesc::from_json(&m.to_json()).unwrap(), m);
        m.io_ranges.push(range("C", 0x200f));
        assert!(m.validate().unwrap_err().to_string().contains("IO ranges B and C overlap"));
        m.io_ranges = vec![crate::IoRange { read_port: Some(7), ..range("D", 0) }];
        assert!(m.validate().unwrap_err().to_string().contains("IO range D names a port that does not exist"));
        // the micro-step register must exist
        let mut m = crate::examples::io8(5);
        m.micro_step = Some(1);
        m.validate().unwrap();
        m.micro_step = Some(2);
        assert!(m.validate().unwrap_err().to_string().contains("micro_step names register 2"));
        // an input answers a port the circuit writes, one input a port, and only inputs answer
        let mut m = crate::examples::ask8(5);
        m.validate().unwrap();
        assert_eq!(MachineDesc::from_json(&m.to_json()).unwrap(), m);
        m.inputs[0].answers = Some(1);
        assert!(m.validate().unwrap_err().to_string().contains("input ANS answers port 1, which the circuit never writes"));
        let mut m = crate::examples::ask8(5);
        m.inputs.push(PortDesc::new("ANS2", 8).answering(0));
        assert!(m.validate().unwrap_err().to_string().contains("inputs ANS and ANS2 answer the same port 0"));
        let mut m = crate::examples::ask8(5);
        m.ports[0].answers = Some(0);
        assert!(m.validate().unwrap_err().to_string().contains("output port ASK answers a port"));
    }

    #[test]
    fn shifts_and_extensions() {
        assert_eq!(shift(ShiftKind::Sar, 0x80, 3, 8), 0xF0);
        assert_eq!(shift(ShiftKind::Sar, 0x80, 9, 8), 0xFF);
        assert_eq!(shift(ShiftKind::Shl, 0x81, 1, 8) & 0xFF, 0x02);
        assert_eq!(shift(ShiftKind::Rotl, 0x81, 1, 8) & 0xFF, 0x03);
        assert_eq!(shift(ShiftKind::Rotr, 0x81, 1, 8) & 0xFF, 0xC0);
        assert_eq!(shift(ShiftKind::Shr, 0x81, 8, 8), 0);
        assert_eq!(sext(0x80, 8), -128);
    }

    #[test]
    fn counter_machine_trace() {
        // A counter that outputs its value and halts at 3.
        let mut b = CircuitBuilder::new();
        let r = b.reg(0, 8);
        let one = b.konst(8, 1);
        let n = b.add(r, one);
        let three = b.konst(8, 3);
        let h = b.eq(r, three);
        let en = b.konst(1, 1);
        b.set_next(0, n);
        b.output(0, r, en);
        b.halt(h);
        let d = MachineDesc::new("ctr", vec![RegisterDesc { name: "R".into(), width: 8 }], vec![MemoryDesc { name: "M".into(), word_width: 8, addr_width: 4 }], vec![PortDesc::new("OUT", 8)], b.finish());
        d.validate().unwrap();
        let mut m = Reference::new(d);
        let t = m.run(10);
        let p = &m.protocol;
        let s: Vec<String> = t.iter().map(|x| p.describe(*x)).collect();
        // R changes every step; OUT is written every step, and its token ends the step.
        assert_eq!(s, ["R=1", "OUT=0;", "R=2", "OUT=1;", "R=3", "OUT=2;", "HALT"]);
        for x in &t {
            let back = match p.decode(*x).unwrap() {
                crate::Token::Step => p.step_token,
                crate::Token::Halt => p.halt_token,
                crate::Token::Value { field, value, end } => p.encode(field, value, end),
            };
            assert_eq!(back, *x);
        }
    }

    #[test]
    fn bad_descriptions_are_named() {
        let mut b = CircuitBuilder::new();
        let r = b.reg(0, 8);
        let x = b.konst(4, 1);
        b.add(r, x);
        let d = MachineDesc::new("bad", vec![RegisterDesc { name: "R".into(), width: 8 }], vec![], vec![], b.finish());
        let e = d.validate().unwrap_err().to_string();
        assert!(e.contains("node 2") && e.contains("widths 8 and 4"), "{e}");
        let mut d2 = d.clone();
        d2.api_version = 99;
        assert!(d2.validate().unwrap_err().to_string().contains("api_version 99"));
        assert!(MachineDesc::from_json(b"{\"x\":1}").unwrap_err().to_string().contains("malformed"));
    }

    /// A step writes only what changed: a register chunk iff it changed, a memory write's chunks iff the write
    /// is on and they differ from the previous write's, a port iff it is written; the step's last token is its
    /// end variant, and a step that changes nothing is `STEP` alone.
    #[test]
    fn a_step_writes_only_what_changed() {
        let d = crate::examples::scatter10();
        let mut r = Reference::new(d);
        r.load(0, 0, &crate::examples::scatter10_image(100));
        let p = r.protocol.clone();
        let mask = |w: u32| (1u64 << w) - 1;
        let (mut with_write, mut without, mut tokens) = (0, 0, 0);
        for _ in 0..200 {
            let before = r.state.clone();
            let hist = r.history.clone();
            let o = r.step();
            assert!(!o.halted);
            let toks = r.step_tokens(&o);
            tokens += toks.len();
            let ends: Vec<bool> = toks.iter().map(|t| matches!(p.decode(*t), Some(Token::Value { end: true, .. }) | Some(Token::Step))).collect();
            assert_eq!(ends.iter().filter(|e| **e).count(), 1);
            assert!(*ends.last().unwrap());
            let mut wrote = false;
            for (k, fi) in p.step_fields.iter().enumerate() {
                let f = &p.fields[*fi as usize];
                match f.role {
                    FieldRole::RegNext { reg, .. } => {
                        let chunk = |v: u64| (v >> f.lo) & mask(f.width);
                        assert_eq!(o.fields[k].is_some(), chunk(before.regs[reg as usize]) != chunk(r.state.regs[reg as usize]), "{}", f.name);
                    }
                    FieldRole::MemAddr { .. } | FieldRole::MemData { .. } => {
                        if let Some(v) = o.fields[k] {
                            assert!(v != hist.latest[k] || f.name == "M_ADDR.0", "{} repeats its latest value", f.name);
                            wrote = true;
                        }
                    }
                    _ => {}
                }
            }
            if before.mems != r.state.mems {
                assert!(wrote, "memory changed without a write token");
            }
            if wrote { with_write += 1 } else { without += 1 }
        }
        assert!(with_write > 20 && without > 20, "{with_write} steps with a write, {without} without");
        // Fewer tokens than writing every field of every step (7 per step with a write, 5 without).
        assert!(tokens < 200 * 5, "{tokens} tokens");
    }
}
