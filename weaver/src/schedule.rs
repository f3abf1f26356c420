//! Pass 2, `schedule`: every netlist node gets the sublayer that produces it (as soon as possible).
//!
//! Sublayer `s = 2L` is layer L's token mixer (DeltaNet), `s = 2L + 1` its MLP. A value produced by sublayer
//! `s` is in the residual from time `s + 1`; a sublayer `s` reads values ready at time `<= s`.
//! - embedding slots (constant, token class, token bits): ready at 0;
//! - staged fields: layer 0's staging heads (s = 0), ready at 1;
//! - committed registers: layer 1's register heads (s = 2), ready at 3 (their inputs are staged);
//! - a memory read: the first mixers (even s >= 2) whose input holds its address and the memory's commit
//!   signals (every head copy applies the writes). A memory of more rows than d_k is split into blocks of
//!   d_k rows, one head each; when a layer's mixer has no room left for all of them ([`Mixers`]: a fitted
//!   geometry's head counts), the rest go to the next mixers, and the read is ready after the last one (each
//!   block adds exactly 0 unless it holds the address, so the partial reads sum to the word). Full-attention
//!   layers hold no heads;
//! - a gate: the first MLP (odd s) whose input holds all its inputs.

use crate::error::WeaveError;
pub use crate::geometry::Mixers;
use crate::net::{Netlist, Sig, Source};

/// A run of block heads of one memory read in one layer: blocks `first .. first + count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadChunk {
    pub layer: usize,
    pub first: u64,
    pub count: u64,
}

/// The schedule: ready time per node, sublayer per gate and per read, number of layers.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub ready: Vec<u32>,
    pub gate_sublayer: Vec<u32>,
    /// The last mixer sublayer of each read (its bits are ready after it).
    pub read_sublayer: Vec<u32>,
    /// Where each read's block heads sit, in layer order.
    pub read_chunks: Vec<Vec<ReadChunk>>,
    pub num_layers: usize,
    pub mixers: Mixers,
}

fn first_at_least(t: u32, parity: u32) -> u32 {
    if t % 2 == parity { t } else { t + 1 }
}

