//! Pass 1, `lower`: a machine's word-level circuit becomes a bit-level [`Netlist`] of threshold gates.
//!
//! Arithmetic goes through one primitive, [`Lower::weighted_sum`]: the binary value of `Σ 2^p·bit` (plus a
//! constant) modulo `2^n`, computed window by window. Inside a window every output bit is a piecewise-constant
//! function of ONE linear form `V` (`bit j = floor(V / 2^j) mod 2`, an alternating sum of steps), so a window
//! costs one layer; the window's carry, a small binary number, feeds the next window. Windows are as wide as
//! the exact range allows (|V| < 2^17). Adds of up to 16 bits take one layer (three steps per bit, as in the
//! adder probe), 32-bit adds two, a 32×32 multiply four.
//!
//! A wide window costs the incremental executor: every output bit's form holds every input bit below it, so a
//! change of a low input bit (a program counter's, at every step) changes all of the window's forms. An add, a
//! subtract or a sum named in [`lower_narrowing`]'s set takes windows of at most [`NARROW_WINDOW`] bits instead
//! (one more layer per extra window, inside the sum): `weave` narrows those where the machine keeps its depth.
//!
//! Token classes: class 0 is STEP, class 1 HALT, class `2 + f` field `f` of the protocol.

use crate::error::WeaveError;
use crate::net::{Commit, FieldOut, Netlist, Read, Sig, Source};
use isa_api::{CmpKind, FieldRole, MachineDesc, Op, Protocol, ShiftKind};

/// Token class numbering.
pub struct Classes;
impl Classes {
    pub const STEP: u32 = 0;
    pub const HALT: u32 = 1;
    /// Class of field `f`.
    pub fn field(f: u32) -> u32 {
        2 + f
    }
}

/// The lowering state: the netlist being built.
pub struct Lower<'a> {
    pub net: Netlist,
    desc: &'a MachineDesc,
    proto: &'a Protocol,
    /// Per field: staged value bits then (a memory write's first address chunk) the written-before bit.
    pub staged: Vec<Vec<Sig>>,
    pub class: Vec<Sig>,
    pub tok_bits: Vec<Sig>,
    pub tok_end: Sig,
    /// The adds, subtracts and sums that take [`NARROW_WINDOW`]-bit windows.
    narrow: std::collections::HashSet<String>,
    /// Every add, subtract and sum wider than [`NARROW_WINDOW`], by name, in order.
    wide_sums: Vec<String>,
    /// Memory commits also require the step's write marks (see [`lower_planned`]).
    write_marks: bool,
}

/// Whether token `tok` leaves step position `k` open: a commit (`STEP`, an end token), an injected input token
/// (between steps; an answer within the step leaves open the positions after its request port's), or a token
/// of an earlier step position that is not its step's last. Load tokens, `HALT` and later positions' tokens
/// close it.
pub fn leaves_open(proto: &Protocol, tok: u32, k: usize) -> bool {
    token_leaves_open(proto, proto.decode(tok), k)
}

/// [`leaves_open`] of a token already decoded (`proto.decode(tok)`): the embedding asks it of every token for
/// every step position.
pub fn token_leaves_open(proto: &Protocol, tok: Option<isa_api::Token>, k: usize) -> bool {
    match tok {
        Some(isa_api::Token::Step) => true,
        Some(isa_api::Token::Value { field, end, .. }) => {
            let f = &proto.fields[field as usize];
            if let FieldRole::In { port, .. } = f.role {
                // An answer within the step leaves open the positions after its request port; any other input
                // every position, as a commit does.
                return match proto.request_of(port) {
                    Some(req) => proto.step_fields.iter().rposition(|&g| matches!(proto.fields[g as usize].role, FieldRole::Out { port: q, .. } if q == req)).is_some_and(|last| last < k),
                    None => true,
                };
            }
            if f.host_only {
                return false;
            }
            end || proto.step_fields[..k].contains(&field)
        }
        _ => false,
    }
}

/// Is token class `class` a value of one of memory `mem`'s write fields (an address or data chunk)?
pub fn writes_memory(proto: &Protocol, class: u32, mem: u32) -> bool {
    class >= 2 && proto.fields.get((class - 2) as usize).is_some_and(|f| matches!(f.role, FieldRole::MemAddr { mem: m, .. } | FieldRole::MemData { mem: m, .. } if m == mem))
}

/// Is token class `class` a value of a step field that comes before all of memory `mem`'s write fields in step
/// order? Within a step such a token comes before any write token of `mem` (fields are written in step order).
pub fn before_writes(proto: &Protocol, class: u32, mem: u32) -> bool {
    let first = proto.step_fields.iter().position(|&f| writes_memory(proto, Classes::field(f), mem));
    let pos = class.checked_sub(2).and_then(|f| proto.step_fields.iter().position(|&g| g == f));
    matches!((pos, first), (Some(p), Some(w)) if p < w)
}

