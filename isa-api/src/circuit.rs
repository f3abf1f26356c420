//! The per-step circuit: a word- and bit-level IR.
//!
//! A [`Circuit`] is a list of [`Node`]s in topological order (every operand index is smaller than the node's
//! own index). Each node produces an unsigned word of `width` bits (1..=64); signedness is a property of the
//! operation, never of the value. Reads see the *committed* state at the start of the step; the step's effects
//! are register next-values ([`RegNext`]), at most one memory write per memory ([`MemWrite`]), at most one
//! clear per memory ([`MemClear`]: every word 0 at once), output-port writes ([`OutWrite`]) and a halt bit.
//! Registers without a [`RegNext`] keep their value.

use serde::{Deserialize, Serialize};

/// Index of a node in [`Circuit::nodes`].
pub type NodeId = u32;

/// Shift and rotate kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShiftKind {
    /// Shift left, zeros in.
    Shl,
    /// Logical shift right, zeros in.
    Shr,
    /// Arithmetic shift right, copies of the sign bit in.
    Sar,
    /// Rotate left (amount taken modulo the width).
    Rotl,
    /// Rotate right (amount taken modulo the width).
    Rotr,
}

/// Comparison kinds; every comparison yields a 1-bit word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CmpKind {
    /// Equal.
    Eq,
    /// Not equal.
    Ne,
    /// Unsigned less-than.
    Ltu,
    /// Signed (two's complement) less-than.
    Lts,
    /// Unsigned less-or-equal.
    Leu,
    /// Signed less-or-equal.
    Les,
}

/// One operation. Operand words are named by [`NodeId`]; result width is [`Node::width`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// A constant (must fit the width).
    Const { value: u64 },
    /// The committed value of register `reg` (width = the register's width).
    Reg { reg: u32 },
    /// The latest value the host injected on input port `port` (0 before any; width = the port's width).
    Input { port: u32 },
    /// The committed word of memory `mem` at address `addr` (address width = the memory's address width;
    /// result width = its word width).
    Load { mem: u32, addr: NodeId },
    /// `a + b (+ cin)` modulo 2^width; `a`, `b` of the result width, `cin` 1 bit. Take a carry out by adding
    /// zero-extended operands one bit wider.
    Add { a: NodeId, b: NodeId, cin: Option<NodeId> },
    /// `a - b` modulo 2^width.
    Sub { a: NodeId, b: NodeId },
    /// Bitwise `a AND b` (operands of the node width).
    And { a: NodeId, b: NodeId },
    /// Bitwise `a OR b` (operands of the node width).
    Or { a: NodeId, b: NodeId },
    /// Bitwise `a XOR b` (operands of the node width).
    Xor { a: NodeId, b: NodeId },
    /// Bitwise NOT of `a` (of the node width).
    Not { a: NodeId },
    /// Shift or rotate by a constant amount. Shifts by >= width give 0 (or all sign bits for `sar`).
    ShiftConst { kind: ShiftKind, a: NodeId, by: u32 },
    /// Shift or rotate by the unsigned value of `by` (at most 8 bits wide; slice wider amounts first).
    Shift { kind: ShiftKind, a: NodeId, by: NodeId },
    /// Compare two words of equal width; result width 1.
    Cmp { kind: CmpKind, a: NodeId, b: NodeId },
    /// `sel ? if1 : if0`; `sel` is 1 bit.
    Mux { sel: NodeId, if0: NodeId, if1: NodeId },
    /// Zero extension (or identity) to the node width.
    Zext { a: NodeId },
    /// Sign extension (or identity) to the node width.
    Sext { a: NodeId },
    /// Bits `lo .. lo + width` of `a`.
    Slice { a: NodeId, lo: u32 },
    /// Concatenation, first part in the low bits; widths add up to the node width.
    Concat { parts: Vec<NodeId> },
    /// Low `width` bits of `a * b` (operands of the node width).
    MulLo { a: NodeId, b: NodeId },
    /// High `width` bits of the 2*width-bit product of `a` and `b` (operands of the node width), each operand
    /// read as signed or unsigned.
    MulHi { a: NodeId, b: NodeId, signed_a: bool, signed_b: bool },
    /// `table[index]` (entries beyond the table read 0); `index` at most 12 bits wide.
    Lookup { table: Vec<u64>, index: NodeId },
    /// AND-OR select: the OR over cases of `sel ? value : 0` (`sel` 1 bit, `value` of the node width). With
    /// one-hot selects this is a parallel multiplexer (two layers however many cases).
    AndOr { cases: Vec<(NodeId, NodeId)> },
    /// A one-hot select: the value of the case whose select is 1, or 0 when none is. The circuit promises
    /// that at most one select is 1 at a time; the weaver then computes it in ONE threshold layer (each bit
    /// is the sum of the cases' `select AND bit`, exact because at most one term is on), where `AndOr` takes
    /// two. Where the promise is broken the reference evaluator gives the OR of the selected values and the
    /// woven network something else, which a lockstep check reports.
    OneHot { cases: Vec<(NodeId, NodeId)> },
    /// A multi-operand sum `konst + Σ ±(x << shift)` modulo 2^width, each operand zero-extended (any widths).
    /// The weaver computes it as one weighted sum (as deep as one add of the node width), where a chain of
    /// `Add`/`Sub` nodes would take one sum per node: e.g. `x - 5·d` is `[(x, 0, +), (d, 0, -), (d, 2, -)]`.
    Sum { terms: Vec<SumTerm>, konst: u64 },
}