/// Schedule a netlist (nodes are in dependency order by construction). `mem_rows[m]` is memory m's number of
/// rows; `const_heads[l]` the constant-key heads layer `l` holds before any read (staging and register heads).
/// Errors when those do not fit their layer.
pub fn schedule(net: &Netlist, mem_rows: &[usize], const_heads: &[usize], mixers: &Mixers) -> Result<Schedule, WeaveError> {
    let mut ready = vec![0u32; net.nodes.len()];
    let mut gate_sublayer = vec![0u32; net.gates.len()];
    let mut read_sublayer = vec![0u32; net.reads.len()];
    let mut read_chunks = vec![Vec::new(); net.reads.len()];
    let r = mixers.per_key.max(1);
    let (mut used_v, mut used_k) = (Vec::<usize>::new(), Vec::<usize>::new());
    for (l, n) in const_heads.iter().enumerate() {
        if *n == 0 {
            continue;
        }
        if mixers.is_attention(l) {
            return Err(WeaveError::Overflow(format!("layer {l} must hold {n} staging or register heads but is a full-attention layer (full_attention_interval {})", mixers.attention_interval)));
        }
        if *n > mixers.value_heads || n.div_ceil(r) > mixers.key_heads {
            return Err(WeaveError::Overflow(format!(
                "layer {l} needs {n} value heads and {} key heads (staging or register heads) but the target has {} and {}",
                n.div_ceil(r),
                mixers.value_heads,
                mixers.key_heads
            )));
        }
        used_v.resize(used_v.len().max(l + 1), 0);
        used_k.resize(used_k.len().max(l + 1), 0);
        used_v[l] += n;
        used_k[l] += n.div_ceil(r);
    }
    let rs = |ready: &Vec<u32>, s: &Sig| ready[s.node as usize];
    for (i, src) in net.nodes.iter().enumerate() {
        ready[i] = match *src {
            Source::Const | Source::TokClass(_) | Source::TokBit(_) | Source::TokEnd | Source::TokAfter(_) | Source::TokWrites(_) | Source::TokBeforeWrites(_) => 0,
            Source::Staged { .. } | Source::Wrote(_) => 1,
            Source::RegBit { .. } => 3,
            Source::ReadBit { read, bit } => {
                if bit == 0 {
                    let rd = &net.reads[read as usize];
                    let c = net.commits.iter().find(|c| c.mem == rd.mem).expect("every memory has a commit");
                    let t = rd.addr.iter().chain(c.addr.iter()).chain(c.data.iter()).chain(std::iter::once(&c.enable)).map(|s| rs(&ready, s)).max().unwrap_or(0);
                    let rows = mem_rows[rd.mem as usize];
                    let blocks = rows.div_ceil(rows.min(mixers.dk).max(1)) as u64;
                    let (mut l, mut first) = ((first_at_least(t.max(2), 0) / 2) as usize, 0u64);
                    let chunks = &mut read_chunks[read as usize];
                    while first < blocks {
                        if l > 1 << 16 {
                            return Err(WeaveError::Overflow(format!("memory read #{read} does not fit any layer ({} value and {} key heads)", mixers.value_heads, mixers.key_heads)));
                        }
                        if !mixers.is_attention(l) {
                            used_v.resize(used_v.len().max(l + 1), 0);
                            used_k.resize(used_k.len().max(l + 1), 0);
                            let free_v = mixers.value_heads - used_v[l];
                            let free_k = mixers.key_heads - used_k[l];
                            let n = ((blocks - first) as usize).min(free_v).min(free_k.saturating_mul(r));
                            if n > 0 {
                                chunks.push(ReadChunk { layer: l, first, count: n as u64 });
                                used_v[l] += n;
                                used_k[l] += n.div_ceil(r);
                                first += n as u64;
                                continue;
                            }
                        }
                        l += 1;
                    }
                    read_sublayer[read as usize] = 2 * chunks.last().expect("a memory has at least one block").layer as u32;
                }
                read_sublayer[read as usize] + 1
            }
            Source::Gate(g) => {
                let t = net.gates[g as usize].terms.iter().flat_map(|t| t.lin.iter()).map(|(n, _)| ready[*n as usize]).max().unwrap_or(0);
                let s = first_at_least(t.max(1), 1);
                gate_sublayer[g as usize] = s;
                s + 1
            }
        };
    }
    let mut last = 1u32; // staging heads in layer 0
    if !net.reg_bits.is_empty() {
        last = last.max(3);
    }
    let outs = net.outputs.iter().flat_map(|o| o.bits.iter().chain([&o.emit])).chain(net.halt.iter()).chain(net.after.iter());
    for s in outs {
        last = last.max(ready[s.node as usize]);
    }
    for s in &gate_sublayer {
        last = last.max(s + 1);
    }
    for s in &read_sublayer {
        last = last.max(s + 1);
    }
    // Time `last` is after sublayer `last - 1`, which belongs to layer (last - 1) / 2.
    let num_layers = ((last - 1) / 2 + 1) as usize;
    Ok(Schedule { ready, gate_sublayer, read_sublayer, read_chunks, num_layers, mixers: *mixers })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{Commit, Read};

    #[test]
    fn reads_and_gates_go_to_the_first_sublayer_that_has_their_inputs() {
        let mut n = Netlist::new();
        let en = Sig::of(n.add_node(Source::TokClass(0), "step".into()));
        let st = Sig::of(n.add_node(Source::Staged { field: 0, bit: 0 }, "staged".into()));
        n.commits.push(Commit { mem: 0, enable: en, addr: vec![st], data: vec![st] });
        let r = Sig::of(n.add_node(Source::RegBit { reg: 0, bit: 0 }, "reg".into()));
        n.reg_bits.push(vec![r.node]);
        let g1 = n.gate("g1", &[(vec![(r, 1), (st, 1)], -2, 1)], 0).unwrap(); // needs the register: layer 1 MLP
        let rb = n.add_node(Source::ReadBit { read: 0, bit: 0 }, "rd".into());
        n.reads.push(Read { mem: 0, addr: vec![g1], bits: vec![rb] });
        let g2 = n.gate("g2", &[(vec![(Sig::of(rb), 1), (en, 1)], -2, 1)], 0).unwrap();
        let g0 = n.gate("g0", &[(vec![(st, 1), (en, 1)], -1, 1)], 0).unwrap(); // staged only: layer 0 MLP
        n.outputs.push(crate::net::FieldOut { bits: vec![g2, g0], emit: Sig::ONE });
        let s = schedule(&n, &[2], &[], &Mixers::unbounded(4)).unwrap();
        assert_eq!(s.gate_sublayer, vec![3, 5, 1]);
        assert_eq!(s.read_sublayer, vec![4]);
        assert_eq!(s.ready[g2.node as usize], 6);
        assert_eq!(s.num_layers, 3);
    }
}

