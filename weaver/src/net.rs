//! The bit-level netlist every pass works on.
//!
//! Every signal is one residual slot read in the ±1 domain: a [`Sig`] is `±x[node]` (negation is free: it
//! flips a weight's sign), and its bit is `(value + 1) / 2`. Node 0 is the constant slot (+1 always), so
//! `Sig::ONE` and `Sig::ZERO` are constants. Computed bits are [`Gate`]s: `bit = offset + Σ sign·[L ≥ 0]` with
//! each `L` an integer linear form over input bits (one SwiGLU layer computes any number of gates whose inputs
//! are already in the residual). Memory and register reads are DeltaNet head reads ([`Read`], register heads,
//! staging heads), described here by what they read and written by the allocator.

use crate::error::WeaveError;
use std::collections::HashMap;

/// A signal: node `node` read in the ±1 domain, negated when `neg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sig {
    pub node: u32,
    pub neg: bool,
}

impl Sig {
    /// Constant 1 (the constant slot).
    pub const ONE: Sig = Sig { node: 0, neg: false };
    /// Constant 0 (the constant slot, negated).
    pub const ZERO: Sig = Sig { node: 0, neg: true };
    pub fn of(node: u32) -> Sig {
        Sig { node, neg: false }
    }
    pub fn not(self) -> Sig {
        Sig { node: self.node, neg: !self.neg }
    }
    pub fn konst(b: bool) -> Sig {
        if b { Sig::ONE } else { Sig::ZERO }
    }
    /// The constant bit, if this is the constant slot.
    pub fn as_const(self) -> Option<bool> {
        (self.node == 0).then_some(!self.neg)
    }
    /// `+1.0` or `-1.0`: the weight sign with which the slot enters.
    pub fn sign(self) -> f32 {
        if self.neg { -1.0 } else { 1.0 }
    }
}

/// Where a node's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The constant slot (+1).
    Const,
    /// Token-class indicator: +1 when the current token is of class `class` (see [`crate::lower::Classes`]).
    TokClass(u32),
    /// Bit `bit` of the current token's value (value tokens; -1 otherwise).
    TokBit(u32),
    /// +1 when the current token is the end variant of a step field's value (it commits its step).
    TokEnd,
    /// +1 when the current token leaves step position `k` open ([`crate::lower::leaves_open`]): the after bits,
    /// a function of the token alone, so the embedding holds them and no layer computes them.
    TokAfter(u32),
    /// +1 when the current token is a value of one of memory `mem`'s write fields (address or data chunks).
    TokWrites(u32),
    /// +1 when the current token is a value of a step field that comes before memory `mem`'s write fields in
    /// step order (a register's, or a request port's): within a step it comes before any of them.
    TokBeforeWrites(u32),
    /// 1 when the latest of the tokens [`Source::TokWrites`] and [`Source::TokBeforeWrites`] of memory `mem`
    /// was a write token (a layer-0 head): at a commit, the step has written the memory's write fields, or it
    /// wrote no field before them (see `lower`'s memory commits).
    Wrote(u32),
    /// Latest value of field `field` (bit `bit`; `bit == width` is the written-before flag of a memory write's
    /// first address chunk): layer-0 staging heads.
    Staged { field: u32, bit: u32 },
    /// Committed register bit (layer-1 register heads).
    RegBit { reg: u32, bit: u32 },
    /// Bit of memory read number `read`.
    ReadBit { read: u32, bit: u32 },
    /// Output of gate `gate`.
    Gate(u32),
}

/// `sign · [Σ coeff·bit(node) + bias ≥ 0]`, nodes positive (negations folded into the bias).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Term {
    pub lin: Vec<(u32, i64)>,
    pub bias: i64,
    pub sign: i64,
}

impl Term {
    /// Smallest and largest value of the linear form.
    pub fn range(&self) -> (i64, i64) {
        let lo = self.bias + self.lin.iter().map(|(_, c)| (*c).min(0)).sum::<i64>();
        let hi = self.bias + self.lin.iter().map(|(_, c)| (*c).max(0)).sum::<i64>();
        (lo, hi)
    }
}