/// One operand of [`Op::Sum`]: node `node` shifted left by `shift` bits, subtracted when `neg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SumTerm {
    /// The operand (zero-extended, any width).
    pub node: NodeId,
    /// How many bits it is shifted left (its weight is `2^shift`).
    #[serde(default)]
    pub shift: u32,
    /// Subtracted instead of added.
    #[serde(default)]
    pub neg: bool,
}

/// A node: an operation and its result width in bits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Width of the result in bits (1..=64).
    pub width: u32,
    /// The operation.
    #[serde(flatten)]
    pub op: Op,
}

/// A register's value after the step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegNext {
    /// Index of the register in the machine's description.
    pub reg: u32,
    /// The node holding its value after the step (the register's width).
    pub value: NodeId,
}

/// A memory write: `mem[addr] = data` when `enable` (1 bit) is 1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemWrite {
    /// Index of the memory in the machine's description.
    pub mem: u32,
    /// The row written (the memory's address width).
    pub addr: NodeId,
    /// The word written (the memory's word width).
    pub data: NodeId,
    /// 1 bit: the write happens in this step.
    pub enable: NodeId,
}

/// A memory clear: every word of `mem` is 0 after a step where `enable` (1 bit) is 1; a write to `mem` in that
/// step is dropped (the clear comes last). Woven as one token whose Gated DeltaNet decay is exactly 0 on the
/// memory's heads (see the weaver's `emit`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemClear {
    /// Index of the memory in the machine's description.
    pub mem: u32,
    /// 1 bit: the clear happens in this step.
    pub enable: NodeId,
}

/// An output-port write the host observes: `value` when `enable` (1 bit) is 1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutWrite {
    /// Index of the output port in the machine's description.
    pub port: u32,
    /// The word written (the port's width).
    pub value: NodeId,
    /// 1 bit: the write happens in this step.
    pub enable: NodeId,
}

/// One step of a machine.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct Circuit {
    /// The nodes, in topological order.
    pub nodes: Vec<Node>,
    /// Registers' next values (a register without one keeps its value).
    #[serde(default)]
    pub next: Vec<RegNext>,
    /// Memory writes, at most one per memory.
    #[serde(default)]
    pub mem_writes: Vec<MemWrite>,
    /// Output-port writes.
    #[serde(default)]
    pub outputs: Vec<OutWrite>,
    /// Memory clears, at most one per memory.
    #[serde(default)]
    pub mem_clears: Vec<MemClear>,
    /// 1-bit node: when 1 the step does nothing but halt the machine.
    #[serde(default)]
    pub halt: Option<NodeId>,
}

impl Op {
    /// Operand node ids, in order.
    pub fn operands(&self) -> Vec<NodeId> {
        match self {
            Op::Const { .. } | Op::Reg { .. } | Op::Input { .. } => vec![],
            Op::Load { addr, .. } => vec![*addr],
            Op::Add { a, b, cin } => {
                let mut v = vec![*a, *b];
                v.extend(cin);
                v
            }
            Op::Sub { a, b }
            | Op::And { a, b }
            | Op::Or { a, b }
            | Op::Xor { a, b }
            | Op::Cmp { a, b, .. }
            | Op::MulLo { a, b }
            | Op::MulHi { a, b, .. } => vec![*a, *b],
            Op::Not { a } | Op::ShiftConst { a, .. } | Op::Zext { a } | Op::Sext { a } | Op::Slice { a, .. } => vec![*a],
            Op::Shift { a, by, .. } => vec![*a, *by],
            Op::Mux { sel, if0, if1 } => vec![*sel, *if0, *if1],
            Op::Concat { parts } => parts.clone(),
            Op::Lookup { index, .. } => vec![*index],
            Op::AndOr { cases } | Op::OneHot { cases } => cases.iter().flat_map(|(s, v)| [*s, *v]).collect(),
            Op::Sum { terms, .. } => terms.iter().map(|t| t.node).collect(),
        }
    }
}

