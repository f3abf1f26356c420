//! Pass 4, `emit`: weights for every tensor of the Qwen3.5 config (linear weights `[out, in]`).
//!
//! - Norms: every zero-centred RMSNorm weight is [`numerics::norm_gain_weight`], so a ±1 residual passes
//!   unchanged.
//! - MLP: a step `[L >= 0]` (L an integer form over ±1 slots) is two units, gates `128·(L+1)` and `128·L`, up
//!   = the constant slot (1), down `±2/128` into the gate's fresh slot: `relu(L+1) - relu(L)` times 2.
//! - DeltaNet: conv passes the current token only (tap 3 = 1); `a = -200` (decay exactly 1), and on the heads
//!   of a memory the circuit clears `a = +200` at its clear token (decay `exp(-softplus(200))` exactly 0: the
//!   state is zeros before that token's write); `b = 200·(Σ lits
//!   - (m-1))` over the head's enable bit and, for a memory split into blocks of d_k rows, the literals saying
//!   the write address's high bits equal the head's block (beta exactly 1 when all hold, else exactly 0:
//!   sigmoid(<= -200) = 0); q/k channel r = `silu(256·(Σ_j s_j(r)·x_j - (n-1)))` over the address's low
//!   `log2 d_k` bits (exactly 256 on the matching row, 0 elsewhere; the block heads of a read share it);
//!   value: each pair of bits is a one-hot group of 4 entries (`silu(V·(±x_0 ± x_1 - 1))`, `V` =
//!   [`numerics::value_scale`] = 256), so every written row has one on entry per group and a one-hot read
//!   returns the exact product `V·fl(1/sqrt(d_k))` there; for `d_k` an odd power of two the last group is the
//!   norm anchor, written with [`numerics::ReadScales::anchor`] whatever the data; the gated RMSNorm (weight
//!   [`numerics::ReadScales::norm_weight`]) then returns exactly 2 on the data's on entries;
//!   `z = 128·(Σ lits - (m-1))` over the read address's block literals (silu(z) = 128 in the block that
//!   holds the address, exactly -0 in every other block, whose read so adds exactly 0),
//!   out_proj `2^-7` from each entry whose pattern has the bit set. Unwritten rows read zeros: bits stay 0.
//! - Embedding: ±1 rows (constant +1, class indicators, token bits, end flag, fresh slots -1, padding +1).
//! - lm_head ([`LogitScale`]): the token of step position `k`, value `v` scores `A·after_k + E·emit_k - P·k +
//!   Σ_j ±x_{k,j}`, plus for its *more* variant `2·(emits after k) - 1`; `STEP` scores `A·after_0 + E - P·(n+1)`;
//!   `HALT` `A·after_0 + 2E·halt`; host-only tokens `-2A`. So the argmax is the first open position whose field
//!   the step writes (`after_k`: `Netlist::after`; `emit_k`: the field's emit bit), with its value, as its end
//!   variant exactly when no later field is written; `STEP` when none is; `HALT` over all when the halt bit is
//!   set. Every logit is an integer below 2^24, unique with a margin of at least 1.

use crate::allocate::{Allocation, KeySrc, SlotKind, Unit};
use crate::lower::Classes;
use crate::net::{Netlist, Sig, Source};
use crate::numerics::*;
use backends::names::{LayerTensor, EMBED_TOKENS, FINAL_NORM, LM_HEAD};
use backends::{HostTensor, LayerType, Qwen35Config, WeightMap};
use isa_api::Protocol;

/// The Qwen3.5 config of an allocation.
pub fn config(a: &Allocation) -> Qwen35Config {
    let g = &a.geometry;
    let mut c = Qwen35Config::default();
    c.vocab_size = g.vocab;
    c.hidden_size = g.hidden;
    c.intermediate_size = g.intermediate;
    c.num_hidden_layers = g.layers;
    c.layer_types = vec![LayerType::LinearAttention; g.layers];
    for l in &a.attention_layers {
        c.layer_types[*l] = LayerType::FullAttention;
    }
    c.num_attention_heads = 1;
    c.num_key_value_heads = 1;
    c.head_dim = 8;
    c.linear_num_key_heads = g.key_heads;
    c.linear_num_value_heads = g.value_heads;
    c.linear_key_head_dim = g.dk;
    c.linear_value_head_dim = g.dv;
    c.linear_conv_kernel_dim = 4;
    c.tie_word_embeddings = false;
    c.max_position_embeddings = 1 << 20;
    c
}

