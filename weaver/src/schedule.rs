//! Pass 2, `schedule`: every netlist node gets the sublayer that produces it (as soon as possible).
//!
//! Sublayer `s = 2L` is layer L's token mixer (DeltaNet), `s = 2L + 1` its MLP. A value produced by sublayer
//! `s` is in the residual from time `s + 1`; a sublayer `s` reads values ready at time `<= s`.
//! - embedding slots (constant, token class, token bits): ready at 0;
//! - staged fields: layer 0's staging heads (s = 0), ready at 1;
//! - committed registers: layer 1's register heads (s = 2), ready at 3 (their inputs are staged);
//! - a memory read: the first mixer (even s >= 2) whose input holds its address and the memory's commit
//!   signals (every head copy applies the writes);
//! - a gate: the first MLP (odd s) whose input holds all its inputs.

use crate::net::{Netlist, Sig, Source};

/// The schedule: ready time per node, sublayer per gate and per read, number of layers.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub ready: Vec<u32>,
    pub gate_sublayer: Vec<u32>,
    pub read_sublayer: Vec<u32>,
    pub num_layers: usize,
}

fn first_at_least(t: u32, parity: u32) -> u32 {
    if t % 2 == parity { t } else { t + 1 }
}

/// Schedule a netlist (nodes are in dependency order by construction).
pub fn schedule(net: &Netlist) -> Schedule {
    let mut ready = vec![0u32; net.nodes.len()];
    let mut gate_sublayer = vec![0u32; net.gates.len()];
    let mut read_sublayer = vec![0u32; net.reads.len()];
    let rs = |ready: &Vec<u32>, s: &Sig| ready[s.node as usize];
    for (i, src) in net.nodes.iter().enumerate() {
        ready[i] = match *src {
            Source::Const | Source::TokClass(_) | Source::TokBit(_) | Source::TokNone => 0,
            Source::Staged { .. } => 1,
            Source::RegBit { .. } => 3,
            Source::ReadBit { read, bit } => {
                if bit == 0 {
                    let r = &net.reads[read as usize];
                    let c = net.commits.iter().find(|c| c.mem == r.mem).expect("every memory has a commit");
                    let t = r.addr.iter().chain(c.addr.iter()).chain(c.data.iter()).chain(std::iter::once(&c.enable)).map(|s| rs(&ready, s)).max().unwrap_or(0);
                    read_sublayer[read as usize] = first_at_least(t.max(2), 0);
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
    let outs = net.outputs.iter().flat_map(|o| o.bits.iter().chain(o.present.iter())).chain(net.halt.iter()).chain(net.phases.iter());
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
    Schedule { ready, gate_sublayer, read_sublayer, num_layers }
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
        n.outputs.push(crate::net::FieldOut { bits: vec![g2, g0], present: None });
        let s = schedule(&n);
        assert_eq!(s.gate_sublayer, vec![3, 5, 1]);
        assert_eq!(s.read_sublayer, vec![4]);
        assert_eq!(s.ready[g2.node as usize], 6);
        assert_eq!(s.num_layers, 3);
    }
}
