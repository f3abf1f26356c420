//! The trace protocol: the token vocabulary of a machine and the meaning of every token.
//!
//! A machine step is written as the *changes* it makes, in a fixed field order, and ends with a commit:
//!
//! - **Fields.** For every register (in declaration order) its next value; for every memory the circuit writes,
//!   the write address and then the data; for every output port the circuit writes, the value; last, for every
//!   memory the circuit clears, a 1-bit clear field (written as value 0 in a step that clears it). Values wider
//!   than `chunk_bits` take several fields, low chunk first.
//! - **Only what changed.** Every step field has a *latest value* (0 before its first token). A register chunk
//!   is written iff its next value differs from its latest value, so a register that keeps its value costs no
//!   token. A memory write's address and data chunks are written iff the write is enabled and the chunk differs
//!   from its latest value; the address's first chunk is also written at the memory's first write ever. An
//!   enabled output port writes all its chunks; a silent one writes nothing; a clear is written when enabled.
//!   A clear resets its memory's write history: the address's first chunk's latest value to 0 and the memory
//!   to never written, so its next write writes that chunk again. ([`Protocol::emitted`] is the rule;
//!   [`TraceHistory`] the latest values.)
//! - **Commit.** Every step field has two tokens per value: *more* (another field of this step follows) and
//!   *end* (the last token of the step). A step with no changes is the single token `STEP`. At the commit every
//!   register takes the value of its latest chunks and every memory written at least once applies its latest
//!   write again: a write that repeats the previous one of its memory changes nothing, so it costs no token.
//! - When the circuit's halt bit is set, the step is the single token `HALT` and the run ends.
//!
//! - **Answers within a step.** An output port that an input answers ([`crate::PortDesc::answers`]: a
//!   memory-mapped IO read) leads the step: its fields come before every other step field. Once the step has
//!   written the port's last chunk (never as the step's end) the host injects the input's `IN_<port>` chunks
//!   there, inside the step, and the step goes on from the field after the port, computed with the answer: the
//!   request must not depend on it, everything after it may. ([`Protocol::answered`] lists the pairs.)
//!
//! Program loading uses host-only fields: for every memory `LOAD_ADDR` chunks then `LOAD_DATA` chunks; the
//! last data chunk commits the word. The host feeds the loads (before the machine starts), then one `STEP` to
//! start the machine. Input ports are host-only `IN_<port>` chunks between steps.
//!
//! Token ids: 0 = `STEP`, 1 = `HALT`, then every field in order: a step field has `2^(width+1)` tokens (value
//! `v` is `first_token + v`, its end variant `first_token + 2^width + v`), a host-only field `2^width`.

use crate::machine::MachineDesc;
use serde::{Deserialize, Serialize};

/// What a field's value means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FieldRole {
    /// Chunk `chunk` of register `reg`'s value after the step.
    RegNext { reg: u32, chunk: u32 },
    /// Chunk of the address of memory `mem`'s write this step.
    MemAddr { mem: u32, chunk: u32 },
    /// Chunk of the data of memory `mem`'s write (`NONE` when no write).
    MemData { mem: u32, chunk: u32 },
    /// Chunk of the value written to output port `port` (`NONE` when not written).
    Out { port: u32, chunk: u32 },
    /// Memory `mem` is cleared this step (1 bit, always written as 0; not written when no clear).
    MemClear { mem: u32 },
    /// Host-only: chunk of a program-load address for memory `mem`.
    LoadAddr { mem: u32, chunk: u32 },
    /// Host-only: chunk of a program-load word for memory `mem`; the last chunk commits the write.
    LoadData { mem: u32, chunk: u32 },
    /// Host-only: chunk of a value the host injects on input port `port`, between steps (after a `STEP`,
    /// before the next step's first field); the circuit reads it with `Op::Input` from the next step on.
    In { port: u32, chunk: u32 },
}

/// One field (one token class).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Field {
    pub name: String,
    pub role: FieldRole,
    /// Bits carried by the token (<= chunk_bits).
    pub width: u32,
    /// Bit offset of this chunk within the full value.
    pub lo: u32,
    /// Fed by the host, never emitted by the machine (no end variants).
    pub host_only: bool,
    /// Token id of value 0.
    pub first_token: u32,
}

impl Field {
    /// Number of tokens of this field (values, and for a step field their end variants).
    pub fn token_count(&self) -> u32 {
        (1u32 << self.width) << (!self.host_only) as u32
    }
}