struct Row<'a> {
    t: &'a mut HostTensor,
    r: usize,
}
impl Row<'_> {
    fn add(&mut self, col: usize, v: f32) {
        *self.t.at2_mut(self.r, col) += v;
    }
}

/// Emit every tensor.
pub fn emit(net: &Netlist, a: &Allocation, proto: &Protocol, cfg: &Qwen35Config) -> WeightMap {
    let mut w: WeightMap = cfg.expected_tensors().into_iter().map(|(n, s)| (n, HostTensor::zeros(s))).collect();
    let gain = norm_gain_weight(cfg.rms_norm_eps);
    let cslot = a.slot(Sig::ONE).0;
    let slot = |s: Sig| a.slot(s);
    let mut gate_node = vec![0u32; net.gates.len()];
    for (i, src) in net.nodes.iter().enumerate() {
        if let Source::Gate(g) = src {
            gate_node[*g as usize] = i as u32;
        }
    }
    for (l, la) in a.layers.iter().enumerate() {
        for n in [LayerTensor::InputNorm, LayerTensor::PostNorm] {
            w.get_mut(&n.name(l)).unwrap().data.fill(gain);
        }
        // MLP
        {
            let mut gate = w.remove(&LayerTensor::GateProj.name(l)).unwrap();
            let mut up = w.remove(&LayerTensor::UpProj.name(l)).unwrap();
            let mut down = w.remove(&LayerTensor::DownProj.name(l)).unwrap();
            for (u, unit) in la.units.iter().enumerate() {
                match *unit {
                    Unit::Reset { node } => {
                        // silu(128)·(x + 1)·(-1/128) = -(x + 1): the slot goes back to -1.
                        let ys = a.slot_of[node as usize];
                        *gate.at2_mut(u, cslot) = K_MLP;
                        *up.at2_mut(u, cslot) = 1.0;
                        *up.at2_mut(u, ys) += 1.0;
                        *down.at2_mut(ys, u) = -1.0 / K_MLP;
                    }
                    Unit::Offset { gate: gi } => {
                        let ys = a.slot_of[gate_node[gi as usize] as usize];
                        *up.at2_mut(u, cslot) = 1.0;
                        *gate.at2_mut(u, cslot) = K_MLP;
                        *down.at2_mut(ys, u) = 2.0 * net.gates[gi as usize].offset as f32 / K_MLP;
                    }
                    Unit::Term { gate: gi, term, half } => {
                        let ys = a.slot_of[gate_node[gi as usize] as usize];
                        *up.at2_mut(u, cslot) = 1.0;
                        let t = &net.gates[gi as usize].terms[term as usize];
                        // L = Σ c·b + bias with b = (x + 1)/2: 128·L = Σ 64c·x + 128·(bias + Σ c/2).
                        let mut bias2 = 2 * t.bias; // in halves
                        let mut row = Row { t: &mut gate, r: u };
                        for (node, c) in &t.lin {
                            row.add(a.slot_of[*node as usize], (K_MLP / 2.0) * *c as f32);
                            bias2 += c;
                        }
                        let extra = if half == 0 { 2 } else { 0 };
                        row.add(cslot, (K_MLP / 2.0) * (bias2 + extra) as f32);
                        let s = if half == 0 { 1.0 } else { -1.0 };
                        *down.at2_mut(ys, u) = s * 2.0 * t.sign as f32 / K_MLP;
                    }
                }
            }
            // Units that also compute another gate's term or offset: its output into that gate's slot too.
            for &(u, unit) in &la.shared {
                let u = u as usize;
                match unit {
                    Unit::Term { gate: gi, term, half } => {
                        let ys = a.slot_of[gate_node[gi as usize] as usize];
                        let s = if half == 0 { 1.0 } else { -1.0 };
                        *down.at2_mut(ys, u) += s * 2.0 * net.gates[gi as usize].terms[term as usize].sign as f32 / K_MLP;
                    }
                    Unit::Offset { gate: gi } => {
                        let ys = a.slot_of[gate_node[gi as usize] as usize];
                        *down.at2_mut(ys, u) += 2.0 * net.gates[gi as usize].offset as f32 / K_MLP;
                    }
                    Unit::Reset { .. } => unreachable!("resets are never shared"),
                }
            }
            w.insert(LayerTensor::GateProj.name(l), gate);
            w.insert(LayerTensor::UpProj.name(l), up);
            w.insert(LayerTensor::DownProj.name(l), down);
        }
        if a.attention_layers.contains(&l) {
            continue; // all-zero attention: softmax over zero values, exactly 0 out
        }
        // DeltaNet
        let (dk, dv, nk, nv) = (cfg.linear_key_head_dim, cfg.linear_value_head_dim, cfg.linear_num_key_heads, cfg.linear_num_value_heads);
        let per = nv / nk;
        let key_dim = nk * dk;
        let scales = read_scales(dk, dv).expect("allocate only accepts d_k and d_v with exact read scales");
        let vscale = scales.value;
        // the anchor group, last in every head (numerics::read_scales)
        let anchor_group = scales.anchor.map(|a| (dv / 4 - 1, a, scales.anchor_entries));
        // value head of every allocated head: group g, position j -> g * per + j
        let mut vhead = vec![usize::MAX; la.heads.len()];
        for (g, grp) in la.groups.iter().enumerate() {
            for (j, h) in grp.iter().enumerate() {
                vhead[*h] = g * per + j;
            }
        }
        w.get_mut(&LayerTensor::GatedNorm.name(l)).unwrap().data.fill(scales.norm_weight);
        {
            let conv = w.get_mut(&LayerTensor::Conv1d.name(l)).unwrap();
            let k = cfg.linear_conv_kernel_dim;
            for ch in 0..cfg.linear_conv_dim() {
                conv.data[ch * k + k - 1] = 1.0;
            }
        }
        {
            let a_t = w.get_mut(&LayerTensor::InProjA.name(l)).unwrap();
            for h in 0..nv {
                *a_t.at2_mut(h, cslot) = A_VALUE;
            }
            let b_t = w.get_mut(&LayerTensor::InProjB.name(l)).unwrap();
            for h in 0..nv {
                *b_t.at2_mut(h, cslot) = -BETA_SCALE;
            }
            for (i, hd) in la.heads.iter().enumerate() {
                // b = 200·(Σ literals - (m - 1)) over the enable bit and the block-select literals: +200
                // when all hold, <= -200 otherwise. A second, exclusive enable joins the first as one literal
                // `x_e + x_also + 1` (±1 since at most one holds).
                let v = vhead[i];
                let lits = block_literals(&hd.key, dk, &slot);
                *b_t.at2_mut(v, cslot) = -BETA_SCALE * lits.len() as f32;
                for (s, sg) in lits.into_iter().chain([slot(hd.enable)]) {
                    *b_t.at2_mut(v, s) += BETA_SCALE * sg;
                }
                if let Some(also) = hd.enable_also {
                    let (s, sg) = slot(also);
                    *b_t.at2_mut(v, s) += BETA_SCALE * sg;
                    *b_t.at2_mut(v, cslot) += BETA_SCALE;
                }
            }
            let a_t = w.get_mut(&LayerTensor::InProjA.name(l)).unwrap();
            for (i, hd) in la.heads.iter().enumerate() {
                // a = A_VALUE, or A_CLEAR where the clear bit is 1: a = A_VALUE + (A_CLEAR - A_VALUE)·(x + 1)/2.
                if let Some(clear) = hd.clear {
                    let (s, sg) = slot(clear);
                    let half = (A_CLEAR - A_VALUE) / 2.0;
                    *a_t.at2_mut(vhead[i], s) += half * sg;
                    *a_t.at2_mut(vhead[i], cslot) += half;
                }
            }
        }
        let mut qkv = w.remove(&LayerTensor::InProjQkv.name(l)).unwrap();
        let mut z = w.remove(&LayerTensor::InProjZ.name(l)).unwrap();
        let mut out = w.remove(&LayerTensor::OutProj.name(l)).unwrap();
        for (g, grp) in la.groups.iter().enumerate() {
            let first = &la.heads[grp[0]];
            key_rows(&mut qkv, g * dk, dk, &first.query, cslot, &slot);
            key_rows(&mut qkv, key_dim + g * dk, dk, &first.key, cslot, &slot);
        }
        for (i, hd) in la.heads.iter().enumerate() {
            let h = vhead[i];
            let vbase = 2 * key_dim + h * dv;
            for g in 0..dv / 4 {
                if let Some((ag, a, n)) = anchor_group.filter(|(ag, _, _)| *ag == g) {
                    // the anchor: its first n entries are `a` at every write (silu(a) = a), the others
                    // silu(-a) = -0
                    debug_assert!(hd.value.len() <= 2 * ag, "allocate leaves the anchor group free");
                    for pat in 0..4usize {
                        *qkv.at2_mut(vbase + 4 * g + pat, cslot) = if pat < n { a } else { -a };
                    }
                    continue;
                }
                let b0 = hd.value.get(2 * g).copied().unwrap_or(Sig::ZERO);
                let b1 = hd.value.get(2 * g + 1).copied().unwrap_or(Sig::ZERO);
                for pat in 0..4usize {
                    let r = vbase + 4 * g + pat;
                    let s0 = if pat & 1 == 1 { 1.0 } else { -1.0 };
                    let s1 = if pat & 2 == 2 { 1.0 } else { -1.0 };
                    let (sl0, g0) = slot(b0);
                    let (sl1, g1) = slot(b1);
                    *qkv.at2_mut(r, sl0) += vscale * s0 * g0;
                    *qkv.at2_mut(r, sl1) += vscale * s1 * g1;
                    *qkv.at2_mut(r, cslot) -= vscale;
                }
            }
            // z = 128·(Σ block-select literals of the query - (m - 1)): silu(z) = 128 in the block that
            // holds the address, exactly -0 (z <= -128) in the others, which so add exactly 0.
            let lits = block_literals(&hd.query, dk, &slot);
            for e in 0..dv {
                *z.at2_mut(h * dv + e, cslot) = Z_GATE * (1.0 - lits.len() as f32);
                for (s, sg) in &lits {
                    *z.at2_mut(h * dv + e, *s) += Z_GATE * sg;
                }
            }
            for (j, node) in hd.out.iter().enumerate() {
                let ys = a.slot_of[*node as usize];
                for pat in 0..4usize {
                    if (pat >> (j % 2)) & 1 == 1 {
                        *out.at2_mut(ys, h * dv + 4 * (j / 2) + pat) = OUT_SCALE;
                    }
                }
            }
        }
        w.insert(LayerTensor::InProjQkv.name(l), qkv);
        w.insert(LayerTensor::InProjZ.name(l), z);
        w.insert(LayerTensor::OutProj.name(l), out);
    }
    w.get_mut(FINAL_NORM).unwrap().data.fill(gain);
    emit_embedding(net, a, proto, w.get_mut(EMBED_TOKENS).unwrap());
    emit_lm_head(net, a, proto, w.get_mut(LM_HEAD).unwrap());
    w
}