/// Builds a [`Circuit`] with width inference; methods return the new node's id. Widths are checked by
/// [`crate::MachineDesc::validate`], so the builder itself never fails.
#[derive(Clone, Debug, Default)]
pub struct CircuitBuilder {
    /// The circuit so far.
    pub circuit: Circuit,
}

impl CircuitBuilder {
    /// An empty circuit.
    pub fn new() -> Self {
        Self::default()
    }
    /// Append a node with an explicit width.
    pub fn node(&mut self, width: u32, op: Op) -> NodeId {
        self.circuit.nodes.push(Node { width, op });
        (self.circuit.nodes.len() - 1) as NodeId
    }
    /// Width of an existing node (0 if out of range).
    pub fn width(&self, n: NodeId) -> u32 {
        self.circuit.nodes.get(n as usize).map_or(0, |x| x.width)
    }
    /// A constant `value` of `width` bits (`value` must fit; [`Self::konst_masked`] masks it).
    pub fn konst(&mut self, width: u32, value: u64) -> NodeId {
        self.node(width, Op::Const { value })
    }
    /// Register `reg`'s value at the start of the step (`width` bits, the register's declared width).
    pub fn reg(&mut self, reg: u32, width: u32) -> NodeId {
        self.node(width, Op::Reg { reg })
    }
    /// The latest injected value of input port `port` ([`Op::Input`]).
    pub fn input(&mut self, port: u32, width: u32) -> NodeId {
        self.node(width, Op::Input { port })
    }
    /// The word of memory `mem` at row `addr`, as committed before this step (`word_width` bits).
    pub fn load(&mut self, mem: u32, word_width: u32, addr: NodeId) -> NodeId {
        self.node(word_width, Op::Load { mem, addr })
    }
    /// `a + b` modulo 2^width (`a`'s width; `b` as wide).
    pub fn add(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.node(self.width(a), Op::Add { a, b, cin: None })
    }
    /// `a + b + cin` modulo 2^width (`cin` one bit).
    pub fn add_c(&mut self, a: NodeId, b: NodeId, cin: NodeId) -> NodeId {
        self.node(self.width(a), Op::Add { a, b, cin: Some(cin) })
    }
    /// `a - b` modulo 2^width.
    pub fn sub(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.node(self.width(a), Op::Sub { a, b })
    }
    /// Bitwise `a AND b`.
    pub fn and(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.node(self.width(a), Op::And { a, b })
    }
    /// Bitwise `a OR b`.
    pub fn or(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.node(self.width(a), Op::Or { a, b })
    }
    /// Bitwise `a XOR b`.
    pub fn xor(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.node(self.width(a), Op::Xor { a, b })
    }
    /// Bitwise NOT of `a`.
    pub fn not(&mut self, a: NodeId) -> NodeId {
        self.node(self.width(a), Op::Not { a })
    }
    /// `a` shifted by the constant `by` bits ([`ShiftKind`]: left, logical or arithmetic right).
    pub fn shift_const(&mut self, kind: ShiftKind, a: NodeId, by: u32) -> NodeId {
        self.node(self.width(a), Op::ShiftConst { kind, a, by })
    }
    /// `a` shifted by the value of `by` bits ([`ShiftKind`]).
    pub fn shift(&mut self, kind: ShiftKind, a: NodeId, by: NodeId) -> NodeId {
        self.node(self.width(a), Op::Shift { kind, a, by })
    }
    /// The comparison `a kind b` ([`CmpKind`]: equal, not equal, signed or unsigned less than, ...), one bit.
    pub fn cmp(&mut self, kind: CmpKind, a: NodeId, b: NodeId) -> NodeId {
        self.node(1, Op::Cmp { kind, a, b })
    }
    /// `a == b`, one bit.
    pub fn eq(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.cmp(CmpKind::Eq, a, b)
    }
    /// `a` zero-extended (or truncated) to `width` bits.
    pub fn zext(&mut self, a: NodeId, width: u32) -> NodeId {
        self.node(width, Op::Zext { a })
    }
    /// `a` sign-extended to `width` bits.
    pub fn sext(&mut self, a: NodeId, width: u32) -> NodeId {
        self.node(width, Op::Sext { a })
    }
    /// Bits `lo .. lo + width` of `a`.
    pub fn slice(&mut self, a: NodeId, lo: u32, width: u32) -> NodeId {
        self.node(width, Op::Slice { a, lo })
    }
    /// Bit `i` of `a`.
    pub fn bit(&mut self, a: NodeId, i: u32) -> NodeId {
        self.slice(a, i, 1)
    }
    /// `parts` side by side, the first in the low bits.
    pub fn concat(&mut self, parts: &[NodeId]) -> NodeId {
        let w = parts.iter().map(|p| self.width(*p)).sum();
        self.node(w, Op::Concat { parts: parts.to_vec() })
    }
    /// The low half of `a * b` (`a`'s width).
    pub fn mul_lo(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.node(self.width(a), Op::MulLo { a, b })
    }
    /// The high half of the double-width product `a * b`, each operand signed or unsigned.
    pub fn mul_hi(&mut self, a: NodeId, b: NodeId, signed_a: bool, signed_b: bool) -> NodeId {
        self.node(self.width(a), Op::MulHi { a, b, signed_a, signed_b })
    }
    /// `table[index]`, `width` bits ([`Op::Lookup`]: entries beyond the table read 0, `index` at most 12 bits).
    pub fn lookup(&mut self, width: u32, table: Vec<u64>, index: NodeId) -> NodeId {
        self.node(width, Op::Lookup { table, index })
    }
    /// `konst + Σ ±(x << shift)` modulo 2^width ([`Op::Sum`]).
    pub fn sum(&mut self, width: u32, terms: &[SumTerm], konst: u64) -> NodeId {
        self.node(width, Op::Sum { terms: terms.to_vec(), konst })
    }
    /// OR over `(sel, value)` cases of `sel ? value : 0`.
    pub fn and_or(&mut self, width: u32, cases: &[(NodeId, NodeId)]) -> NodeId {
        self.node(width, Op::AndOr { cases: cases.to_vec() })
    }
    /// A one-hot select over `(sel, value)` cases ([`Op::OneHot`]): at most one `sel` may be 1.
    pub fn one_hot(&mut self, width: u32, cases: &[(NodeId, NodeId)]) -> NodeId {
        self.node(width, Op::OneHot { cases: cases.to_vec() })
    }
    /// Set register `reg`'s next value.
    pub fn set_next(&mut self, reg: u32, value: NodeId) {
        self.circuit.next.push(RegNext { reg, value });
    }
    /// Write `data` to memory `mem` at row `addr` in a step where `enable` is 1 (at most one write per memory
    /// and step takes effect, at the commit).
    pub fn mem_write(&mut self, mem: u32, addr: NodeId, data: NodeId, enable: NodeId) {
        self.circuit.mem_writes.push(MemWrite { mem, addr, data, enable });
    }
    /// Clear memory `mem` (every word 0) in a step where `enable` is 1 ([`MemClear`]).
    pub fn mem_clear(&mut self, mem: u32, enable: NodeId) {
        self.circuit.mem_clears.push(MemClear { mem, enable });
    }
    /// Write `value` to output port `port` in a step where `enable` is 1.
    pub fn output(&mut self, port: u32, value: NodeId, enable: NodeId) {
        self.circuit.outputs.push(OutWrite { port, value, enable });
    }
    /// The machine halts after a step where `bit` is 1.
    pub fn halt(&mut self, bit: NodeId) {
        self.circuit.halt = Some(bit);
    }
    // ---- gate helpers shared by machines (word-level forms that keep the woven logic shallow: in the weaver
    // an `Eq`/`Ne` over at most 16 bits, a `Mux` and a binary `And`/`Or` are one threshold layer; `AndOr` is
    // two) ----

