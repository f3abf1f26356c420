//! Pass 3, `allocate`: typed, named residual slots, MLP units per layer, DeltaNet heads per layer, and the
//! model geometry.
//!
//! Slots: the constant slot (+1), one indicator per token class, the token-value bits, the end flag, then
//! one *fresh* slot per computed bit (staged field bits, register bits, memory-read bits, gate outputs). The
//! embedding sets fresh slots to -1 and exactly one block later adds 0 or +2 (SSA), so every slot is ±1 at
//! every layer boundary. A slot whose node has been read for the last time is reset to -1 by one MLP unit
//! and reused by a later node (see [`allocate`]). Padding slots (when a larger hidden size is requested) hold
//! +1.
//!
//! Heads: layer 0 holds one staging head per field (constant key, written at
//! that field's tokens); layer 1 one head per register (constant key, written at STEP); every memory read
//! gets a head copy of its memory in the read's layer (`2^addr_width / d_k` heads, one per block of `d_k`
//! rows, when the memory has more rows than one head), written at the memory's commit tokens. Key heads are
//! shared like Qwen3.5's grouped keys (`value_heads / key_heads` value heads per key head): all constant-key
//! heads of a layer share key heads, and so do the block heads of one memory read, because their keys and
//! queries are the same one-hot of the address's low `log2 d_k` bits; the block (the high bits) selects the
//! head through beta on writes and through the output gate `z` on reads (see `emit`).

use crate::error::WeaveError;
use crate::net::{Netlist, Sig, Source};
use crate::geometry::{Geometry, GeometryConfig};
use crate::schedule::Schedule;
use serde::{Deserialize, Serialize};

/// What a residual slot is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotKind {
    Const,
    TokClass,
    TokBit,
    TokEnd,
    TokAfter,
    /// A memory's write-token marks (`Source::TokWrites`, `Source::TokBeforeWrites`).
    TokMark,
    Fresh,
    Pad,
}

/// A residual slot.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Slot {
    pub name: String,
    pub kind: SlotKind,
}

/// One MLP unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Half `half` (0: `relu(L + 1)`, 1: `relu(L)`) of term `term` of gate `gate`.
    Term { gate: u32, term: u32, half: u8 },
    /// Gate `gate`'s constant offset.
    Offset { gate: u32 },
    /// Sets node `node`'s slot back to -1 after its last reader, for the next node allocated there.
    Reset { node: u32 },
}

impl Unit {
    /// The gate this unit computes a part of (None for resets).
    pub fn gate(&self) -> Option<u32> {
        match self {
            Unit::Term { gate, .. } | Unit::Offset { gate } => Some(*gate),
            Unit::Reset { .. } => None,
        }
    }
}

/// A key or query: the constant row 0, or the one-hot of an address (rows `block * d_k ..`).
#[derive(Clone, Debug)]
pub enum KeySrc {
    Const,
    Addr { bits: Vec<Sig>, block: u64 },
}

/// One DeltaNet head (one key head feeding one value head).
#[derive(Clone, Debug)]
pub struct Head {
    pub name: String,
    pub key: KeySrc,
    pub query: KeySrc,
    /// beta = 1 exactly where this bit is 1.
    pub enable: Sig,
    /// A second enable, exclusive with the first (another token class): beta = 1 where either is 1.
    pub enable_also: Option<Sig>,
    /// Decay exactly 0 where this bit is 1 (a memory clear's token): the state is zeros before the token's
    /// write.
    pub clear: Option<Sig>,
    /// Bits written (value).
    pub value: Vec<Sig>,
    /// Nodes the read bits land in.
    pub out: Vec<u32>,
    /// The memory read this head serves (its block heads share key heads); `None` for constant keys.
    pub read: Option<u32>,
}

/// Units and heads of one layer.
#[derive(Clone, Debug, Default)]
pub struct LayerAlloc {
    pub units: Vec<Unit>,
    /// Terms and offsets computed by another unit of the layer: `(u, unit)` means unit `u`'s gate and up rows
    /// are those `unit` would have (the same linear form, bias and half, or both constant), so `u` also writes
    /// `unit`'s output into its gate's slot (down_proj only). A lookup's entries repeat across its output bits,
    /// and every gate's offset is the same constant unit.
    pub shared: Vec<(u32, Unit)>,
    pub heads: Vec<Head>,
    /// Key-head groups: group `g` is key head `g`; its value heads are `g * R + j` for the listed heads
    /// (indices into `heads`, which share the group's key and query), `R = value_heads / key_heads`.
    pub groups: Vec<Vec<usize>>,
}