impl Schedule {
    /// The critical path: from the deepest gate back through its latest input (a gate's terms, a read's
    /// address bits) to a source, each as `(node name, sublayer it is ready at)`, deepest first. For reports
    /// of how deep a machine weaves and why (`isa-6502/tests/weave_plan.rs`, `isa-rv32im/tests/circuit_weave.rs`).
    pub fn critical_path(&self, net: &Netlist) -> Vec<(String, u32)> {
        let mut gate_node = vec![0usize; net.gates.len()];
        for (i, src) in net.nodes.iter().enumerate() {
            if let Source::Gate(gi) = src {
                gate_node[*gi as usize] = i;
            }
        }
        let last = self.gate_sublayer.iter().max().copied().unwrap_or(0);
        let mut cur = (0..net.gates.len()).find(|gi| self.gate_sublayer[*gi] == last).map(|gi| gate_node[gi]);
        let mut path = Vec::new();
        while let Some(n) = cur {
            path.push((net.names[n].clone(), self.ready[n]));
            let ins: Vec<usize> = match &net.nodes[n] {
                Source::Gate(gi) => net.gates[*gi as usize].terms.iter().flat_map(|t| t.lin.iter().map(|(x, _)| *x as usize)).collect(),
                Source::ReadBit { read, .. } => net.reads[*read as usize].addr.iter().map(|s| s.node as usize).collect(),
                _ => vec![],
            };
            cur = ins.into_iter().max_by_key(|x| self.ready[*x]);
        }
        path
    }
}