/// Query or key rows `base .. base + dk` of one head: for an address, the one-hot of its low `log2 d_k` bits
/// (the row inside the head's block; every block head of a read shares these rows).
fn key_rows(t: &mut HostTensor, base: usize, dk: usize, src: &KeySrc, cslot: usize, slot: &dyn Fn(Sig) -> (usize, f32)) {
    match src {
        KeySrc::Const => *t.at2_mut(base, cslot) += QKV_SCALE,
        KeySrc::Addr { bits, .. } => {
            let n = bits.len().min(dk.trailing_zeros() as usize);
            for r in 0..dk.min(1 << n) {
                for (j, b) in bits[..n].iter().enumerate() {
                    let s = if (r >> j) & 1 == 1 { 1.0 } else { -1.0 };
                    let (sl, g) = slot(*b);
                    *t.at2_mut(base + r, sl) += QKV_SCALE * s * g;
                }
                *t.at2_mut(base + r, cslot) -= QKV_SCALE * (n as f32 - 1.0);
            }
        }
    }
}

/// The block-select literals of an address key: `(slot, sign)` per address bit above the low `log2 d_k`,
/// signed so that each is +1 exactly when the bit equals the head's block number's bit. Empty for constant
/// keys and for memories that fit one head.
fn block_literals(src: &KeySrc, dk: usize, slot: &dyn Fn(Sig) -> (usize, f32)) -> Vec<(usize, f32)> {
    match src {
        KeySrc::Const => Vec::new(),
        KeySrc::Addr { bits, block } => {
            let lo = bits.len().min(dk.trailing_zeros() as usize);
            bits[lo..]
                .iter()
                .enumerate()
                .map(|(j, b)| {
                    let (sl, g) = slot(*b);
                    (sl, if (block >> j) & 1 == 1 { g } else { -g })
                })
                .collect()
        }
    }
}