/// The allocation.
#[derive(Clone, Debug)]
pub struct Allocation {
    pub slots: Vec<Slot>,
    /// Slot of every netlist node.
    pub slot_of: Vec<usize>,
    pub layers: Vec<LayerAlloc>,
    pub geometry: Geometry,
    /// Layers whose token mixer is an (all-zero, exactly inert) full-attention layer: those of the fitted
    /// geometry's `attention_interval`, or one requested layer (transformers' cache needs at least one
    /// attention layer to count positions).
    pub attention_layers: Vec<usize>,
}

/// The geometry's one-line summary with the number of full-attention layers after the layer count:
/// `L layers (A full attention), hidden H, intermediate I, DeltaNet K key / V value heads (d_k D, d_v D), vocab N`.
impl std::fmt::Display for Allocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.geometry.write_summary(f, Some(self.attention_layers.len()))
    }
}

impl Allocation {
    /// The slot and the ±1 sign of a signal.
    pub fn slot(&self, s: Sig) -> (usize, f32) {
        (self.slot_of[s.node as usize], s.sign())
    }
}

/// Nodes something reads: gates, memory reads and writes, register commits, the lm_head.
fn read_nodes(net: &Netlist) -> Vec<bool> {
    let mut read = vec![false; net.nodes.len()];
    {
        let mut mark = |s: &Sig| read[s.node as usize] = true;
        net.gates.iter().flat_map(|g| g.terms.iter()).flat_map(|t| t.lin.iter()).for_each(|(n, _)| mark(&Sig::of(*n)));
        net.reads.iter().flat_map(|r| r.addr.iter()).for_each(&mut mark);
        net.commits.iter().flat_map(|c| c.addr.iter().chain(c.data.iter()).chain([&c.enable])).for_each(&mut mark);
        net.reg_values.iter().flatten().chain(net.commit.iter()).for_each(&mut mark);
        net.outputs.iter().flat_map(|o| o.bits.iter().chain([&o.emit])).chain(net.halt.iter()).chain(net.after.iter()).for_each(&mut mark);
    }
    read
}

/// The constant-key heads per layer, before any memory read: layer 0 one staging head per field whose
/// staged bits something reads and one per memory whose [`Source::Wrote`] bit something reads, layer 1 one
/// head per register (see [`allocate`]).
pub fn const_heads(net: &Netlist) -> Vec<usize> {
    let read = read_nodes(net);
    let mut fields: Vec<u32> = net.nodes.iter().enumerate().filter_map(|(i, s)| if let Source::Staged { field, .. } = s { read[i].then_some(*field) } else { None }).collect();
    fields.sort_unstable();
    fields.dedup();
    let wrote = net.nodes.iter().enumerate().filter(|(i, s)| matches!(s, Source::Wrote(_)) && read[*i]).count();
    vec![fields.len() + wrote, net.reg_bits.len()]
}

/// Sublayer times of one node: `first_write` (the first sublayer adding to its slot; -1 for the embedding)
/// and `last_read` (the last sublayer reading it; `i64::MAX` when the lm_head reads it).
fn lifetimes(net: &Netlist, sched: &Schedule, layers: &[LayerAlloc]) -> (Vec<i64>, Vec<i64>) {
    let n = net.nodes.len();
    let mut first_write = vec![-1i64; n];
    let mut last_read = vec![i64::MIN; n];
    for (i, src) in net.nodes.iter().enumerate() {
        first_write[i] = match src {
            Source::Const | Source::TokClass(_) | Source::TokBit(_) | Source::TokEnd | Source::TokAfter(_) | Source::TokWrites(_) | Source::TokBeforeWrites(_) => -1,
            Source::Staged { .. } | Source::Wrote(_) => 0,
            Source::RegBit { .. } => 2,
            Source::ReadBit { read, .. } => 2 * sched.read_chunks[*read as usize][0].layer as i64,
            Source::Gate(g) => sched.gate_sublayer[*g as usize] as i64,
        };
    }
    let mut use_at = |s: &Sig, t: i64| {
        let e = &mut last_read[s.node as usize];
        *e = (*e).max(t);
    };
    for (g, gate) in net.gates.iter().enumerate() {
        for t in &gate.terms {
            for (node, _) in &t.lin {
                use_at(&Sig::of(*node), sched.gate_sublayer[g] as i64);
            }
        }
    }
    for (l, la) in layers.iter().enumerate() {
        for h in &la.heads {
            let t = 2 * l as i64;
            for src in [&h.key, &h.query] {
                if let KeySrc::Addr { bits, .. } = src {
                    bits.iter().for_each(|b| use_at(b, t));
                }
            }
            use_at(&h.enable, t);
            h.enable_also.iter().chain(h.clear.iter()).for_each(|b| use_at(b, t));
            h.value.iter().for_each(|b| use_at(b, t));
        }
    }
    let outs = net.outputs.iter().flat_map(|o| o.bits.iter().chain([&o.emit])).chain(net.halt.iter()).chain(net.after.iter());
    for s in outs.chain([Sig::ONE].iter()) {
        use_at(s, i64::MAX);
    }
    (first_write, last_read)
}