/// Does field `f` stage a written-before bit (a memory write's first address chunk)?
fn has_written_bit(f: &isa_api::Field) -> bool {
    matches!(f.role, FieldRole::MemAddr { chunk: 0, .. })
}

fn bits_of(v: u64, n: u32) -> Vec<Sig> {
    (0..n).map(|i| Sig::konst(i < 64 && (v >> i) & 1 == 1)).collect()
}

/// Lower a validated machine to its netlist.
pub fn lower(desc: &MachineDesc, proto: &Protocol) -> Result<Netlist, WeaveError> {
    Ok(lower_narrowing(desc, proto, &std::collections::HashSet::new())?.0)
}

/// The widest window of a sum (bits): its forms stay below the exact range (`net::MAX_FORM`).
pub const WIDE_WINDOW: u32 = 17;

/// The window of a narrowed sum (bits).
pub const NARROW_WINDOW: u32 = 8;

/// [`lower`], with the adds, subtracts and sums whose node names (`n<id>`) are in `narrow` taking windows of at
/// most [`NARROW_WINDOW`] bits. Also returns the names of every add, subtract and sum wider than that: the ones
/// narrowing would change.
pub fn lower_narrowing(desc: &MachineDesc, proto: &Protocol, narrow: &std::collections::HashSet<String>) -> Result<(Netlist, Vec<String>), WeaveError> {
    lower_planned(desc, proto, narrow, false)
}

/// [`lower_narrowing`], with `write_marks`: each memory's commit enable also requires its [`Source::Wrote`] bit
/// (one more layer-0 head per memory the circuit writes; see `build`), so that a step that does not store leaves
/// the enable, which every head of the memory reads, as it was.
pub fn lower_planned(desc: &MachineDesc, proto: &Protocol, narrow: &std::collections::HashSet<String>, write_marks: bool) -> Result<(Netlist, Vec<String>), WeaveError> {
    let mut l = Lower::new(desc, proto);
    l.narrow = narrow.clone();
    l.write_marks = write_marks;
    l.build()?;
    Ok((l.net, l.wide_sums))
}

impl<'a> Lower<'a> {
    pub fn new(desc: &'a MachineDesc, proto: &'a Protocol) -> Self {
        let mut net = Netlist::new();
        let nclass = 2 + proto.fields.len() as u32;
        let class = (0..nclass)
            .map(|c| {
                let name = match c {
                    0 => "class:STEP".to_string(),
                    1 => "class:HALT".to_string(),
                    _ => format!("class:{}", proto.fields[(c - 2) as usize].name),
                };
                Sig::of(net.add_node(Source::TokClass(c), name))
            })
            .collect();
        let maxw = proto.fields.iter().map(|f| f.width).max().unwrap_or(0);
        let tok_bits = (0..maxw).map(|j| Sig::of(net.add_node(Source::TokBit(j), format!("tok.bit{j}")))).collect();
        let tok_end = Sig::of(net.add_node(Source::TokEnd, "tok.end".into()));
        let mut staged = Vec::new();
        for (fi, f) in proto.fields.iter().enumerate() {
            let n = f.width + has_written_bit(f) as u32;
            let v = (0..n)
                .map(|b| {
                    let nm = if b == f.width { format!("staged:{}.written", f.name) } else { format!("staged:{}.bit{b}", f.name) };
                    Sig::of(net.add_node(Source::Staged { field: fi as u32, bit: b }, nm))
                })
                .collect();
            staged.push(v);
        }
        Self { net, desc, proto, staged, class, tok_bits, tok_end, narrow: Default::default(), wide_sums: Vec::new(), write_marks: false }
    }

    fn fields(&self, pred: impl Fn(FieldRole) -> bool) -> Vec<u32> {
        self.proto.fields_where(pred)
    }

    /// Concatenated staged value bits (without written-before bits) of the given fields.
    fn staged_concat(&self, fields: &[u32]) -> Vec<Sig> {
        fields.iter().flat_map(|f| self.staged[*f as usize][..self.proto.fields[*f as usize].width as usize].to_vec()).collect()
    }