fn emit_embedding(net: &Netlist, a: &Allocation, proto: &Protocol, e: &mut HostTensor) {
    let h = a.geometry.hidden;
    // The nodes the embedding sets, with their slots, in node order (every other slot holds -1): token-derived
    // nodes are first in their slots (the embedding is before every write); later occupants of a slot start
    // from its reset value -1, like fresh slots.
    let features: Vec<(usize, Source)> = net
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, src)| {
            matches!(src, Source::Const | Source::TokClass(_) | Source::TokBit(_) | Source::TokEnd | Source::TokAfter(_) | Source::TokWrites(_) | Source::TokBeforeWrites(_))
        })
        .map(|(i, src)| (a.slot_of[i], *src))
        .collect();
    let pads: Vec<usize> = a.slots.iter().enumerate().take(h).filter(|(_, sl)| sl.kind == SlotKind::Pad).map(|(s, _)| s).collect();
    for tok in 0..a.geometry.vocab {
        let decoded = proto.decode(tok as u32);
        let (class, value, end) = match decoded {
            Some(isa_api::Token::Step) => (Some(Classes::STEP), None, false),
            Some(isa_api::Token::Halt) => (Some(Classes::HALT), None, false),
            Some(isa_api::Token::Value { field, value, end }) => (Some(Classes::field(field)), Some(value), end),
            None => (None, None, false),
        };
        let row = &mut e.data[tok * h..(tok + 1) * h];
        row.fill(-1.0);
        for &(slot, src) in &features {
            row[slot] = match src {
                Source::Const => 1.0,
                Source::TokClass(c) => if Some(c) == class { 1.0 } else { -1.0 },
                Source::TokBit(j) => if value.is_some_and(|v| (v >> j) & 1 == 1) { 1.0 } else { -1.0 },
                Source::TokEnd => if end { 1.0 } else { -1.0 },
                Source::TokAfter(k) => if crate::lower::token_leaves_open(proto, decoded, k as usize) { 1.0 } else { -1.0 },
                Source::TokWrites(m) => if class.is_some_and(|c| crate::lower::writes_memory(proto, c, m)) { 1.0 } else { -1.0 },
                Source::TokBeforeWrites(m) => if class.is_some_and(|c| crate::lower::before_writes(proto, c, m)) { 1.0 } else { -1.0 },
                _ => continue, // not listed
            };
        }
        for &s in &pads {
            row[s] = 1.0;
        }
    }
}