/// A computed bit: `offset + Σ terms`, guaranteed 0 or 1 by construction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Gate {
    pub terms: Vec<Term>,
    pub offset: i64,
}

/// A memory read: the word of `mem` at `addr` lands in the `bits` nodes.
#[derive(Clone, Debug)]
pub struct Read {
    pub mem: u32,
    pub addr: Vec<Sig>,
    pub bits: Vec<u32>,
}

/// The write side of a memory: at tokens where `enable` is 1, `mem[addr] = data`. Every head holding a
/// copy of the memory applies it.
#[derive(Clone, Debug)]
pub struct Commit {
    pub mem: u32,
    pub enable: Sig,
    pub addr: Vec<Sig>,
    pub data: Vec<Sig>,
}

/// What the lm_head reads for one step field: its value bits and whether the step writes it (see
/// [`isa_api::Protocol::emitted`]).
#[derive(Clone, Debug)]
pub struct FieldOut {
    pub bits: Vec<Sig>,
    pub emit: Sig,
}

/// Largest |linear form| allowed: 128·L must stay an exact f32 integer in any summation order.
pub const MAX_FORM: i64 = 1 << 17;

/// The netlist of one woven machine.
#[derive(Clone, Debug, Default)]
pub struct Netlist {
    pub nodes: Vec<Source>,
    /// Readable name per node (allocation dump).
    pub names: Vec<String>,
    pub gates: Vec<Gate>,
    pub reads: Vec<Read>,
    pub commits: Vec<Commit>,
    /// Per register: the staged bits it commits at STEP tokens.
    pub reg_values: Vec<Vec<Sig>>,
    /// Per register: its committed-bit nodes.
    pub reg_bits: Vec<Vec<u32>>,
    /// Per step field, in protocol order.
    pub outputs: Vec<FieldOut>,
    pub halt: Option<Sig>,
    /// 1 at a step's last token (`STEP` or an end token): registers and memories commit there.
    pub commit: Option<Sig>,
    /// Per step position: 1 when the current token leaves that position open (the token is a commit, an
    /// injection, or a field token of an earlier position that is not the step's last), so the next token may
    /// be that position's field (see `lower::Lower::after`). Position 0's is "at a step boundary".
    pub after: Vec<Sig>,
    dedup: HashMap<Gate, Sig>,
}

impl Netlist {
    /// A netlist holding only the constant node.
    pub fn new() -> Self {
        let mut n = Netlist::default();
        n.add_node(Source::Const, "CONST".into());
        n
    }

    /// Append a node.
    pub fn add_node(&mut self, s: Source, name: String) -> u32 {
        self.nodes.push(s);
        self.names.push(name);
        (self.nodes.len() - 1) as u32
    }