    fn build(&mut self) -> Result<(), WeaveError> {
        let d = self.desc;
        // A step commits at its last token: `STEP` or a field's end variant (exclusive token features).
        let step = self.class[Classes::STEP as usize];
        let commit = self.net.gate("commit", &[(vec![(step, 1), (self.tok_end, 1)], -1, 1)], 0)?;
        self.net.commit = Some(commit);
        // Memory commits (computed in layer 0's MLP when a step write and loads must be muxed): at a commit a
        // memory written before applies its latest write again (a no-op unless this step changed it), unless the
        // step wrote fields before the memory's write fields and none of them (`Wrote`): then its latest write
        // is the one the previous commit applied, and nothing has written the memory since (loads come before
        // the first step), so applying it would change nothing. Steps that do not store then leave the commit
        // enables, which every head of the memory reads, as they were.
        for (mi, _) in d.memories.iter().enumerate() {
            let mi = mi as u32;
            let la = self.fields(|r| matches!(r, FieldRole::LoadAddr { mem, .. } if mem == mi));
            let ld = self.fields(|r| matches!(r, FieldRole::LoadData { mem, .. } if mem == mi));
            let load_cls = self.class[Classes::field(*ld.last().expect("every memory has load fields")) as usize];
            let (laddr, ldata) = (self.staged_concat(&la), self.staged_concat(&ld));
            let sa = self.fields(|r| matches!(r, FieldRole::MemAddr { mem, .. } if mem == mi));
            let commit = if sa.is_empty() {
                Commit { mem: mi, enable: load_cls, addr: laddr, data: ldata }
            } else {
                let sd = self.fields(|r| matches!(r, FieldRole::MemData { mem, .. } if mem == mi));
                let written = *self.staged[sa[0] as usize].last().expect("a first address chunk stages its written-before bit");
                let name = &d.memories[mi as usize].name;
                let mut applies = vec![(step, 1), (self.tok_end, 1), (written, 1)];
                if self.write_marks {
                    self.net.add_node(Source::TokWrites(mi), format!("tok.writes:{name}"));
                    self.net.add_node(Source::TokBeforeWrites(mi), format!("tok.before_writes:{name}"));
                    applies.push((Sig::of(self.net.add_node(Source::Wrote(mi), format!("wrote:{name}"))), 1));
                }
                let need = 1 - applies.len() as i64;
                let enable = self.net.gate(&format!("{name}.commit"), &[(applies, need, 1), (vec![(load_cls, 1)], -1, 1)], 0)?;
                let (saddr, sdata) = (self.staged_concat(&sa), self.staged_concat(&sd));
                let addr = self.mux_bits(&format!("{name}.waddr"), load_cls, &saddr, &laddr)?;
                let data = self.mux_bits(&format!("{name}.wdata"), load_cls, &sdata, &ldata)?;
                Commit { mem: mi, enable, addr, data }
            };
            self.net.commits.push(commit);
        }
        // Registers: committed at every commit from the staged next-value fields (their latest chunks).
        for (ri, r) in d.registers.iter().enumerate() {
            let ri = ri as u32;
            let fs = self.fields(|x| matches!(x, FieldRole::RegNext { reg, .. } if reg == ri));
            let v = self.staged_concat(&fs);
            self.net.reg_values.push(v);
            let bits = (0..r.width).map(|b| self.net.add_node(Source::RegBit { reg: ri, bit: b }, format!("reg:{}.bit{b}", r.name))).collect();
            self.net.reg_bits.push(bits);
        }
        // The circuit.
        let mut words: Vec<Vec<Sig>> = Vec::with_capacity(d.circuit.nodes.len());
        for (i, n) in d.circuit.nodes.iter().enumerate() {
            let w = self.node(i as u32, &n.op, n.width, &words)?;
            debug_assert_eq!(w.len(), n.width as usize);
            words.push(w);
        }
        // Outputs of every step field: its value bits and its emit bit (the rule of `Protocol::emitted`: a
        // register chunk that differs from its staged latest value; a memory write's chunk when the write is on
        // and the chunk differs, or for the first address chunk when the memory was never written; an output
        // port's chunks when it is written).
        let c = &d.circuit;
        for (k, &fi) in self.proto.step_fields.iter().enumerate() {
            let f = &self.proto.fields[fi as usize];
            let sl = |v: &Vec<Sig>| v[f.lo as usize..(f.lo + f.width) as usize].to_vec();
            let staged = self.staged[fi as usize].clone();
            let name = format!("emit:{}", f.name);
            let out = match f.role {
                FieldRole::RegNext { reg, .. } => {
                    let v = match c.next.iter().find(|x| x.reg == reg) {
                        Some(rn) => words[rn.value as usize].clone(),
                        None => self.net.reg_bits[reg as usize].iter().map(|n| Sig::of(*n)).collect(),
                    };
                    let bits = sl(&v);
                    let emit = self.differs(&name, &bits, &staged[..f.width as usize], Sig::ONE, None)?;
                    FieldOut { bits, emit }
                }
                FieldRole::MemAddr { mem, .. } | FieldRole::MemData { mem, .. } => {
                    let w = c.mem_writes.iter().find(|w| w.mem == mem).expect("protocol from this circuit");
                    let src = if matches!(f.role, FieldRole::MemAddr { .. }) { w.addr } else { w.data };
                    let bits = sl(&words[src as usize]);
                    let written = has_written_bit(f).then(|| staged[f.width as usize]);
                    let emit = self.differs(&name, &bits, &staged[..f.width as usize], words[w.enable as usize][0], written)?;
                    FieldOut { bits, emit }
                }
                FieldRole::Out { port, .. } => {
                    let o = c.outputs.iter().find(|o| o.port == port).expect("protocol from this circuit");
                    FieldOut { bits: sl(&words[o.value as usize]), emit: words[o.enable as usize][0] }
                }
                FieldRole::MemClear { mem } => {
                    // Written (as 0) when the clear is on; its token zeroes the memory's heads (see `emit`).
                    let cl = c.mem_clears.iter().find(|x| x.mem == mem).expect("protocol from this circuit");
                    FieldOut { bits: vec![Sig::ZERO], emit: words[cl.enable as usize][0] }
                }
                FieldRole::LoadAddr { .. } | FieldRole::LoadData { .. } | FieldRole::In { .. } => unreachable!("not a step field"),
            };
            debug_assert_eq!(k, self.net.outputs.len());
            self.net.outputs.push(out);
        }
        self.net.halt = c.halt.map(|h| words[h as usize][0]);
        self.after()?;
        Ok(())
    }

