//! The trace protocol: the token vocabulary of a machine and the meaning of every token.
//!
//! A machine step is written as a sequence of *field* tokens, then `STEP`:
//! for every register (in declaration order) its next value; for every memory the circuit writes, the write
//! address and then the data; for every output port the circuit writes, the value. Values wider than
//! `chunk_bits` take several fields, low chunk first. A memory write's fields (address then data) and a
//! port's fields form a *group*: when the write is disabled, the group is the single `NONE` token of its
//! first field and its other fields are skipped ([`Protocol::after_none`]). When the circuit's halt bit is
//! set, the step is the single token `HALT` and the run ends.
//!
//! Program loading uses host-only fields: for every memory `LOAD_ADDR` chunks then `LOAD_DATA` chunks; the
//! last data chunk commits the write. The host feeds the loads, then one `STEP` to start the machine.
//!
//! Token ids: 0 = `STEP`, 1 = `HALT`, then every field in order: `2^width` value tokens (value `v` is
//! `first_token + v`), plus one `NONE` token (`first_token + 2^width`) when the field is optional.

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
    /// Has a `NONE` token.
    pub optional: bool,
    /// Fed by the host, never emitted by the machine.
    pub host_only: bool,
    /// Token id of value 0.
    pub first_token: u32,
}

impl Field {
    /// Number of tokens of this field (values plus `NONE`).
    pub fn token_count(&self) -> u32 {
        (1u32 << self.width) + self.optional as u32
    }
    /// Token id of `NONE`, if the field is optional.
    pub fn none_token(&self) -> Option<u32> {
        self.optional.then(|| self.first_token + (1u32 << self.width))
    }
}

/// The group a step field belongs to: a memory's write or a port (`None`: a register, its own group).
fn group_key(r: FieldRole) -> Option<(u8, u32)> {
    match r {
        FieldRole::MemAddr { mem, .. } | FieldRole::MemData { mem, .. } => Some((0, mem)),
        FieldRole::Out { port, .. } => Some((1, port)),
        _ => None,
    }
}

/// The meaning of one token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Token {
    Step,
    Halt,
    /// Field `field` (index into [`Protocol::fields`]) carries `value`.
    Value { field: u32, value: u64 },
    /// Field `field` carries `NONE`.
    None { field: u32 },
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
}

impl Protocol {
    /// Derive the protocol of a validated machine.
    pub fn of(m: &MachineDesc) -> Protocol {
        let cb = m.chunk_bits;
        let mut fields = Vec::new();
        let mut next_tok = 2u32;
        let mut push = |fields: &mut Vec<Field>, name: String, width: u32, role_of: &dyn Fn(u32) -> FieldRole, optional: bool, host_only: bool| {
            let chunks = width.div_ceil(cb);
            for c in 0..chunks {
                let w = cb.min(width - c * cb);
                let nm = if chunks == 1 { name.clone() } else { format!("{name}.{c}") };
                // Only a group's first field (chunk 0) has a NONE token.
                let f = Field { name: nm, role: role_of(c), width: w, lo: c * cb, optional: optional && c == 0, host_only, first_token: next_tok };
                next_tok += f.token_count();
                fields.push(f);
            }
        };
        for (i, r) in m.registers.iter().enumerate() {
            let i = i as u32;
            push(&mut fields, r.name.clone(), r.width, &|c| FieldRole::RegNext { reg: i, chunk: c }, false, false);
        }
        for w in &m.circuit.mem_writes {
            let mem = &m.memories[w.mem as usize];
            let i = w.mem;
            push(&mut fields, format!("{}_ADDR", mem.name), mem.addr_width, &|c| FieldRole::MemAddr { mem: i, chunk: c }, true, false);
            push(&mut fields, format!("{}_DATA", mem.name), mem.word_width, &|c| FieldRole::MemData { mem: i, chunk: c }, false, false);
        }
        for o in &m.circuit.outputs {
            let p = &m.ports[o.port as usize];
            let i = o.port;
            push(&mut fields, p.name.clone(), p.width, &|c| FieldRole::Out { port: i, chunk: c }, true, false);
        }
        let step_fields = (0..fields.len() as u32).collect();
        for (i, mem) in m.memories.iter().enumerate() {
            let i = i as u32;
            push(&mut fields, format!("LOAD_{}_ADDR", mem.name), mem.addr_width, &|c| FieldRole::LoadAddr { mem: i, chunk: c }, false, true);
            push(&mut fields, format!("LOAD_{}_DATA", mem.name), mem.word_width, &|c| FieldRole::LoadData { mem: i, chunk: c }, false, true);
        }
        for (i, p) in m.inputs.iter().enumerate() {
            let i = i as u32;
            push(&mut fields, format!("IN_{}", p.name), p.width, &|c| FieldRole::In { port: i, chunk: c }, false, true);
        }
        Protocol { fields, step_fields, step_token: 0, halt_token: 1, vocab_size: next_tok }
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
                return Some(if f.optional && v == 1u32 << f.width {
                    Token::None { field: i as u32 }
                } else {
                    Token::Value { field: i as u32, value: v as u64 }
                });
            }
        }
        None
    }

    /// Token id for field `field` carrying `value` (`None` = the NONE token).
    pub fn encode(&self, field: u32, value: Option<u64>) -> u32 {
        let f = &self.fields[field as usize];
        match value {
            Some(v) => f.first_token + (v & ((1u64 << f.width) - 1)) as u32,
            None => f.none_token().expect("NONE on a non-optional field"),
        }
    }

    /// A readable name for token `id` (`STEP`, `HALT`, `ACC=17`, `OUT=NONE`, `?123`).
    pub fn describe(&self, id: u32) -> String {
        match self.decode(id) {
            Some(Token::Step) => "STEP".into(),
            Some(Token::Halt) => "HALT".into(),
            Some(Token::Value { field, value }) => format!("{}={}", self.fields[field as usize].name, value),
            Some(Token::None { field }) => format!("{}=NONE", self.fields[field as usize].name),
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
                out.push(self.encode(*f, Some(a >> self.fields[*f as usize].lo)));
            }
            for f in &data_fields {
                out.push(self.encode(*f, Some(w >> self.fields[*f as usize].lo)));
            }
        }
        out
    }

    /// Tokens that inject `value` on input port `port` (one per chunk, low chunk first), for the host to feed
    /// between steps.
    pub fn input_tokens(&self, port: u32, value: u64) -> Vec<u32> {
        self.fields_where(|r| matches!(r, FieldRole::In { port: p, .. } if p == port)).into_iter().map(|f| self.encode(f, Some(value >> self.fields[f as usize].lo))).collect()
    }

    /// Position in [`Self::step_fields`] of the field that follows a `NONE` at position `k`: the first
    /// position after `k`'s group (a memory write's address and data fields, or a port's fields);
    /// `step_fields.len()` means `STEP`.
    pub fn after_none(&self, k: usize) -> usize {
        let key = |i: usize| group_key(self.fields[self.step_fields[i] as usize].role);
        let g = key(k);
        let mut e = k + 1;
        while g.is_some() && e < self.step_fields.len() && key(e) == g {
            e += 1;
        }
        e
    }

    /// Indices of the fields whose role satisfies `pred`, in order.
    pub fn fields_where(&self, pred: impl Fn(FieldRole) -> bool) -> Vec<u32> {
        (0..self.fields.len() as u32).filter(|i| pred(self.fields[*i as usize].role)).collect()
    }
}
