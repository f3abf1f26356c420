//! Pass 3, `allocate`: typed, named residual slots, MLP units per layer, DeltaNet heads per layer, and the
//! model geometry.
//!
//! Slots: the constant slot (+1), one indicator per token class, the token-value bits, the NONE flag, then
//! one *fresh* slot per computed bit (staged field bits, register bits, memory-read bits, gate outputs). The
//! embedding sets fresh slots to -1 and exactly one block later adds 0 or +2 (SSA), so every slot is ±1 at
//! every layer boundary. Padding slots (when a larger hidden size is requested) hold +1.
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
use crate::schedule::Schedule;
use serde::{Deserialize, Serialize};

/// Most rows one head holds (keeps the gated norm exact, see `emit`).
pub const MAX_DK: usize = 256;

/// What a residual slot is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotKind {
    Const,
    TokClass,
    TokBit,
    TokNone,
    Fresh,
    Pad,
}

/// A residual slot.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Slot {
    pub name: String,
    pub kind: SlotKind,
}

/// One MLP unit: half `half` (0: `relu(L + 1)`, 1: `relu(L)`) of term `term` of gate `gate`; `term = None` is
/// the gate's constant-offset unit.
#[derive(Clone, Copy, Debug)]
pub struct Unit {
    pub gate: u32,
    pub term: Option<u32>,
    pub half: u8,
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
    pub heads: Vec<Head>,
    /// Key-head groups: group `g` is key head `g`; its value heads are `g * R + j` for the listed heads
    /// (indices into `heads`, which share the group's key and query), `R = value_heads / key_heads`.
    pub groups: Vec<Vec<usize>>,
}

/// Model geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    pub layers: usize,
    pub hidden: usize,
    pub intermediate: usize,
    /// DeltaNet key heads.
    pub key_heads: usize,
    /// DeltaNet value heads (a multiple of `key_heads`).
    pub value_heads: usize,
    pub dk: usize,
    pub dv: usize,
    pub vocab: usize,
}

impl Geometry {
    /// Grow to `target`, or name every dimension that does not fit.
    pub fn fit(&self, target: &Geometry) -> Result<Geometry, WeaveError> {
        let mut over = Vec::new();
        let mut chk = |name: &str, need: usize, have: usize| {
            if need > have {
                over.push(format!("{name} needs {need} but the target has {have}"));
            }
        };
        chk("num_hidden_layers", self.layers, target.layers);
        chk("hidden_size", self.hidden, target.hidden);
        chk("intermediate_size", self.intermediate, target.intermediate);
        chk("linear_num_key_heads", self.key_heads, target.key_heads);
        chk("linear_num_value_heads", self.value_heads, target.value_heads);
        chk("linear_key_head_dim", self.dk, target.dk);
        chk("linear_value_head_dim", self.dv, target.dv);
        chk("vocab_size", self.vocab, target.vocab);
        if target.key_heads == 0 || target.value_heads % target.key_heads != 0 {
            over.push(format!("linear_num_value_heads {} must be a multiple of linear_num_key_heads {}", target.value_heads, target.key_heads));
        } else if self.value_heads / self.key_heads > target.value_heads / target.key_heads {
            over.push(format!(
                "{} value heads per key head needed but the target has {}",
                self.value_heads / self.key_heads,
                target.value_heads / target.key_heads
            ));
        }
        if !target.dk.is_power_of_two() || target.dk.trailing_zeros() % 2 != 0 || target.dk > MAX_DK {
            over.push(format!(
                "linear_key_head_dim {} must be a power of 4 up to {MAX_DK} (a one-hot memory read through Qwen3.5's l2norm and 1/sqrt(d_k) scale is an exact f32 value only when sqrt(d_k) is a power of two)",
                target.dk
            ));
        }
        if target.dv % 4 != 0 {
            over.push(format!("linear_value_head_dim {} must be a multiple of 4", target.dv));
        }
        if over.is_empty() { Ok(*target) } else { Err(WeaveError::Overflow(over.join("; "))) }
    }
}