    /// `enable ∧ (bits ≠ staged ∨ ¬written)` (`written`: the staged written-before bit, when the field has one)
    /// as one gate: with `L = Σ 2^i (bits_i - staged_i)`, the exclusive terms `[enable ∧ ¬written]`,
    /// `[enable ∧ written ∧ L ≥ 1]` and `[enable ∧ written ∧ -L ≥ 1]` (each AND a large negative weight on a
    /// false literal).
    fn differs(&mut self, name: &str, bits: &[Sig], staged: &[Sig], enable: Sig, written: Option<Sig>) -> Result<Sig, WeaveError> {
        let big = 1i64 << (bits.len() + 1);
        let mut lin: Vec<(Sig, i64)> = Vec::new();
        for (i, (b, s)) in bits.iter().zip(staged).enumerate() {
            lin.push((*b, 1 << i));
            lin.push((*s, -(1i64 << i)));
        }
        let mut guard = vec![(enable, big)];
        let mut bias = -1 - big;
        if let Some(w) = written {
            guard.push((w, big));
            bias -= big;
        }
        let pos: Vec<(Sig, i64)> = lin.iter().copied().chain(guard.iter().copied()).collect();
        let neg: Vec<(Sig, i64)> = lin.iter().map(|(s, c)| (*s, -c)).chain(guard.iter().copied()).collect();
        let mut terms = vec![(pos, bias, 1), (neg, bias, 1)];
        if let Some(w) = written {
            terms.push((vec![(enable, 1), (w, -1)], -1, 1));
        }
        self.net.gate(name, &terms, 0)
    }

    /// The after bits (see [`leaves_open`]): a function of the current token alone, so each is a token feature
    /// of the embedding (`Source::TokAfter`), not a gate. (As layer-0 gates they took two MLP units per term, 2,800
    /// of the 2A03's 2,964 layer-0 units, and every token changed hundreds of them.) The lm_head picks, among open
    /// positions, the first whose emit bit is set (or `STEP`, or `HALT`); see `emit`.
    fn after(&mut self) -> Result<(), WeaveError> {
        let p = self.proto;
        for k in 0..p.step_fields.len() {
            let name = format!("after:{}", p.fields[p.step_fields[k] as usize].name);
            let g = Sig::of(self.net.add_node(Source::TokAfter(k as u32), name));
            self.net.after.push(g);
        }
        Ok(())
    }