/// Allocate heads, then slots and units; `fit` (a config's `[geometry]`) grows the minimal geometry to a
/// requested one (missing fields at the minimal need).
///
/// Slots are reused: a node's slot is free once its last reader has run, and an MLP *reset* unit (gate
/// `128·1`, up `x + 1`, down `-1/128`: adds exactly `-(x + 1)`) sets it back to -1 in the first MLP at or
/// after that reader (and after the node's own write), so the next node written there starts from -1 like a
/// fresh slot. Nodes are given slots in the order of their first write, each taking a freed slot when one is
/// free (interval colouring: the fewest slots for these lifetimes).
pub fn allocate(
    net: &Netlist,
    sched: &Schedule,
    desc: &isa_api::MachineDesc,
    proto: &isa_api::Protocol,
    fit: Option<&GeometryConfig>,
    attention_layer: bool,
) -> Result<Allocation, WeaveError> {
    let nl = sched.num_layers;
    let mut layers = vec![LayerAlloc::default(); nl];
    // MLP units: one per distinct gate row (see `LayerAlloc::shared`).
    let mut term_unit: Vec<std::collections::HashMap<(&[(u32, i64)], i64, u8), u32>> = vec![Default::default(); nl];
    let mut offset_unit: Vec<Option<u32>> = vec![None; nl];
    for (g, gate) in net.gates.iter().enumerate() {
        let l = (sched.gate_sublayer[g] / 2) as usize;
        for (t, term) in gate.terms.iter().enumerate() {
            for half in 0..2 {
                let unit = Unit::Term { gate: g as u32, term: t as u32, half };
                let la = &mut layers[l];
                match term_unit[l].entry((&term.lin[..], term.bias, half)) {
                    std::collections::hash_map::Entry::Occupied(e) => la.shared.push((*e.get(), unit)),
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert(la.units.len() as u32);
                        la.units.push(unit);
                    }
                }
            }
        }
        if gate.offset != 0 {
            let unit = Unit::Offset { gate: g as u32 };
            let la = &mut layers[l];
            match offset_unit[l] {
                Some(u) => la.shared.push((u, unit)),
                None => {
                    offset_unit[l] = Some(la.units.len() as u32);
                    la.units.push(unit);
                }
            }
        }
    }
    // Staging heads (layer 0): one per field.
    let mut field_nodes: Vec<Vec<u32>> = Vec::new();
    let mut tok_bits = Vec::new();

    let mut classes = Vec::new();
    for (i, src) in net.nodes.iter().enumerate() {
        match src {
            Source::Staged { field, .. } => {
                if field_nodes.len() <= *field as usize {
                    field_nodes.resize(*field as usize + 1, Vec::new());
                }
                field_nodes[*field as usize].push(i as u32);
            }
            Source::TokBit(_) => tok_bits.push(Sig::of(i as u32)),
            Source::TokClass(_) => classes.push(Sig::of(i as u32)),
            _ => {}
        }
    }
    // The token class of each memory's clear field, if the circuit clears it.
    let clear_class = |mem: u32| -> Option<Sig> {
        let f = proto.fields.iter().position(|f| f.role == isa_api::FieldRole::MemClear { mem })?;
        Some(classes[crate::lower::Classes::field(f as u32) as usize])
    };
    // A field none of whose staged bits is read (an output port's) needs no staging head.
    let read = read_nodes(net);
    for (f, fd) in proto.fields.iter().enumerate() {
        if !field_nodes[f].iter().any(|n| read[*n as usize]) {
            continue;
        }
        let cls = classes[crate::lower::Classes::field(f as u32) as usize];
        let mut value: Vec<Sig> = tok_bits[..fd.width as usize].to_vec();
        // A memory's clear token also writes its first address chunk's staging row, with the token's value (0)
        // and the written-before flag 0: the memory's latest write is not applied again after the clear.
        let also = match fd.role {
            isa_api::FieldRole::MemAddr { mem, chunk: 0 } => clear_class(mem),
            _ => None,
        };
        if field_nodes[f].len() > fd.width as usize {
            value.push(also.map_or(Sig::ONE, Sig::not)); // the written-before flag
        }
        layers[0].heads.push(Head {
            name: format!("stage {}", fd.name),
            key: KeySrc::Const,
            query: KeySrc::Const,
            enable: cls,
            enable_also: also,
            clear: None,
            value,
            out: field_nodes[f].clone(),
            read: None,
        });
    }
    // Write marks (layer 0): per memory whose `Wrote` bit something reads, a head written at the memory's write
    // tokens (1) and at the tokens of the step fields before them (0).
    for (i, src) in net.nodes.iter().enumerate() {
        let Source::Wrote(mem) = *src else { continue };
        if !read[i] {
            continue;
        }
        let find = |want: Source| net.nodes.iter().position(|s| *s == want).map(|n| Sig::of(n as u32));
        let (Some(writes), Some(before)) = (find(Source::TokWrites(mem)), find(Source::TokBeforeWrites(mem))) else {
            return Err(WeaveError::Other(format!("memory {mem}'s write marks have no token features (weaver bug)")));
        };
        layers[0].heads.push(Head {
            name: format!("wrote {}", desc.memories[mem as usize].name),
            key: KeySrc::Const,
            query: KeySrc::Const,
            enable: writes,
            enable_also: Some(before),
            clear: None,
            value: vec![writes],
            out: vec![i as u32],
            read: None,
        });
    }
    // Register heads (layer 1).
    if !net.reg_bits.is_empty() && nl < 2 {
        return Err(WeaveError::Other("registers need at least two layers (weaver bug)".into()));
    }
    let commit = net.commit.unwrap_or(classes[crate::lower::Classes::STEP as usize]);
    for (r, bits) in net.reg_bits.iter().enumerate() {
        layers[1].heads.push(Head {
            name: format!("register {}", desc.registers[r].name),
            key: KeySrc::Const,
            query: KeySrc::Const,
            enable: commit,
            enable_also: None,
            clear: None,
            value: net.reg_values[r].clone(),
            out: bits.clone(),
            read: None,
        });
    }
    // Memory read heads, one per block of d_k rows, in the layers the schedule chose.
    let dk = sched.mixers.dk;
    for (ri, rd) in net.reads.iter().enumerate() {
        let c = net.commits.iter().find(|c| c.mem == rd.mem).expect("every memory has a commit");
        let m = &desc.memories[rd.mem as usize];
        let rows = 1usize << m.addr_width;
        let per = rows.min(dk);
        let blocks = rows / per;
        for ch in &sched.read_chunks[ri] {
            for b in ch.first..ch.first + ch.count {
                layers[ch.layer].heads.push(Head {
                    name: format!("memory {} read #{ri}{}", m.name, if blocks > 1 { format!(" rows {}..{}", b as usize * per, (b as usize + 1) * per) } else { String::new() }),
                    key: KeySrc::Addr { bits: c.addr.clone(), block: b },
                    query: KeySrc::Addr { bits: rd.addr.clone(), block: b },
                    enable: c.enable,
                    enable_also: None,
                    clear: clear_class(rd.mem),
                    value: c.data.clone(),
                    out: rd.bits.clone(),
                    read: Some(ri as u32),
                });
            }
        }
    }
    // Full-attention layers: every attention_interval-th of a fitted geometry (the schedule kept their
    // mixers empty); otherwise, on request, one inert layer: the last if its mixer is idle, else one more.
    let interval = sched.mixers.attention_interval;
    let mut attention_layers = Vec::new();
    if interval == 0 && attention_layer {
        if layers.last().is_some_and(|l| l.heads.is_empty()) {
            attention_layers.push(layers.len() - 1);
        } else {
            layers.push(LayerAlloc::default());
            attention_layers.push(layers.len() - 1);
        }
    }
    // Slots, reused after each node's last reader (see the doc comment).
    let (first_write, last_read) = lifetimes(net, sched, &layers);
    let last_sublayer = 2 * layers.len() as i64 - 1;
    let reset_at = |i: usize| -> Option<i64> {
        let lr = last_read[i].max(first_write[i] + 1);
        if lr == i64::MAX {
            return None;
        }
        let r = if lr % 2 == 1 { lr } else { lr + 1 };
        (r <= last_sublayer).then_some(r)
    };
    let mut order: Vec<usize> = (0..net.nodes.len()).collect();
    order.sort_by_key(|i| (first_write[*i], *i));
    let mut slots: Vec<Slot> = Vec::new();
    let mut slot_of = vec![0usize; net.nodes.len()];
    let mut occupant: Vec<usize> = Vec::new(); // current node of each slot
    let mut pending = std::collections::BinaryHeap::new(); // Reverse((reset sublayer, slot))
    let mut free = std::collections::BTreeSet::<usize>::new();
    for i in order {
        let fw = first_write[i];
        while let Some(std::cmp::Reverse((r, sl))) = pending.peek().copied() {
            if r > fw {
                break;
            }
            pending.pop();
            free.insert(sl);
        }
        let kind = match net.nodes[i] {
            Source::Const => SlotKind::Const,
            Source::TokClass(_) => SlotKind::TokClass,
            Source::TokBit(_) => SlotKind::TokBit,
            Source::TokEnd => SlotKind::TokEnd,
            Source::TokAfter(_) => SlotKind::TokAfter,
            Source::TokWrites(_) | Source::TokBeforeWrites(_) => SlotKind::TokMark,
            _ => SlotKind::Fresh,
        };
        let sl = match free.pop_first() {
            Some(sl) => {
                let prev = occupant[sl];
                let r = reset_at(prev).expect("only reset slots are freed");
                layers[(r / 2) as usize].units.push(Unit::Reset { node: prev as u32 });
                slots[sl].name.push_str(" | ");
                slots[sl].name.push_str(&net.names[i]);
                occupant[sl] = i;
                sl
            }
            None => {
                slots.push(Slot { name: net.names[i].clone(), kind });
                occupant.push(i);
                slots.len() - 1
            }
        };
        slot_of[i] = sl;
        if let Some(r) = reset_at(i) {
            pending.push(std::cmp::Reverse((r, sl)));
        }
    }
    let nl = layers.len();
    // Key-head groups: constant-key heads share key heads, R value heads each. Qwen3.5 gives every key head
    // the same number of value heads, so R is chosen to minimise the DeltaNet parameters
    // (∝ 2·nk·d_k + nv·(3·d_v + 2)), or taken from the target geometry.
    let maxbits = layers.iter().flat_map(|l| l.heads.iter()).map(|h| h.value.len()).max().unwrap_or(1);
    let dv_min = crate::numerics::min_value_dim(dk, maxbits);
    // Per layer: the number of constant-key heads and, per memory read, its number of block heads.
    let share_sets: Vec<Vec<usize>> = layers
        .iter()
        .map(|l| {
            let mut sets = vec![l.heads.iter().filter(|h| h.read.is_none()).count()];
            let mut reads: Vec<u32> = l.heads.iter().filter_map(|h| h.read).collect();
            reads.sort_unstable();
            reads.dedup();
            sets.extend(reads.iter().map(|r| l.heads.iter().filter(|h| h.read == Some(*r)).count()));
            sets
        })
        .collect();
    let groups_for = |r: usize| -> usize { share_sets.iter().map(|s| s.iter().map(|n| n.div_ceil(r)).sum::<usize>()).max().unwrap_or(0).max(1) };
    let widest = share_sets.iter().flat_map(|s| s.iter().copied()).max().unwrap_or(1).max(1);
    let r = match fit.and_then(|t| t.value_heads_per_key()) {
        Some(r) => r,
        None => {
            let dv = fit.and_then(|t| t.dv).map_or(dv_min, |d| d.max(dv_min));
            let cost = |r: usize| 2 * groups_for(r) * dk + groups_for(r) * r * (3 * dv + 2);
            (1..=widest).min_by_key(|r| (cost(*r), *r)).unwrap_or(1)
        }
    };
    for la in layers.iter_mut() {
        let consts: Vec<usize> = (0..la.heads.len()).filter(|i| la.heads[*i].read.is_none()).collect();
        la.groups = consts.chunks(r).map(|c| c.to_vec()).collect();
        let mut reads: Vec<u32> = la.heads.iter().filter_map(|h| h.read).collect();
        reads.sort_unstable();
        reads.dedup();
        for rd in reads {
            let blocks: Vec<usize> = (0..la.heads.len()).filter(|i| la.heads[*i].read == Some(rd)).collect();
            la.groups.extend(blocks.chunks(r).map(|c| c.to_vec()));
        }
    }
    let key_heads = layers.iter().map(|l| l.groups.len()).max().unwrap_or(0).max(1);
    let minimal = Geometry {
        layers: nl,
        hidden: slots.len(),
        intermediate: layers.iter().map(|l| l.units.len()).max().unwrap_or(0).max(1),
        key_heads,
        value_heads: key_heads * r,
        dk,
        dv: dv_min,
        vocab: proto.vocab_size as usize,
        attention_interval: interval,
    };
    let geometry = match fit {
        Some(t) => minimal.fit(&t.target(&minimal))?,
        None => minimal,
    };
    while slots.len() < geometry.hidden {
        slots.push(Slot { name: format!("pad{}", slots.len()), kind: SlotKind::Pad });
    }
    layers.resize(geometry.layers, LayerAlloc::default());
    if interval > 0 {
        attention_layers = (0..layers.len()).filter(|l| sched.mixers.is_attention(*l)).collect();
    }
    Ok(Allocation { slots, slot_of, layers, geometry, attention_layers })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{weave, WeaveOptions};

    #[test]
    fn slots_are_typed_and_heads_grouped() {
        let w = weave(&isa_api::examples::acc8(), &WeaveOptions::default()).unwrap();
        let a = &w.allocation;
        assert_eq!(a.slots[0].kind, SlotKind::Const);
        let count = |k: SlotKind| a.slots.iter().filter(|s| s.kind == k).count();
        assert_eq!(count(SlotKind::TokClass), 2 + w.protocol.fields.len());
        assert_eq!(count(SlotKind::TokBit), 8);
        assert_eq!(count(SlotKind::TokEnd), 1);
        assert_eq!(count(SlotKind::Pad), 0);
        // layer 0: one staging head per field except the output port's (nothing reads its staged value),
        // sharing constant key heads (R per key head, R chosen for the fewest parameters)
        let staged: Vec<&str> = a.layers[0].heads.iter().map(|h| h.name.as_str()).collect();
        let outs: Vec<&isa_api::Field> = w.protocol.fields.iter().filter(|f| matches!(f.role, isa_api::FieldRole::Out { .. })).collect();
        assert_eq!(outs.len(), 1);
        assert_eq!(staged.len(), w.protocol.fields.len() - 1);
        assert!(!staged.contains(&format!("stage {}", outs[0].name).as_str()), "{staged:?}");
        // 6 staging heads, 2 memory reads in one layer -> R = 3: 2 key / 6 value heads
        assert_eq!((a.geometry.key_heads, a.geometry.value_heads), (2, 6));
        assert_eq!(a.layers[0].groups, vec![vec![0, 1, 2], vec![3, 4, 5]]);
        // layer 1: the PC and ACC register heads share a key head
        assert!(a.layers[1].heads.iter().any(|h| h.name == "register ACC"));
        // memory reads have key heads of their own (acc8's memory fits one head: one block per read)
        for la in &a.layers {
            for g in &la.groups {
                if matches!(la.heads[g[0]].key, KeySrc::Addr { .. }) {
                    assert_eq!(g.len(), 1);
                    assert!(la.heads[g[0]].read.is_some());
                }
            }
        }
        assert_eq!(a.geometry.value_heads % a.geometry.key_heads, 0);
        assert_eq!(a.geometry.dk, 256);
    }

    #[test]
    fn fitting_grows_and_pads() {
        let w = weave(&isa_api::examples::acc8(), &WeaveOptions::default()).unwrap();
        let mut t = w.allocation.geometry;
        t.hidden += 3;
        t.layers += 1;
        let w2 = weave(&isa_api::examples::acc8(), &WeaveOptions { fit: Some(t.into()), attention_layer: false }).unwrap();
        assert_eq!(w2.allocation.slots.iter().filter(|s| s.kind == SlotKind::Pad).count(), 3);
        assert_eq!(w2.config.num_hidden_layers, t.layers);
        let mut bad = t;
        bad.dk = 96;
        let e = w.allocation.geometry.fit(&bad).unwrap_err().to_string();
        assert!(e.contains("linear_key_head_dim 96 must be a power of two"), "{e}");
        // an invalid target is scheduled as the minimal geometry and then named, not spread over
        let e = weave(&isa_api::examples::acc8(), &WeaveOptions { fit: Some(Geometry { dk: 0, attention_interval: 4, ..t }.into()), attention_layer: false }).unwrap_err().to_string();
        assert!(e.contains("linear_key_head_dim 0 must be a power of two") && e.contains("full_attention_interval 4 was not scheduled"), "{e}");
        bad = t;
        bad.hidden -= 4;
        let e = w.allocation.geometry.fit(&bad).unwrap_err().to_string();
        assert!(e.contains(&format!("hidden_size needs {}", t.hidden - 3)), "{e}");
    }

    #[test]
    fn slots_are_reused_after_their_last_reader() {
        let w = weave(&isa_api::examples::acc8(), &WeaveOptions::default()).unwrap();
        let a = &w.allocation;
        let resets: Vec<(usize, u32)> = a.layers.iter().enumerate().flat_map(|(l, la)| la.units.iter().filter_map(move |u| if let Unit::Reset { node } = u { Some((l, *node)) } else { None })).collect();
        assert!(!resets.is_empty());
        assert!(a.slots.len() < w.netlist.nodes.len(), "{} slots for {} nodes", a.slots.len(), w.netlist.nodes.len());
        // every reset clears a slot that a later node takes, after the old node's last reader
        let (fw, lr) = lifetimes(&w.netlist, &w.schedule, &a.layers);
        for (l, node) in resets {
            let s = a.slot_of[node as usize];
            let r = 2 * l as i64 + 1;
            assert!(lr[node as usize] <= r && fw[node as usize] < r, "reset of node {node} in layer {l}");
            let next = (0..w.netlist.nodes.len()).filter(|i| a.slot_of[*i] == s && fw[*i] > fw[node as usize]).min_by_key(|i| fw[*i]);
            assert!(next.is_some_and(|n| fw[n] >= r), "slot {s} is taken after its reset");
        }
    }

    #[test]
    fn a_fitted_geometry_spreads_reads_and_skips_attention_layers() {
        // acc8 in heads of 64 rows (its 256-row memory is 4 blocks), at most 3 value heads a layer, every 3rd
        // layer full attention
        let m = weave(&isa_api::examples::acc8(), &WeaveOptions::default()).unwrap().allocation.geometry;
        let t = Geometry { layers: 0, hidden: m.hidden + 100, intermediate: m.intermediate + 100, key_heads: 3, value_heads: 3, dk: 64, dv: m.dv, vocab: m.vocab, attention_interval: 3 };
        let e = weave(&isa_api::examples::acc8(), &WeaveOptions { fit: Some(t.into()), attention_layer: false }).unwrap_err().to_string();
        assert!(e.contains("layer 0 needs 6 value heads"), "{e}");
        let t = Geometry { key_heads: 4, value_heads: 8, ..t };
        let w = weave(&isa_api::examples::acc8(), &WeaveOptions { fit: Some(t.into()), attention_layer: false }).unwrap();
        let a = &w.allocation;
        assert_eq!(a.attention_layers, (0..a.layers.len()).filter(|l| l % 3 == 2).collect::<Vec<_>>());
        for l in &a.attention_layers {
            assert!(a.layers[*l].heads.is_empty());
        }
        for la in &a.layers {
            assert!(la.heads.len() <= 8 && la.groups.len() <= 4);
        }
        for (ri, ch) in w.schedule.read_chunks.iter().enumerate() {
            assert_eq!(ch.iter().map(|c| c.count).sum::<u64>(), 4, "read {ri}: {ch:?}");
        }
        assert_eq!(a.geometry.dk, 64);
        let cfg = &w.config;
        assert_eq!(cfg.linear_key_head_dim, 64);
        assert!(cfg.layer_types.iter().enumerate().all(|(l, ty)| (*ty == backends::LayerType::FullAttention) == (l % 3 == 2)));
    }
}
