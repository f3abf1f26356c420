//! Pass 5, `report`: the figures of a woven machine and a readable allocation dump (which residual slots,
//! MLP units and DeltaNet heads hold what).

use crate::allocate::{Allocation, KeySrc, Unit};
use crate::net::{Netlist, Source};
use serde::{Deserialize, Serialize};

/// Figures of one woven machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub machine: String,
    pub layers: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub deltanet_key_heads: usize,
    pub deltanet_value_heads: usize,
    pub key_head_dim: usize,
    pub value_head_dim: usize,
    pub vocab_size: usize,
    pub parameters: usize,
    pub nonzero_weights: usize,
    /// Most trace tokens of one machine step (every field + STEP; a disabled write or port is one NONE).
    pub tokens_per_step: usize,
    pub gates: usize,
    pub memory_reads: usize,
    pub units_per_layer: Vec<usize>,
    pub heads_per_layer: Vec<usize>,
    pub weave_ms: f64,
}

impl Report {
    /// A short human-readable summary.
    pub fn render(&self) -> String {
        format!(
            "machine {}: {} layers, hidden {}, intermediate {}, DeltaNet {} key / {} value heads (d_k {}, d_v {}), vocab {}\n\
             parameters {}, nonzero weights {} ({:.3}%), at most {} trace tokens per step, {} gates, {} memory reads\n\
             MLP units per layer {:?}, heads per layer {:?}, woven in {:.1} ms",
            self.machine,
            self.layers,
            self.hidden_size,
            self.intermediate_size,
            self.deltanet_key_heads,
            self.deltanet_value_heads,
            self.key_head_dim,
            self.value_head_dim,
            self.vocab_size,
            self.parameters,
            self.nonzero_weights,
            100.0 * self.nonzero_weights as f64 / self.parameters.max(1) as f64,
            self.tokens_per_step,
            self.gates,
            self.memory_reads,
            self.units_per_layer,
            self.heads_per_layer,
            self.weave_ms
        )
    }
}

/// The allocation dump: slot -> name, per layer unit ranges -> gate, head -> what it holds.
pub fn allocation_dump(net: &Netlist, a: &Allocation) -> String {
    let mut s = String::new();
    s.push_str("# residual slots\n");
    for (i, sl) in a.slots.iter().enumerate() {
        s.push_str(&format!("slot {i:5} {:?} {}\n", sl.kind, sl.name));
    }
    let mut gate_node = vec![0usize; net.gates.len()];
    for (i, src) in net.nodes.iter().enumerate() {
        if let Source::Gate(g) = src {
            gate_node[*g as usize] = i;
        }
    }
    for (l, la) in a.layers.iter().enumerate() {
        s.push_str(&format!("# layer {l}: {} MLP units ({} terms or offsets shared with another gate's unit), {} DeltaNet heads\n", la.units.len(), la.shared.len(), la.heads.len()));
        for (h, hd) in la.heads.iter().enumerate() {
            let k = match &hd.key {
                KeySrc::Const => "const key".to_string(),
                KeySrc::Addr { bits, block } => format!("address key ({} bits, block {block})", bits.len()),
            };
            let outs: Vec<String> = hd.out.iter().map(|n| a.slot_of[*n as usize].to_string()).collect();
            s.push_str(&format!("  head {h:3} {} [{k}; {} bits -> slots {}]\n", hd.name, hd.value.len(), outs.join(",")));
        }
        let mut u = 0;
        while u < la.units.len() {
            let unit = la.units[u];
            let mut e = u;
            while e < la.units.len() && unit.gate().is_some() && la.units[e].gate() == unit.gate() {
                e += 1;
            }
            let node = match unit {
                Unit::Reset { node } => node as usize,
                _ => gate_node[unit.gate().expect("not a reset") as usize],
            };
            let what = if matches!(unit, Unit::Reset { .. }) { "reset of " } else { "" };
            s.push_str(&format!("  units {u:5}..{:5} -> slot {:5} {what}{}\n", e.max(u + 1), a.slot_of[node], net.names[node]));
            u = e.max(u + 1);
        }
    }
    s
}