/// The meaning of one token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Token {
    Step,
    Halt,
    /// Field `field` (index into [`Protocol::fields`]) carries `value`; `end`: the token ends (commits) its
    /// step.
    Value {
        field: u32,
        value: u64,
        #[serde(default)]
        end: bool,
    },
}

/// The vocabulary and phase order of a machine's trace; published with a woven model as its manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Protocol {
    pub fields: Vec<Field>,
    /// Field indices of one step, in trace order (STEP follows the last).
    pub step_fields: Vec<u32>,
    pub step_token: u32,
    pub halt_token: u32,
    pub vocab_size: u32,
    /// Output ports answered within the step, each with the input port that answers it (see the module
    /// docs); their fields lead [`Self::step_fields`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answered: Vec<Answered>,
}

/// An output port whose request an input answers within the step ([`crate::PortDesc::answers`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answered {
    /// The request's output port.
    pub port: u32,
    /// The input port the host injects the answer on.
    pub input: u32,
}

impl Protocol {
    /// Derive the protocol of a validated machine.
    pub fn of(m: &MachineDesc) -> Protocol {
        let cb = m.chunk_bits;
        let mut fields = Vec::new();
        let mut next_tok = 2u32;
        let mut push = |fields: &mut Vec<Field>, name: String, width: u32, role_of: &dyn Fn(u32) -> FieldRole, host_only: bool| {
            let chunks = width.div_ceil(cb);
            for c in 0..chunks {
                let w = cb.min(width - c * cb);
                let nm = if chunks == 1 { name.clone() } else { format!("{name}.{c}") };
                let f = Field { name: nm, role: role_of(c), width: w, lo: c * cb, host_only, first_token: next_tok };
                next_tok += f.token_count();
                fields.push(f);
            }
        };
        // Answered request ports lead the step (in port order).
        let answered: Vec<Answered> = m
            .circuit
            .outputs
            .iter()
            .filter_map(|o| m.inputs.iter().position(|p| p.answers == Some(o.port)).map(|i| Answered { port: o.port, input: i as u32 }))
            .collect();
        for a in &answered {
            let (port, p) = (a.port, &m.ports[a.port as usize]);
            push(&mut fields, p.name.clone(), p.width, &|c| FieldRole::Out { port, chunk: c }, false);
        }
        for (i, r) in m.registers.iter().enumerate() {
            let i = i as u32;
            push(&mut fields, r.name.clone(), r.width, &|c| FieldRole::RegNext { reg: i, chunk: c }, false);
        }
        for w in &m.circuit.mem_writes {
            let mem = &m.memories[w.mem as usize];
            let i = w.mem;
            push(&mut fields, format!("{}_ADDR", mem.name), mem.addr_width, &|c| FieldRole::MemAddr { mem: i, chunk: c }, false);
            push(&mut fields, format!("{}_DATA", mem.name), mem.word_width, &|c| FieldRole::MemData { mem: i, chunk: c }, false);
        }
        for o in m.circuit.outputs.iter().filter(|o| !answered.iter().any(|a| a.port == o.port)) {
            let (port, p) = (o.port, &m.ports[o.port as usize]);
            push(&mut fields, p.name.clone(), p.width, &|c| FieldRole::Out { port, chunk: c }, false);
        }
        for c in &m.circuit.mem_clears {
            let mem = &m.memories[c.mem as usize];
            let i = c.mem;
            push(&mut fields, format!("{}_CLEAR", mem.name), 1, &|_| FieldRole::MemClear { mem: i }, false);
        }
        let step_fields = (0..fields.len() as u32).collect();
        for (i, mem) in m.memories.iter().enumerate() {
            let i = i as u32;
            push(&mut fields, format!("LOAD_{}_ADDR", mem.name), mem.addr_width, &|c| FieldRole::LoadAddr { mem: i, chunk: c }, true);
            push(&mut fields, format!("LOAD_{}_DATA", mem.name), mem.word_width, &|c| FieldRole::LoadData { mem: i, chunk: c }, true);
        }
        for (i, p) in m.inputs.iter().enumerate() {
            let i = i as u32;
            push(&mut fields, format!("IN_{}", p.name), p.width, &|c| FieldRole::In { port: i, chunk: c }, true);
        }
        Protocol { fields, step_fields, step_token: 0, halt_token: 1, vocab_size: next_tok, answered }
    }

    /// The input that answers output port `port` within the step, if one does.
    pub fn answer_of(&self, port: u32) -> Option<u32> {
        self.answered.iter().find(|a| a.port == port).map(|a| a.input)
    }

