//! Pass 1b, `prune`: dead-gate elimination. A gate (or a memory read) whose value nothing the model must
//! produce depends on gets no MLP units, no head and no residual slot.
//!
//! Roots: every step field's value and emit bits, the halt bit, the after bits, every memory commit
//! (enable, address, data) and every register's staged next value. Liveness flows backwards through gate
//! inputs and read addresses (nodes are in dependency order, so one reverse sweep suffices). Inputs (the
//! constant, token classes and bits, the NONE flag, staged fields, register bits) are always kept: heads and
//! the embedding define them. A live read keeps all its bits (one head writes them all).

use crate::net::{Commit, FieldOut, Netlist, Read, Sig, Source};

/// The netlist without dead gates and reads, nodes renumbered in the same order.
pub fn prune(net: &Netlist) -> Netlist {
    let n = net.nodes.len();
    let mut live = vec![false; n];
    let mark = |s: &Sig, live: &mut Vec<bool>| live[s.node as usize] = true;
    for o in &net.outputs {
        o.bits.iter().chain([&o.emit]).for_each(|s| mark(s, &mut live));
    }
    net.halt.iter().chain(net.after.iter()).chain(net.commit.iter()).for_each(|s| mark(s, &mut live));
    for c in &net.commits {
        c.addr.iter().chain(c.data.iter()).chain(std::iter::once(&c.enable)).for_each(|s| mark(s, &mut live));
    }
    net.reg_values.iter().flatten().for_each(|s| mark(s, &mut live));
    let mut read_live = vec![false; net.reads.len()];
    for i in (0..n).rev() {
        if !live[i] {
            continue;
        }
        match net.nodes[i] {
            Source::Gate(g) => {
                for t in &net.gates[g as usize].terms {
                    for (m, _) in &t.lin {
                        live[*m as usize] = true;
                    }
                }
            }
            Source::ReadBit { read, .. } if !read_live[read as usize] => {
                read_live[read as usize] = true;
                net.reads[read as usize].addr.iter().for_each(|s| live[s.node as usize] = true);
            }
            _ => {}
        }
    }
    let keep = |i: usize| match net.nodes[i] {
        Source::Gate(_) => live[i],
        Source::ReadBit { read, .. } => read_live[read as usize],
        _ => true,
    };
    // Old node -> new node; old gate/read -> new gate/read.
    let mut map = vec![u32::MAX; n];
    let mut read_map = vec![u32::MAX; net.reads.len()];
    for (r, l) in read_live.iter().enumerate() {
        if *l {
            read_map[r] = read_map.iter().filter(|x| **x != u32::MAX).count() as u32;
        }
    }
    let mut out = Netlist::new(); // node 0: the constant
    map[0] = 0;
    for i in 1..n {
        if !keep(i) {
            continue;
        }
        let src = match net.nodes[i] {
            Source::Gate(g) => {
                let mut gate = net.gates[g as usize].clone();
                for t in gate.terms.iter_mut() {
                    for (m, _) in t.lin.iter_mut() {
                        *m = map[*m as usize];
                        debug_assert_ne!(*m, u32::MAX, "a live gate's input is live");
                    }
                }
                out.gates.push(gate);
                Source::Gate((out.gates.len() - 1) as u32)
            }
            Source::ReadBit { read, bit } => Source::ReadBit { read: read_map[read as usize], bit },
            other => other,
        };
        map[i] = out.add_node(src, net.names[i].clone());
    }
    let sig = |s: &Sig| Sig { node: map[s.node as usize], neg: s.neg };
    let sigs = |v: &[Sig]| v.iter().map(sig).collect::<Vec<_>>();
    for (r, rd) in net.reads.iter().enumerate() {
        if read_live[r] {
            out.reads.push(Read { mem: rd.mem, addr: sigs(&rd.addr), bits: rd.bits.iter().map(|b| map[*b as usize]).collect() });
        }
    }
    out.commits = net.commits.iter().map(|c| Commit { mem: c.mem, enable: sig(&c.enable), addr: sigs(&c.addr), data: sigs(&c.data) }).collect();
    out.reg_values = net.reg_values.iter().map(|v| sigs(v)).collect();
    out.reg_bits = net.reg_bits.iter().map(|v| v.iter().map(|b| map[*b as usize]).collect()).collect();
    out.outputs = net.outputs.iter().map(|o| FieldOut { bits: sigs(&o.bits), emit: sig(&o.emit) }).collect();
    out.halt = net.halt.as_ref().map(sig);
    out.after = sigs(&net.after);
    out.commit = net.commit.as_ref().map(sig);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_gates_and_reads_go_and_live_ones_are_renumbered() {
        let mut n = Netlist::new();
        let a = Sig::of(n.add_node(Source::TokBit(0), "a".into()));
        let b = Sig::of(n.add_node(Source::TokBit(1), "b".into()));
        let dead = n.gate("dead", &[(vec![(a, 1), (b, 1)], -1, 1)], 0).unwrap(); // a OR b: unused
        let rb = n.add_node(Source::ReadBit { read: 0, bit: 0 }, "unused read".into());
        n.reads.push(Read { mem: 0, addr: vec![dead], bits: vec![rb] });
        let live = n.gate("live", &[(vec![(a, 1), (b, 1)], -2, 1)], 0).unwrap(); // a AND b
        n.outputs.push(FieldOut { bits: vec![live.not()], emit: Sig::ONE });
        let p = prune(&n);
        assert_eq!(p.gates.len(), 1);
        assert!(p.reads.is_empty());
        assert_eq!(p.nodes.len(), n.nodes.len() - 2);
        let out = p.outputs[0].bits[0];
        assert!(out.neg);
        assert_eq!(p.names[out.node as usize], "live");
        assert_eq!(p.gates[0].terms[0].lin, vec![(1, 1), (2, 1)], "inputs a, b keep nodes 1 and 2");
        // Same function on every input.
        for bits in 0..4u32 {
            let f = |net: &Netlist, s: Sig| {
                let v = net.eval(&|i, _| (bits >> (i - 1)) & 1 == 1).unwrap();
                crate::net::sig_bit(&v, s)
            };
            assert_eq!(f(&p, out), f(&n, n.outputs[0].bits[0]));
        }
    }
}