    /// Add a gate `offset + Σ sign·[Σ c·bit(s) + bias ≥ 0]` over signals, simplifying constants, identities
    /// and repeats. Errors when a linear form leaves the exact range.
    pub fn gate(&mut self, name: &str, terms: &[(Vec<(Sig, i64)>, i64, i64)], offset: i64) -> Result<Sig, WeaveError> {
        let mut out_terms = Vec::new();
        let mut offset = offset;
        for (lin, bias, sign) in terms {
            let mut bias = *bias;
            let mut acc: Vec<(u32, i64)> = Vec::new();
            for (s, c) in lin {
                if *c == 0 {
                    continue;
                }
                if let Some(b) = s.as_const() {
                    bias += if b { *c } else { 0 };
                    continue;
                }
                let (node, c) = if s.neg {
                    bias += c;
                    (s.node, -c)
                } else {
                    (s.node, *c)
                };
                match acc.iter_mut().find(|(n, _)| *n == node) {
                    Some(e) => e.1 += c,
                    None => acc.push((node, c)),
                }
            }
            acc.retain(|(_, c)| *c != 0);
            acc.sort();
            let t = Term { lin: acc, bias, sign: *sign };
            let (lo, hi) = t.range();
            let bound = lo.abs().max(hi.abs()) + 1;
            if bound > MAX_FORM {
                return Err(WeaveError::FormTooWide { name: name.into(), bound });
            }
            if lo >= 0 {
                offset += sign;
            } else if hi < 0 {
            } else {
                out_terms.push(t);
            }
        }
        if out_terms.is_empty() {
            return match offset {
                0 => Ok(Sig::ZERO),
                1 => Ok(Sig::ONE),
                _ => Err(WeaveError::Other(format!("gate {name} is the constant {offset}, not a bit (weaver bug)"))),
            };
        }
        if out_terms.len() == 1 && offset == 0 && out_terms[0].sign == 1 && out_terms[0].lin.len() == 1 {
            let t = &out_terms[0];
            let (node, c) = t.lin[0];
            let f0 = t.bias >= 0;
            let f1 = c + t.bias >= 0;
            match (f0, f1) {
                (false, true) => return Ok(Sig::of(node)),
                (true, false) => return Ok(Sig::of(node).not()),
                _ => {}
            }
        }
        let g = Gate { terms: out_terms, offset };
        if let Some(s) = self.dedup.get(&g) {
            return Ok(*s);
        }
        self.gates.push(g.clone());
        let id = self.add_node(Source::Gate((self.gates.len() - 1) as u32), name.to_string());
        let s = Sig::of(id);
        self.dedup.insert(g, s);
        Ok(s)
    }

    /// Evaluate every gate given the values of all non-gate nodes (`inputs(node) -> bit`); returns one bit
    /// per node. Used by tests to check lowering independently of weights; errors if a gate is not 0/1.
    pub fn eval(&self, inputs: &dyn Fn(u32, Source) -> bool) -> Result<Vec<bool>, WeaveError> {
        let mut v = vec![false; self.nodes.len()];
        for (i, s) in self.nodes.iter().enumerate() {
            v[i] = match s {
                Source::Const => true,
                Source::Gate(g) => {
                    let g = &self.gates[*g as usize];
                    let mut y = g.offset;
                    for t in &g.terms {
                        let l: i64 = t.bias + t.lin.iter().map(|(n, c)| if v[*n as usize] { *c } else { 0 }).sum::<i64>();
                        if l >= 0 {
                            y += t.sign;
                        }
                    }
                    if y != 0 && y != 1 {
                        return Err(WeaveError::GateNotBinary { name: self.names[i].clone(), value: y });
                    }
                    y == 1
                }
                other => inputs(i as u32, *other),
            };
        }
        Ok(v)
    }
}

/// The bit value of a signal given node bits.
pub fn sig_bit(v: &[bool], s: Sig) -> bool {
    v[s.node as usize] != s.neg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_identities_and_dedup_fold() {
        let mut n = Netlist::new();
        let a = Sig::of(n.add_node(Source::TokBit(0), "a".into()));
        // [a - 1 >= 0] is a itself; [-a >= 0] is NOT a; [1 >= 0] is the constant 1.
        assert_eq!(n.gate("id", &[(vec![(a, 1)], -1, 1)], 0).unwrap(), a);
        assert_eq!(n.gate("not", &[(vec![(a, -1)], 0, 1)], 0).unwrap(), a.not());
        assert_eq!(n.gate("one", &[(vec![(Sig::ONE, 1)], 0, 1)], 0).unwrap(), Sig::ONE);
        let b = Sig::of(n.add_node(Source::TokBit(1), "b".into()));
        let g1 = n.gate("and", &[(vec![(a, 1), (b, 1)], -2, 1)], 0).unwrap();
        let g2 = n.gate("and2", &[(vec![(b, 1), (a, 1)], -2, 1)], 0).unwrap();
        assert_eq!(g1, g2);
        assert_eq!(n.gates.len(), 1);
        let e = n.gate("wide", &[(vec![(a, 1 << 17)], 0, 1)], 0).unwrap_err();
        assert!(matches!(e, WeaveError::FormTooWide { .. }), "{e}");
    }
}