    /// The output port that input `input` answers within the step, if it answers one.
    pub fn request_of(&self, input: u32) -> Option<u32> {
        self.answered.iter().find(|a| a.input == input).map(|a| a.port)
    }

    /// The meaning of token `id`, or `None` outside the vocabulary.
    pub fn decode(&self, id: u32) -> Option<Token> {
        match id {
            0 => return Some(Token::Step),
            1 => return Some(Token::Halt),
            _ => {}
        }
        for (i, f) in self.fields.iter().enumerate() {
            if id >= f.first_token && id < f.first_token + f.token_count() {
                let v = id - f.first_token;
                let n = 1u32 << f.width;
                return Some(Token::Value { field: i as u32, value: (v % n) as u64, end: v >= n });
            }
        }
        None
    }

    /// Token id for field `field` carrying (the low `width` bits of) `value`; `end`: its end variant (step
    /// fields only; ignored for host-only fields).
    pub fn encode(&self, field: u32, value: u64, end: bool) -> u32 {
        let f = &self.fields[field as usize];
        let v = (value & ((1u64 << f.width) - 1)) as u32;
        f.first_token + v + if end && !f.host_only { 1u32 << f.width } else { 0 }
    }

    /// A readable name for token `id` (`STEP`, `HALT`, `ACC=17`, `PC.0=5;` for an end token, `?123`).
    pub fn describe(&self, id: u32) -> String {
        match self.decode(id) {
            Some(Token::Step) => "STEP".into(),
            Some(Token::Halt) => "HALT".into(),
            Some(Token::Value { field, value, end }) => format!("{}={}{}", self.fields[field as usize].name, value, if end { ";" } else { "" }),
            None => format!("?{id}"),
        }
    }

    /// Tokens that load `words` into memory `mem` starting at `base` (host-side program loading). Zero words
    /// are skipped: unwritten memory reads zero.
    pub fn load_tokens(&self, mem: u32, base: u64, words: &[u64]) -> Vec<u32> {
        let addr_fields: Vec<u32> = self.fields_where(|r| matches!(r, FieldRole::LoadAddr { mem: m, .. } if m == mem));
        let data_fields: Vec<u32> = self.fields_where(|r| matches!(r, FieldRole::LoadData { mem: m, .. } if m == mem));
        let mut out = Vec::new();
        for (i, w) in words.iter().enumerate() {
            if *w == 0 {
                continue;
            }
            let a = base + i as u64;
            for f in &addr_fields {
                out.push(self.encode(*f, a >> self.fields[*f as usize].lo, false));
            }
            for f in &data_fields {
                out.push(self.encode(*f, w >> self.fields[*f as usize].lo, false));
            }
        }
        out
    }

    /// The register chunks of `regs` (`(register, value)` pairs) that differ from 0, as step-field tokens
    /// (not end variants) in [`Protocol::step_fields`] order: the prompt writes them before its final `STEP`,
    /// which commits them, so the machine starts with those register values (a program's entry point, say).
    /// The network needs nothing for this: a register's value at a commit is its fields' latest tokens; the
    /// decoder ([`crate::StepDecoder`]) and the reference evaluator ([`crate::Reference::preset`]) take them in
    /// the same way. A register given twice takes its last value.
    pub fn preset_tokens(&self, regs: &[(u32, u64)]) -> Vec<u32> {
        let mut out = Vec::new();
        for &fi in &self.step_fields {
            let f = &self.fields[fi as usize];
            if let FieldRole::RegNext { reg, .. } = f.role {
                if let Some((_, v)) = regs.iter().rev().find(|(r, _)| *r == reg) {
                    let chunk = (v >> f.lo) & ((1u64 << f.width) - 1);
                    if chunk != 0 {
                        out.push(self.encode(fi, chunk, false));
                    }
                }
            }
        }
        out
    }

    /// Tokens that inject `value` on input port `port` (one per chunk, low chunk first), for the host to feed
    /// between steps.
    pub fn input_tokens(&self, port: u32, value: u64) -> Vec<u32> {
        self.fields_where(|r| matches!(r, FieldRole::In { port: p, .. } if p == port)).into_iter().map(|f| self.encode(f, value >> self.fields[f as usize].lo, false)).collect()
    }

    /// Indices of the fields whose role satisfies `pred`, in order.
    pub fn fields_where(&self, pred: impl Fn(FieldRole) -> bool) -> Vec<u32> {
        (0..self.fields.len() as u32).filter(|i| pred(self.fields[*i as usize].role)).collect()
    }
}