    /// A constant of `width` bits holding the low `width` bits of `value`.
    pub fn konst_masked(&mut self, width: u32, value: u64) -> NodeId {
        let m = if width >= 64 { u64::MAX } else { (1u64 << width) - 1 };
        self.konst(width, value & m)
    }
    /// `x == value` (1 bit).
    pub fn eq_const(&mut self, x: NodeId, value: u64) -> NodeId {
        let c = self.konst_masked(self.width(x), value);
        self.eq(x, c)
    }
    /// `x != value` (1 bit).
    pub fn ne_const(&mut self, x: NodeId, value: u64) -> NodeId {
        let c = self.konst_masked(self.width(x), value);
        self.cmp(CmpKind::Ne, x, c)
    }
    /// `x < value`, unsigned (1 bit).
    pub fn ltu_const(&mut self, x: NodeId, value: u64) -> NodeId {
        let c = self.konst_masked(self.width(x), value);
        self.cmp(CmpKind::Ltu, x, c)
    }
    /// OR of 1-bit signals: one `Ne 0` per 16 inputs (a tree above 16).
    pub fn any(&mut self, xs: &[NodeId]) -> NodeId {
        if xs.len() == 1 {
            return xs[0];
        }
        if xs.len() <= 16 {
            let c = self.concat(xs);
            return self.ne_const(c, 0);
        }
        let parts: Vec<NodeId> = xs.chunks(16).map(|c| self.any(c)).collect();
        self.any(&parts)
    }
    /// AND of 1-bit signals: one `Eq all-ones` per 16 inputs (a tree above 16).
    pub fn all(&mut self, xs: &[NodeId]) -> NodeId {
        if xs.len() == 1 {
            return xs[0];
        }
        if xs.len() <= 16 {
            let c = self.concat(xs);
            return self.eq_const(c, (1u64 << xs.len()) - 1);
        }
        let parts: Vec<NodeId> = xs.chunks(16).map(|c| self.all(c)).collect();
        self.all(&parts)
    }
    /// `sel ? if1 : if0`, `width(if0)` bits (`sel` one bit): the one select of the builder, operands in reading
    /// order (the node is [`Op::Mux`]).
    pub fn select(&mut self, sel: NodeId, if1: NodeId, if0: NodeId) -> NodeId {
        self.node(self.width(if0), Op::Mux { sel, if0, if1 })
    }
    /// Two's-complement negation `0 - x`.
    pub fn neg(&mut self, x: NodeId) -> NodeId {
        let z = self.konst_masked(self.width(x), 0);
        self.sub(z, x)
    }
    /// `a + value` modulo 2^width, of `a`'s width (`value` taken modulo 2^width): a one-term [`Op::Sum`], so
    /// `add_const(x, 0xFF)` on 8 bits is `x - 1`.
    pub fn add_const(&mut self, a: NodeId, value: u64) -> NodeId {
        let w = self.width(a);
        let m = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
        self.sum(w, &[SumTerm { node: a, shift: 0, neg: false }], value & m)
    }
    /// A one-hot select with a default (`width` bits): the value of the case whose select is 1, or `default`
    /// when none is. The selects (1 bit each) must be exclusive ([`Op::OneHot`]); the default's select is NOT
    /// [`Self::any`] of them, one more case of the same one-hot node.
    pub fn one_hot_or(&mut self, width: u32, cases: &[(NodeId, NodeId)], default: NodeId) -> NodeId {
        let sels: Vec<NodeId> = cases.iter().map(|c| c.0).collect();
        let any = self.any(&sels);
        let none = self.not(any);
        let mut all = cases.to_vec();
        all.push((none, default));
        self.one_hot(width, &all)
    }
    /// The one-hot decode of a small field: `x == v` (1 bit, one [`Self::eq_const`]) for each `v` in `0..n`.
    pub fn one_hot_decode(&mut self, x: NodeId, n: u64) -> Vec<NodeId> {
        (0..n).map(|v| self.eq_const(x, v)).collect()
    }
    /// `x == value AND NOT veto` (1 bit; `veto` 1 bit), as one equality over `x` and `veto` side by side.
    pub fn eq_const_unless(&mut self, x: NodeId, value: u64, veto: NodeId) -> NodeId {
        let w = self.width(x);
        let c = self.concat(&[x, veto]);
        self.eq_const(c, value & ((1u64 << w) - 1))
    }
    /// A 1-bit [`Self::lookup`] over every value of `key` (at most 12 bits): entry `v` is `f(v)`.
    pub fn truth_table(&mut self, key: NodeId, f: impl Fn(u64) -> bool) -> NodeId {
        let table: Vec<u64> = (0..1u64 << self.width(key)).map(|v| u64::from(f(v))).collect();
        self.lookup(1, table, key)
    }

    /// The circuit built.
    pub fn finish(self) -> Circuit {
        self.circuit
    }
}
