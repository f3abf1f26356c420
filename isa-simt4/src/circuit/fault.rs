//! Faults and halting: an illegal opcode, or an active lane out of bounds in a load (all lanes at once) or in a
//! store or atomic (at its micro-step); the fault word on the `FAULT` port, `STOP` set, and the halt bit (`STOP`
//! or `HALT`).

use super::decode::Decode;
use super::fetch::Fetch;
use super::lane::Lane;
use super::shape::Shape;
use crate::face::{port, reg};
use isa_api::{CircuitBuilder, NodeId};

/// The fault terms and decisions the later sections read.
pub(super) struct Faults {
    /// Per lane (1 bit): the lane is active and out of bounds in a load, or in a store or atomic at its micro-step.
    pub terms: Vec<NodeId>,
    /// Their negations.
    pub nterms: Vec<NodeId>,
    /// A fault this step (1 bit): illegal, or any term.
    pub fault: NodeId,
    /// A load with no lane out of bounds (1 bit).
    pub ld_ok: NodeId,
}

/// The faults of the step: the fault word on `FAULT`, `STOP`'s next value and the halt bit.
pub(super) fn faults(s: &mut CircuitBuilder, shape: &Shape, f: &Fetch, d: &Decode, ls: &[Lane]) -> Faults {
    let lanes = shape.lanes;
    // Lane l faults (term l) when it is active and out of bounds in a load, or in a store or atomic at its
    // micro-step; a load's lowest such lane is the one reported. The terms feed every decision in one flat
    // OR or AND (the fault, the held PC, BUSY, the loads' writes), which keeps the path shallow.
    let terms: Vec<NodeId> = ls
        .iter()
        .map(|x| {
            let sel = {
                let at = s.and(d.ser, x.bsel);
                s.or(d.ld, at)
            };
            let oob = s.not(x.inb);
            s.all(&[sel, x.act, oob])
        })
        .collect();
    let nterms: Vec<NodeId> = terms.iter().map(|t| s.not(*t)).collect();
    let fsel: Vec<NodeId> = (0..lanes as usize)
        .map(|l| {
            let mut first = vec![terms[l]];
            first.extend(&nterms[..l]);
            s.all(&first)
        })
        .collect();
    let bounds = s.any(&terms);
    let fault = {
        let mut v = vec![d.illegal];
        v.extend(&terms);
        s.any(&v)
    };
    let ld_ok = {
        let mut v = vec![d.ld];
        v.extend(&nterms);
        s.all(&v)
    };
    let fault_lane = {
        let cases: Vec<(NodeId, NodeId)> = (0..lanes as usize).map(|l| (fsel[l], s.konst(5, l as u64))).collect();
        s.one_hot(5, &cases)
    };
    let fault_index = {
        let mut cases: Vec<(NodeId, NodeId)> = (0..lanes as usize).map(|l| (fsel[l], ls[l].a)).collect();
        let op32 = s.zext(d.opc, 32);
        cases.push((d.illegal, op32));
        s.one_hot(32, &cases)
    };
    let warp5 = if shape.wb < 5 { s.zext(f.warp, 5) } else { f.warp };
    let z8 = s.konst(8, 0);
    let fault_word = s.concat(&[f.pc, fault_lane, warp5, bounds, d.illegal, z8, fault_index]);
    s.output(port::FAULT, fault_word, fault);
    s.set_next(reg::STOP, fault);
    let halt = s.or(f.stop, d.o_halt);
    s.halt(halt);
    Faults { terms, nterms, fault, ld_ok }
}