/// The allocation.
#[derive(Clone, Debug)]
pub struct Allocation {
    pub slots: Vec<Slot>,
    /// Slot of every netlist node.
    pub slot_of: Vec<usize>,
    pub layers: Vec<LayerAlloc>,
    pub geometry: Geometry,
    /// Index of the layer whose token mixer is an (all-zero, exactly inert) full-attention layer, if any:
    /// transformers' cache needs at least one attention layer to count positions.
    pub attention_layer: Option<usize>,
}

impl Allocation {
    /// The slot and the ±1 sign of a signal.
    pub fn slot(&self, s: Sig) -> (usize, f32) {
        (self.slot_of[s.node as usize], s.sign())
    }
}

fn pow4_at_least(n: usize) -> usize {
    let mut d = 4;
    while d < n {
        d *= 4;
    }
    d
}

/// Allocate slots, units and heads; `fit` grows the minimal geometry to a requested one.
pub fn allocate(
    net: &Netlist,
    sched: &Schedule,
    desc: &isa_api::MachineDesc,
    proto: &isa_api::Protocol,
    fit: Option<&Geometry>,
    attention_layer: bool,
) -> Result<Allocation, WeaveError> {
    let mut slots = Vec::new();
    let mut slot_of = vec![0usize; net.nodes.len()];
    for (i, src) in net.nodes.iter().enumerate() {
        let kind = match src {
            Source::Const => SlotKind::Const,
            Source::TokClass(_) => SlotKind::TokClass,
            Source::TokBit(_) => SlotKind::TokBit,
            Source::TokNone => SlotKind::TokNone,
            _ => SlotKind::Fresh,
        };
        slot_of[i] = slots.len();
        slots.push(Slot { name: net.names[i].clone(), kind });
    }
    let nl = sched.num_layers;
    let mut layers = vec![LayerAlloc::default(); nl];
    // MLP units.
    for (g, gate) in net.gates.iter().enumerate() {
        let l = (sched.gate_sublayer[g] / 2) as usize;
        for t in 0..gate.terms.len() {
            for half in 0..2 {
                layers[l].units.push(Unit { gate: g as u32, term: Some(t as u32), half });
            }
        }
        if gate.offset != 0 {
            layers[l].units.push(Unit { gate: g as u32, term: None, half: 0 });
        }
    }
    // Staging heads (layer 0): one per field.
    let mut field_nodes: Vec<Vec<u32>> = Vec::new();
    let mut tok_bits = Vec::new();
    let mut tok_none = Sig::ZERO;
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
            Source::TokNone => tok_none = Sig::of(i as u32),
            Source::TokClass(_) => classes.push(Sig::of(i as u32)),
            _ => {}
        }
    }
    for (f, fd) in proto.fields.iter().enumerate() {
        let cls = classes[crate::lower::Classes::field(f as u32) as usize];
        let mut value: Vec<Sig> = tok_bits[..fd.width as usize].to_vec();
        if fd.optional {
            value.push(tok_none.not());
        }
        layers[0].heads.push(Head {
            name: format!("stage {}", fd.name),
            key: KeySrc::Const,
            query: KeySrc::Const,
            enable: cls,
            value,
            out: field_nodes[f].clone(),
            read: None,
        });
    }
    // Register heads (layer 1).
    if !net.reg_bits.is_empty() && nl < 2 {
        return Err(WeaveError::Other("registers need at least two layers (weaver bug)".into()));
    }
    let step_cls = classes[crate::lower::Classes::STEP as usize];
    for (r, bits) in net.reg_bits.iter().enumerate() {
        layers[1].heads.push(Head {
            name: format!("register {}", desc.registers[r].name),
            key: KeySrc::Const,
            query: KeySrc::Const,
            enable: step_cls,
            value: net.reg_values[r].clone(),
            out: bits.clone(),
            read: None,
        });
    }
    // Memory read heads.
    let mut rows_needed = 1usize;
    for (ri, rd) in net.reads.iter().enumerate() {
        let l = (sched.read_sublayer[ri] / 2) as usize;
        let c = net.commits.iter().find(|c| c.mem == rd.mem).expect("every memory has a commit");
        let m = &desc.memories[rd.mem as usize];
        let rows = 1usize << m.addr_width;
        rows_needed = rows_needed.max(rows.min(MAX_DK));
        let per = pow4_at_least(rows.min(MAX_DK));
        let blocks = rows.div_ceil(per);
        for b in 0..blocks {
            layers[l].heads.push(Head {
                name: format!("memory {} read #{ri}{}", m.name, if blocks > 1 { format!(" rows {}..{}", b * per, (b + 1) * per) } else { String::new() }),
                key: KeySrc::Addr { bits: c.addr.clone(), block: b as u64 },
                query: KeySrc::Addr { bits: rd.addr.clone(), block: b as u64 },
                enable: c.enable,
                value: c.data.clone(),
                out: rd.bits.clone(),
                read: Some(ri as u32),
            });
        }
    }
    // An inert full-attention layer: the last layer if its mixer is idle, else one more layer.
    let mut att = None;
    if attention_layer {
        if layers.last().is_some_and(|l| l.heads.is_empty()) {
            att = Some(layers.len() - 1);
        } else {
            layers.push(LayerAlloc::default());
            att = Some(layers.len() - 1);
        }
    }
    let nl = layers.len();
    // Key-head groups: constant-key heads share key heads, R value heads each. Qwen3.5 gives every key head
    // the same number of value heads, so R is chosen to minimise the DeltaNet parameters
    // (∝ 2·nk·d_k + nv·(3·d_v + 2)), or taken from the target geometry.
    let maxbits = layers.iter().flat_map(|l| l.heads.iter()).map(|h| h.value.len()).max().unwrap_or(1);
    let (dk_min, dv_min) = (pow4_at_least(rows_needed), 4 * maxbits.div_ceil(2).max(1));
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
    let r = match fit {
        Some(t) if t.key_heads > 0 && t.value_heads % t.key_heads == 0 => (t.value_heads / t.key_heads).max(1),
        _ => {
            let (dk, dv) = (fit.map_or(dk_min, |t| t.dk.max(dk_min)), fit.map_or(dv_min, |t| t.dv.max(dv_min)));
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
        dk: dk_min,
        dv: dv_min,
        vocab: proto.vocab_size as usize,
    };
    let geometry = match fit {
        Some(t) => minimal.fit(t)?,
        None => minimal,
    };
    while slots.len() < geometry.hidden {
        slots.push(Slot { name: format!("pad{}", slots.len()), kind: SlotKind::Pad });
    }
    layers.resize(geometry.layers, LayerAlloc::default());
    Ok(Allocation { slots, slot_of, layers, geometry, attention_layer: att })
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
        assert_eq!(count(SlotKind::TokNone), 1);
        assert_eq!(count(SlotKind::Pad), 0);
        // layer 0: one staging head per field, sharing constant key heads (R per key head, R chosen for the
        // fewest parameters: 7 staging heads, 2 memory reads in one layer -> R = 4, 2 key / 8 value heads)
        assert_eq!(a.layers[0].heads.len(), w.protocol.fields.len());
        assert_eq!((a.geometry.key_heads, a.geometry.value_heads), (2, 8));
        assert_eq!(a.layers[0].groups, vec![vec![0, 1, 2, 3], vec![4, 5, 6]]);
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
        let w2 = weave(&isa_api::examples::acc8(), &WeaveOptions { fit: Some(t), attention_layer: false }).unwrap();
        assert_eq!(w2.allocation.slots.iter().filter(|s| s.kind == SlotKind::Pad).count(), 3);
        assert_eq!(w2.config.num_hidden_layers, t.layers);
        let mut bad = t;
        bad.dk = 128;
        let e = w.allocation.geometry.fit(&bad).unwrap_err().to_string();
        assert!(e.contains("linear_key_head_dim 128 must be a power of 4") && e.contains("needs 256"), "{e}");
    }
}