    fn node(&mut self, id: u32, op: &Op, width: u32, words: &[Vec<Sig>]) -> Result<Vec<Sig>, WeaveError> {
        let w = |x: &u32| words[*x as usize].clone();
        let nm = format!("n{id}");
        let n = width as usize;
        Ok(match op {
            Op::Const { value } => bits_of(*value, width),
            Op::Reg { reg } => self.net.reg_bits[*reg as usize].iter().map(|b| Sig::of(*b)).collect(),
            // An input port is the staged value of its host-injected fields (layer 0's staging heads hold the
            // latest injected chunk of each; zero before any).
            Op::Input { port } => {
                let f = self.fields(|r| matches!(r, FieldRole::In { port: p, .. } if p == *port));
                self.staged_concat(&f)
            }
            Op::Load { mem, addr } => {
                let read = self.net.reads.len() as u32;
                let mname = &self.desc.memories[*mem as usize].name;
                let bits: Vec<u32> = (0..width).map(|b| self.net.add_node(Source::ReadBit { read, bit: b }, format!("{nm}.{mname}[..].bit{b}"))).collect();
                self.net.reads.push(Read { mem: *mem, addr: w(addr), bits: bits.clone() });
                bits.into_iter().map(Sig::of).collect()
            }
            Op::Add { a, b, cin } => {
                let mut t = self.positioned(&w(a));
                t.extend(self.positioned(&w(b)));
                if let Some(c) = cin {
                    t.push((w(c)[0], 0));
                }
                let window = self.sum_window(&nm, width);
                self.weighted_sum(&nm, t, 0, width, window)?
            }
            Op::Sub { a, b } => {
                let mut t = self.positioned(&w(a));
                let nb: Vec<Sig> = w(b).iter().map(|s| s.not()).collect();
                t.extend(self.positioned(&nb));
                let window = self.sum_window(&nm, width);
                self.weighted_sum(&nm, t, 1, width, window)?
            }
            Op::And { a, b } => self.bitwise(&nm, &w(a), &w(b), |x, y| vec![(vec![(x, 1), (y, 1)], -2, 1)])?,
            Op::Or { a, b } => self.bitwise(&nm, &w(a), &w(b), |x, y| vec![(vec![(x, 1), (y, 1)], -1, 1)])?,
            Op::Xor { a, b } => {
                self.bitwise(&nm, &w(a), &w(b), |x, y| vec![(vec![(x, 1), (y, 1)], -1, 1), (vec![(x, 1), (y, 1)], -2, -1)])?
            }
            Op::Not { a } => w(a).iter().map(|s| s.not()).collect(),
            Op::ShiftConst { kind, a, by } => {
                let a = w(a);
                (0..n).map(|i| shift_src(*kind, &a, i, *by as u64)).collect()
            }
            Op::Shift { kind, a, by } => self.shift(&nm, *kind, &w(a), &w(by))?,
            Op::Cmp { kind, a, b } => {
                let (a, b) = (w(a), w(b));
                let r = match kind {
                    CmpKind::Eq => self.eq(&nm, &a, &b)?,
                    CmpKind::Ne => self.eq(&nm, &a, &b)?.not(),
                    CmpKind::Ltu => self.ltu(&nm, &a, &b)?,
                    CmpKind::Leu => self.ltu(&nm, &b, &a)?.not(),
                    CmpKind::Lts => self.ltu(&nm, &flip_sign(&a), &flip_sign(&b))?,
                    CmpKind::Les => self.ltu(&nm, &flip_sign(&b), &flip_sign(&a))?.not(),
                };
                vec![r]
            }
            Op::Mux { sel, if0, if1 } => {
                let s = w(sel)[0];
                self.mux_bits(&nm, s, &w(if0), &w(if1))?
            }
            Op::Zext { a } => {
                let mut v = w(a);
                v.resize(n, Sig::ZERO);
                v
            }
            Op::Sext { a } => {
                let mut v = w(a);
                let top = *v.last().expect("width >= 1");
                v.resize(n, top);
                v
            }
            Op::Slice { a, lo } => w(a)[*lo as usize..*lo as usize + n].to_vec(),
            Op::Concat { parts } => parts.iter().flat_map(|p| w(p)).collect(),
            Op::MulLo { a, b } => self.mul(&nm, &w(a), &w(b), n, 0)?,
            Op::MulHi { a, b, signed_a, signed_b } => {
                let ext = |v: Vec<Sig>, s: bool| {
                    let top = if s { *v.last().expect("width >= 1") } else { Sig::ZERO };
                    let mut v = v;
                    v.resize(2 * n, top);
                    v
                };
                let (a, b) = (ext(w(a), *signed_a), ext(w(b), *signed_b));
                self.mul(&nm, &a, &b, 2 * n, n)?
            }
            Op::AndOr { cases } => {
                let mut ands: Vec<Vec<Sig>> = Vec::new();
                for (k, (sel, val)) in cases.iter().enumerate() {
                    let s = w(sel)[0];
                    let v = w(val);
                    ands.push(self.bitwise(&format!("{nm}.case{k}"), &v, &vec![s; n], |x, y| vec![(vec![(x, 1), (y, 1)], -2, 1)])?);
                }
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let lin: Vec<(Sig, i64)> = ands.iter().map(|a| (a[i], 1)).collect();
                    out.push(self.net.gate(&format!("{nm}.bit{i}"), &[(lin, -1, 1)], 0)?);
                }
                out
            }
            // At most one select is on (the circuit's promise): each bit is Σ_k [sel_k + v_k ≥ 2], one layer.
            Op::OneHot { cases } => {
                let cases: Vec<(Sig, Vec<Sig>)> = cases.iter().map(|(s, v)| (w(s)[0], w(v))).collect();
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let terms: Vec<(Vec<(Sig, i64)>, i64, i64)> = cases.iter().map(|(s, v)| (vec![(*s, 1), (v[i], 1)], -2, 1)).collect();
                    out.push(self.net.gate(&format!("{nm}.bit{i}"), &terms, 0)?);
                }
                out
            }
            // konst + Σ ±(x << shift) mod 2^n as one weighted sum; -(x << s) = Σ_i 2^(i+s)·¬x_i - 2^s·(2^|x| - 1).
            Op::Sum { terms, konst } => {
                let modulus = 1u128 << n;
                let mut t = Vec::new();
                let mut k = *konst as u128 % modulus;
                for st in terms {
                    let x = w(&st.node);
                    for (i, b) in x.iter().enumerate() {
                        let p = i as u32 + st.shift;
                        if p < width {
                            t.push((if st.neg { b.not() } else { *b }, p));
                        }
                    }
                    if st.neg && st.shift < width {
                        let ones = ((1u128 << x.len().min(128 - st.shift as usize)) - 1) << st.shift;
                        k = (k + modulus - ones % modulus) % modulus;
                    }
                }
                let window = self.sum_window(&nm, width);
                self.weighted_sum(&nm, t, k, width, window)?
            }
            Op::Lookup { table, index } => {
                let idx = w(index);
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let terms: Vec<_> = table.iter().enumerate().filter(|(_, v)| (*v >> i) & 1 == 1).map(|(k, _)| literal_eq(&idx, k as u64, None)).collect();
                    out.push(self.net.gate(&format!("{nm}.bit{i}"), &terms, 0)?);
                }
                out
            }
        })
    }

    fn positioned(&self, v: &[Sig]) -> Vec<(Sig, u32)> {
        v.iter().enumerate().map(|(i, s)| (*s, i as u32)).collect()
    }

    fn bitwise(&mut self, nm: &str, a: &[Sig], b: &[Sig], f: impl Fn(Sig, Sig) -> Vec<(Vec<(Sig, i64)>, i64, i64)>) -> Result<Vec<Sig>, WeaveError> {
        let mut out = Vec::with_capacity(a.len());
        for i in 0..a.len() {
            out.push(self.net.gate(&format!("{nm}.bit{i}"), &f(a[i], b[i]), 0)?);
        }
        Ok(out)
    }

    /// `sel ? if1 : if0`, bit by bit: `[if0 - sel - 1 >= 0] + [if1 + sel - 2 >= 0]` (one layer).
    pub fn mux_bits(&mut self, nm: &str, sel: Sig, if0: &[Sig], if1: &[Sig]) -> Result<Vec<Sig>, WeaveError> {
        let mut out = Vec::with_capacity(if0.len());
        for i in 0..if0.len() {
            if if0[i] == if1[i] {
                out.push(if0[i]);
                continue;
            }
            let t = [(vec![(if0[i], 1), (sel, -1)], -1, 1), (vec![(if1[i], 1), (sel, 1)], -2, 1)];
            out.push(self.net.gate(&format!("{nm}.bit{i}"), &t, 0)?);
        }
        Ok(out)
    }

    /// The widest window of the add, subtract or sum node `nm` of `width` bits; records it as a candidate for
    /// narrowing when it is wider than [`NARROW_WINDOW`].
    fn sum_window(&mut self, nm: &str, width: u32) -> u32 {
        if width <= NARROW_WINDOW {
            return WIDE_WINDOW;
        }
        self.wide_sums.push(nm.to_string());
        if self.narrow.contains(nm) { NARROW_WINDOW } else { WIDE_WINDOW }
    }

    /// The low `n_out` bits of `konst + Σ 2^pos·bit`, window by window of at most `window` bits (see the module
    /// docs).
    pub fn weighted_sum(&mut self, nm: &str, terms: Vec<(Sig, u32)>, konst: u128, n_out: u32, window: u32) -> Result<Vec<Sig>, WeaveError> {
        let full = if n_out >= 128 { u128::MAX } else { (1u128 << n_out) - 1 };
        let mut konst = konst & full;
        // Fold every signal's occurrences into one coefficient modulo 2^n_out (a negated signal ~x at p is
        // 2^p - 2^p·x). A coefficient c whose negation d = 2^n - c has fewer set bits is written as d·(~x) + c
        // (since c·x ≡ -d·x = d·(1 - x) - d ≡ d·~x + c): the repeated sign-extension bits of a signed
        // product's partial products become one negated term each (Baugh-Wooley), and a sum shrinks.
        let mut coef: Vec<(u32, u128)> = Vec::new();
        let mut slot: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
        for (s, p) in terms {
            if p >= n_out {
                continue;
            }
            let w = 1u128 << p;
            match s.as_const() {
                Some(true) => konst = konst.wrapping_add(w) & full,
                Some(false) => {}
                None => {
                    let add = if s.neg {
                        konst = konst.wrapping_add(w) & full;
                        w.wrapping_neg()
                    } else {
                        w
                    };
                    match slot.get(&s.node) {
                        Some(&i) => coef[i].1 = coef[i].1.wrapping_add(add) & full,
                        None => {
                            slot.insert(s.node, coef.len());
                            coef.push((s.node, add & full));
                        }
                    }
                }
            }
        }
        let mut ts: Vec<(Sig, u32)> = Vec::new();
        for (node, c) in coef {
            let d = c.wrapping_neg() & full;
            let (sig, bits) = if d.count_ones() < c.count_ones() {
                konst = konst.wrapping_add(c) & full;
                (Sig::of(node).not(), d)
            } else {
                (Sig::of(node), c)
            };
            ts.extend((0..n_out.min(128)).filter(|p| (bits >> p) & 1 == 1).map(|p| (sig, p)));
        }
        ts.sort_by_key(|(_, p)| *p);
        let mask = |c: u32| -> u128 { (1u128 << c) - 1 };
        let mut out = Vec::with_capacity(n_out as usize);
        let mut carry: Vec<(Sig, i64)> = Vec::new();
        let mut lo = 0u32;
        while lo < n_out {
            let vmax = |c: u32| -> i64 {
                carry.iter().map(|(_, w)| *w).sum::<i64>()
                    + ts.iter().filter(|(_, p)| *p >= lo && *p < lo + c).map(|(_, p)| 1i64 << (p - lo)).sum::<i64>()
                    + ((konst >> lo) & mask(c)) as i64
            };
            let mut c = (n_out - lo).min(window);
            while c > 0 && vmax(c) + 2 > crate::net::MAX_FORM {
                c -= 1;
            }
            if c == 0 {
                return Err(WeaveError::FormTooWide { name: format!("{nm} (sum window at bit {lo})"), bound: vmax(1) });
            }
            let kwin = ((konst >> lo) & mask(c)) as i64;
            for j in 0..c {
                let mut lin = carry.clone();
                lin.extend(ts.iter().filter(|(_, p)| *p >= lo && *p <= lo + j).map(|(s, p)| (*s, 1i64 << (p - lo))));
                let k = kwin & ((1i64 << (j + 1)) - 1);
                let vm = lin.iter().map(|(_, w)| *w).sum::<i64>() + k;
                let steps = vm >> j;
                let t: Vec<_> = (1..=steps).map(|m| (lin.clone(), k - (m << j), if m % 2 == 1 { 1 } else { -1 })).collect();
                out.push(self.net.gate(&format!("{nm}.bit{}", lo + j), &t, 0)?);
            }
            if lo + c < n_out {
                let mut lin = carry.clone();
                lin.extend(ts.iter().filter(|(_, p)| *p >= lo && *p < lo + c).map(|(s, p)| (*s, 1i64 << (p - lo))));
                let vm = lin.iter().map(|(_, w)| *w).sum::<i64>() + kwin;
                let cmax = vm >> c;
                let nb = 64 - (cmax as u64).leading_zeros();
                let mut nc = Vec::new();
                for i in 0..nb {
                    let sh = c + i;
                    let steps = vm >> sh;
                    let t: Vec<_> = (1..=steps).map(|m| (lin.clone(), kwin - (m << sh), if m % 2 == 1 { 1 } else { -1 })).collect();
                    let bit = self.net.gate(&format!("{nm}.carry{}", lo + c + i), &t, 0)?;
                    nc.push((bit, 1i64 << i));
                }
                carry = nc;
            }
            lo += c;
        }
        Ok(out)
    }

    /// Product bits `drop .. n_out` of `a * b` (both `n_out` bits or narrower), from partial products.
    fn mul(&mut self, nm: &str, a: &[Sig], b: &[Sig], n_out: usize, drop: usize) -> Result<Vec<Sig>, WeaveError> {
        let mut terms = Vec::new();
        for (i, x) in a.iter().enumerate() {
            for (k, y) in b.iter().enumerate() {
                if i + k >= n_out {
                    continue;
                }
                let pp = self.net.gate(&format!("{nm}.pp{i}_{k}"), &[(vec![(*x, 1), (*y, 1)], -2, 1)], 0)?;
                terms.push((pp, (i + k) as u32));
            }
        }
        let s = self.weighted_sum(nm, terms, 0, n_out as u32, WIDE_WINDOW)?;
        Ok(s[drop..].to_vec())
    }

    /// `a == b`. Against a constant (every bit of one side constant, as a decode's `x == k`): one step over
    /// literals ([`literal_eq`]: 0 at the match, at most -1 elsewhere), two units that are silu-quiet whenever
    /// `x != k`. The positional form below is linear on one side of `k`, so its four units change with every
    /// change of `x` there (on NES games the 2A03's decodes of its step kind did so at every instruction: a
    /// fifth of every MLP row change). Up to 16 bits: a gate over more literals holds all its inputs live until it
    /// is placed, and the 32-bit ones made the 64 KiB RV32IM need hidden 2,604 in Qwen3.5-4B's 2,560
    /// (`configs/rv32im-qwen35-4b.toml`), so wider ones keep the positional form.
    fn eq(&mut self, nm: &str, a: &[Sig], b: &[Sig]) -> Result<Sig, WeaveError> {
        let konst = |v: &[Sig]| v.iter().enumerate().try_fold(0u64, |k, (i, s)| s.as_const().map(|one| k | (one as u64) << i));
        if a.len() == b.len() && a.len() <= 16 {
            for (x, k) in [(a, konst(b)), (b, konst(a))] {
                if let Some(k) = k {
                    return self.net.gate(&format!("{nm}.eq"), &[literal_eq(x, k, None)], 0);
                }
            }
        }
        let mut parts = Vec::new();
        for (ci, (ca, cb)) in a.chunks(16).zip(b.chunks(16)).enumerate() {
            let mut lin = Vec::new();
            for i in 0..ca.len() {
                lin.push((ca[i], 1i64 << i));
                lin.push((cb[i], -(1i64 << i)));
            }
            parts.push(self.net.gate(&format!("{nm}.eq{ci}"), &[(lin.clone(), 0, 1), (lin, -1, -1)], 0)?);
        }
        if parts.len() == 1 {
            return Ok(parts[0]);
        }
        let n = parts.len() as i64;
        self.net.gate(&format!("{nm}.eq"), &[(parts.into_iter().map(|s| (s, 1)).collect(), -n, 1)], 0)
    }

    /// Unsigned `a < b`.
    fn ltu(&mut self, nm: &str, a: &[Sig], b: &[Sig]) -> Result<Sig, WeaveError> {
        let form = |ca: &[Sig], cb: &[Sig]| -> Vec<(Sig, i64)> {
            let mut lin = Vec::new();
            for i in 0..ca.len() {
                lin.push((cb[i], 1i64 << i));
                lin.push((ca[i], -(1i64 << i)));
            }
            lin
        };
        if a.len() <= 16 {
            return self.net.gate(&format!("{nm}.lt"), &[(form(a, b), -1, 1)], 0);
        }
        let mut top = Vec::new();
        for (ci, (ca, cb)) in a.chunks(16).zip(b.chunks(16)).enumerate() {
            let lt = self.net.gate(&format!("{nm}.lt{ci}"), &[(form(ca, cb), -1, 1)], 0)?;
            let gt = self.net.gate(&format!("{nm}.gt{ci}"), &[(form(cb, ca), -1, 1)], 0)?;
            top.push((lt, 1i64 << ci));
            top.push((gt, -(1i64 << ci)));
        }
        self.net.gate(&format!("{nm}.lt"), &[(top, -1, 1)], 0)
    }

    /// Shift or rotate by an amount: output bit i is an OR of mutually exclusive
    /// `[amount == k AND a[src(i, k)]]` terms, one layer.
    fn shift(&mut self, nm: &str, kind: ShiftKind, a: &[Sig], by: &[Sig]) -> Result<Vec<Sig>, WeaveError> {
        let n = a.len();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let mut terms = Vec::new();
            for k in 0..(1u64 << by.len()) {
                let src = shift_src(kind, a, i, k);
                if src == Sig::ZERO {
                    continue;
                }
                terms.push(literal_eq(by, k, Some(src)));
            }
            out.push(self.net.gate(&format!("{nm}.bit{i}"), &terms, 0)?);
        }
        Ok(out)
    }
}