/// Move gates later, as far as their readers allow and no further than their inputs stay in the residual
/// anyway: a gate read first at sublayer `t` whose inputs are all read at or after `s` moves to the latest MLP
/// sublayer `<= min(t - 1, s)`. Its output then occupies a slot for fewer layers, no input's slot is held
/// longer, and the layer count is unchanged; so no layer boundary holds more live values than before. A gate
/// moves only into a layer that then holds no more MLP units than the widest layer already does. Gates are
/// visited readers first, so a moved reader lets its inputs move too. This is what fits a machine into a
/// base model's hidden size when the as-soon-as-possible schedule keeps too many values live at once
/// (`GeometryConfig::sink`).
pub fn sink(net: &Netlist, s: &mut Schedule) {
    let n = net.nodes.len();
    let end = 2 * s.num_layers as i64; // the lm_head reads outputs after the last sublayer
    let mut need = vec![i64::MAX; n]; // earliest reading sublayer
    let mut last = vec![i64::MIN; n]; // latest reading sublayer
    let mark = |need: &mut Vec<i64>, last: &mut Vec<i64>, node: u32, t: i64| {
        let i = node as usize;
        need[i] = need[i].min(t);
        last[i] = last[i].max(t);
    };
    // Heads: register heads read the staged values and the commit at layer 1; memory copies read the commit
    // signals in every layer holding a block of a read of that memory, and the read's address there.
    for v in net.reg_values.iter().flatten().chain(net.commit.iter()) {
        mark(&mut need, &mut last, v.node, 2);
    }
    for (ri, rd) in net.reads.iter().enumerate() {
        let c = net.commits.iter().find(|c| c.mem == rd.mem).expect("every memory has a commit");
        for ch in &s.read_chunks[ri] {
            let t = 2 * ch.layer as i64;
            for b in rd.addr.iter().chain(c.addr.iter()).chain(c.data.iter()).chain([&c.enable]) {
                mark(&mut need, &mut last, b.node, t);
            }
        }
    }
    for o in net.outputs.iter().flat_map(|o| o.bits.iter().chain([&o.emit])).chain(net.halt.iter()).chain(net.after.iter()) {
        mark(&mut need, &mut last, o.node, end);
        last[o.node as usize] = i64::MAX;
    }
    // Gates read their inputs at their sublayer.
    for (g, gate) in net.gates.iter().enumerate() {
        for (node, _) in gate.terms.iter().flat_map(|t| t.lin.iter()) {
            mark(&mut need, &mut last, *node, s.gate_sublayer[g] as i64);
        }
    }
    // The gates reading each node, and the earliest sublayer a head or the lm_head reads it (fixed here).
    let mut readers: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (g, gate) in net.gates.iter().enumerate() {
        for (node, _) in gate.terms.iter().flat_map(|t| t.lin.iter()) {
            if readers[*node as usize].last() != Some(&(g as u32)) {
                readers[*node as usize].push(g as u32);
            }
        }
    }
    let head_t: Vec<i64> = (0..n as u32).map(|x| head_need(net, s, x, end)).collect();
    let cost = |g: usize| 2 * net.gates[g].terms.len() + usize::from(net.gates[g].offset != 0);
    let mut units = vec![0usize; s.num_layers];
    for g in 0..net.gates.len() {
        units[(s.gate_sublayer[g] / 2) as usize] += cost(g);
    }
    let widest = units.iter().copied().max().unwrap_or(0);
    // Readers first: nodes are in dependency order.
    for i in (0..n).rev() {
        let Source::Gate(g) = net.nodes[i] else { continue };
        let g = g as usize;
        let cur = s.gate_sublayer[g] as i64;
        if need[i] == i64::MAX {
            continue; // read by nothing (pruned netlists have none)
        }
        let inputs: Vec<u32> = net.gates[g].terms.iter().flat_map(|t| t.lin.iter().map(|(x, _)| *x)).collect();
        let hold = inputs.iter().map(|x| last[*x as usize]).min().unwrap_or(i64::MAX);
        let mut t = (need[i] - 1).min(hold).min(end - 1);
        if t % 2 == 0 {
            t -= 1; // an MLP sublayer
        }
        while t > cur && units[(t / 2) as usize] + cost(g) > widest {
            t -= 2;
        }
        if t <= cur {
            continue;
        }
        units[(cur / 2) as usize] -= cost(g);
        units[(t / 2) as usize] += cost(g);
        s.gate_sublayer[g] = t as u32;
        s.ready[i] = t as u32 + 1;
        // The inputs are now read at t: their earliest reader may be later, their latest is unchanged.
        for x in inputs {
            let xi = x as usize;
            need[xi] = readers[xi].iter().map(|g2| s.gate_sublayer[*g2 as usize] as i64).min().unwrap_or(i64::MAX).min(head_t[xi]);
        }
    }
}

/// The earliest sublayer at which a head or the lm_head reads node `x` (`i64::MAX` when none does).
fn head_need(net: &Netlist, s: &Schedule, x: u32, end: i64) -> i64 {
    let mut m = i64::MAX;
    if net.reg_values.iter().flatten().chain(net.commit.iter()).any(|v| v.node == x) {
        m = m.min(2);
    }
    for (ri, rd) in net.reads.iter().enumerate() {
        let c = net.commits.iter().find(|c| c.mem == rd.mem).expect("every memory has a commit");
        if rd.addr.iter().chain(c.addr.iter()).chain(c.data.iter()).chain([&c.enable]).any(|b| b.node == x) {
            if let Some(ch) = s.read_chunks[ri].first() {
                m = m.min(2 * ch.layer as i64);
            }
        }
    }
    if net.outputs.iter().flat_map(|o| o.bits.iter().chain([&o.emit])).chain(net.halt.iter()).chain(net.after.iter()).any(|o| o.node == x) {
        m = m.min(end);
    }
    m
}