/// The lm_head's weights for a protocol of `n` step positions whose widest field has `w` bits (see the module
/// docs): `priority` P exceeds the spread of the value and more terms (`2w + 2n + 1`), `emit` E exceeds every
/// priority difference, `after` A exceeds every score of a closed position.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogitScale {
    pub after: f32,
    pub emit: f32,
    pub priority: f32,
}

impl LogitScale {
    pub fn of(n: usize, w: u32) -> Self {
        let priority = (4 * (n as u32 + w + 2)) as f32;
        let emit = priority * (n as f32 + 2.0);
        Self { after: 4.0 * emit, emit, priority }
    }
}

fn emit_lm_head(net: &Netlist, a: &Allocation, proto: &Protocol, lm: &mut HostTensor) {
    let cslot = a.slot(Sig::ONE).0;
    let steps = &proto.step_fields;
    let n = steps.len();
    let wmax = proto.fields.iter().map(|f| f.width).max().unwrap_or(0);
    let sc = LogitScale::of(n, wmax);
    // c·bit(s) = c·(x + 1)/2
    let add_bit = |lm: &mut HostTensor, tok: usize, s: Sig, c: f32| {
        let (sl, g) = a.slot(s);
        *lm.at2_mut(tok, sl) += g * c / 2.0;
        *lm.at2_mut(tok, cslot) += c / 2.0;
    };
    let mut position = vec![None; proto.fields.len()];
    for (k, f) in steps.iter().enumerate() {
        position[*f as usize] = Some(k);
    }
    for (fi, f) in proto.fields.iter().enumerate() {
        let Some(k) = position[fi] else {
            for v in 0..f.token_count() {
                *lm.at2_mut((f.first_token + v) as usize, cslot) = -2.0 * sc.after;
            }
            continue;
        };
        let o = &net.outputs[k];
        for end in [false, true] {
            for v in 0..(1u64 << f.width) {
                let tok = proto.encode(fi as u32, v, end) as usize;
                add_bit(lm, tok, net.after[k], sc.after);
                add_bit(lm, tok, o.emit, sc.emit);
                *lm.at2_mut(tok, cslot) -= sc.priority * k as f32;
                for (j, b) in o.bits.iter().enumerate() {
                    let (s, g) = a.slot(*b);
                    *lm.at2_mut(tok, s) += if (v >> j) & 1 == 1 { g } else { -g };
                }
                if !end {
                    for later in &net.outputs[k + 1..] {
                        add_bit(lm, tok, later.emit, 2.0);
                    }
                    *lm.at2_mut(tok, cslot) -= 1.0;
                }
            }
        }
    }
    let st = proto.step_token as usize;
    let ht = proto.halt_token as usize;
    match net.after.first() {
        Some(&boundary) => {
            add_bit(lm, st, boundary, sc.after);
            *lm.at2_mut(st, cslot) += sc.emit - sc.priority * (n as f32 + 1.0);
            add_bit(lm, ht, boundary, sc.after);
            match net.halt {
                Some(h) => add_bit(lm, ht, h, 2.0 * sc.emit),
                None => *lm.at2_mut(ht, cslot) = -2.0 * sc.after,
            }
        }
        // A machine without step fields: every step is STEP (1), or HALT (2) when the halt bit is set.
        None => {
            *lm.at2_mut(st, cslot) += 1.0;
            match net.halt {
                Some(h) => add_bit(lm, ht, h, 2.0),
                None => *lm.at2_mut(ht, cslot) = -2.0,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use backends::names::LayerTensor;
    use crate::numerics::{norm_gain_weight, K_MLP};
    use crate::{weave, WeaveOptions};
    use isa_api::{CircuitBuilder, MachineDesc, RegisterDesc};

    fn silu(x: f32) -> f32 {
        x / (1.0 + (-x).exp())
    }

    /// A machine without step fields writes `STEP` until its halt bit is set, then `HALT`.
    #[test]
    fn a_machine_without_step_fields_steps_then_halts() {
        use isa_api::{host, MemoryDesc};
        let mut b = CircuitBuilder::new();
        let a = b.konst(2, 0);
        let m = b.load(0, 8, a);
        let h = b.bit(m, 0);
        b.halt(h);
        let d = MachineDesc::new("idle", vec![], vec![MemoryDesc { name: "M".into(), word_width: 8, addr_width: 2 }], vec![], b.finish());
        let w = weave(&d, &WeaveOptions::default()).unwrap();
        assert!(w.protocol.step_fields.is_empty());
        let model = backends::sparse::SparseModel::new(&w.config, &w.weights).unwrap();
        for (word, want) in [(0u64, vec![w.protocol.step_token; 5]), (1, vec![w.protocol.halt_token])] {
            let prompt = host::program_prompt(&w.protocol, 0, 0, &[word]);
            let mut st = model.new_state();
            let got = host::run(&w.protocol, &prompt, 5, |t| model.step_argmax(&mut st, t)).unwrap();
            assert_eq!(got.trace.generated, want, "M[0] = {word}");
        }
    }

    /// One emitted MLP block, evaluated with plain f32 math on every input: a 4-bit add with carry out lands
    /// as exactly +2 on the one-bits' slots and exactly 0 everywhere else.
    #[test]
    fn mlp_block_of_an_adder_is_exact_on_every_input() {
        let mut b = CircuitBuilder::new();
        let (x, y) = (b.reg(0, 4), b.reg(1, 4));
        let (xe, ye) = (b.zext(x, 5), b.zext(y, 5));
        let s = b.add(xe, ye);
        b.set_next(2, s);
        let regs = ["A", "B"].iter().map(|n| RegisterDesc { name: n.to_string(), width: 4 }).chain([RegisterDesc { name: "S".into(), width: 5 }]).collect();
        let d = MachineDesc::new("add4", regs, vec![], vec![], b.finish());
        let w = weave(&d, &WeaveOptions::default()).unwrap();
        let a = &w.allocation;
        let l = 1; // register bits are ready after layer 1's mixer: the adder is layer 1's MLP
        assert!(!a.layers[l].units.is_empty());
        let h = a.geometry.hidden;
        let get = |n: LayerTensor| w.weights[&n.name(l)].clone();
        let (gate, up, down) = (get(LayerTensor::GateProj), get(LayerTensor::UpProj), get(LayerTensor::DownProj));
        let gain = 1.0 + norm_gain_weight(1e-6);
        let reg_slot = |r: usize, bit: usize| a.slot_of[w.netlist.reg_bits[r][bit] as usize];
        let sum_slots: Vec<(usize, f32)> = w.netlist.outputs.iter().skip(2).flat_map(|o| o.bits.iter().map(|s| a.slot(*s))).collect();
        let other_slots: Vec<usize> = a.layers[l]
            .units
            .iter()
            .filter_map(|u| u.gate())
            .map(|g| a.slot_of[w.netlist.nodes.iter().position(|s| *s == crate::net::Source::Gate(g)).unwrap()])
            .filter(|s| !sum_slots.iter().any(|(x, _)| x == s))
            .collect();
        for av in 0..16u32 {
            for bv in 0..16u32 {
                let mut xr = vec![-1.0f32; h];
                xr[a.slot(crate::net::Sig::ONE).0] = 1.0;
                for j in 0..4 {
                    xr[reg_slot(0, j)] = if (av >> j) & 1 == 1 { 1.0 } else { -1.0 };
                    xr[reg_slot(1, j)] = if (bv >> j) & 1 == 1 { 1.0 } else { -1.0 };
                }
                let ms = xr.iter().map(|v| v * v).sum::<f32>() / h as f32;
                let r = 1.0 / (ms + 1e-6f32).sqrt();
                let xn: Vec<f32> = xr.iter().map(|v| (v * r) * gain).collect();
                assert_eq!(xn, xr, "the norm is the identity on ±1");
                let iu = a.geometry.intermediate;
                let mut hid = vec![0f32; iu];
                for u in 0..iu {
                    let g: f32 = (0..h).map(|c| gate.at2(u, c) * xn[c]).sum();
                    let up_v: f32 = (0..h).map(|c| up.at2(u, c) * xn[c]).sum();
                    assert_eq!(g % K_MLP, 0.0, "gate pre-activations are multiples of 128");
                    hid[u] = silu(g) * up_v;
                }
                let out: Vec<f32> = (0..h).map(|c| (0..iu).map(|u| down.at2(c, u) * hid[u]).sum()).collect();
                let want = av + bv;
                for (c, o) in out.iter().enumerate() {
                    let bit = sum_slots.iter().position(|(s, _)| *s == c);
                    // Other gates of this layer (the emit bits of A and B, which keep their values) are not
                    // the adder's.
                    if bit.is_none() && other_slots.contains(&c) {
                        continue;
                    }
                    let expect = match bit {
                        Some(j) if (want >> j) & 1 == 1 => 2.0,
                        _ => 0.0,
                    };
                    assert_eq!(*o, expect, "a={av} b={bv} slot {c}");
                }
            }
        }
    }
}