/// The step `[index == k (AND extra)]` as a term over literals: `Σ lit + extra - (m + 1) >= 0`.
fn literal_eq(idx: &[Sig], k: u64, extra: Option<Sig>) -> (Vec<(Sig, i64)>, i64, i64) {
    let mut lin: Vec<(Sig, i64)> = idx.iter().enumerate().map(|(j, s)| (if (k >> j) & 1 == 1 { *s } else { s.not() }, 1)).collect();
    let mut need = idx.len() as i64;
    if let Some(e) = extra {
        lin.push((e, 1));
        need += 1;
    }
    (lin, -need, 1)
}

/// The source bit of output bit `i` when shifting `a` by `k`.
fn shift_src(kind: ShiftKind, a: &[Sig], i: usize, k: u64) -> Sig {
    let n = a.len() as u64;
    let i = i as u64;
    match kind {
        ShiftKind::Shl => if k <= i { a[(i - k) as usize] } else { Sig::ZERO },
        ShiftKind::Shr => if i + k < n { a[(i + k) as usize] } else { Sig::ZERO },
        ShiftKind::Sar => if i + k < n { a[(i + k) as usize] } else { a[(n - 1) as usize] },
        ShiftKind::Rotl => a[((i + n - k % n) % n) as usize],
        ShiftKind::Rotr => a[((i + k) % n) as usize],
    }
}

fn flip_sign(v: &[Sig]) -> Vec<Sig> {
    let mut v = v.to_vec();
    if let Some(t) = v.last_mut() {
        *t = t.not();
    }
    v
}
