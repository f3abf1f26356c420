//! Decode: one signal per instruction (the nine `8XYN` ALU operations in one vector), whether the opcode is
//! legal, and the gate that lets an effect happen only in a running step.

use super::fetch::Fetch;
use super::state::State;
use isa_api::{CircuitBuilder, NodeId};

/// The instruction signals, each 1 bit.
pub struct Decode {
    /// `00E0`.
    pub cls: NodeId,
    /// `00EE`.
    pub ret: NodeId,
    /// `1NNN`.
    pub jp: NodeId,
    /// `2NNN`.
    pub call: NodeId,
    /// `3XNN`.
    pub se: NodeId,
    /// `4XNN`.
    pub sne: NodeId,
    /// N = 0.
    pub n0: NodeId,
    /// `5XY0`.
    pub sexy: NodeId,
    /// `6XNN`.
    pub ld: NodeId,
    /// `7XNN`.
    pub addk: NodeId,
    /// `8XY0` .. `8XY7`, `8XYE`, in that order.
    pub alu: Vec<NodeId>,
    /// `9XY0`.
    pub snexy: NodeId,
    /// `ANNN`.
    pub ldi: NodeId,
    /// `BNNN`.
    pub jpv0: NodeId,
    /// `CXNN`.
    pub rnd: NodeId,
    /// `DXYN`.
    pub drw: NodeId,
    /// `EX9E`.
    pub skp: NodeId,
    /// `EXA1`.
    pub sknp: NodeId,
    /// `FX07`.
    pub f07: NodeId,
    /// `FX0A`.
    pub f0a: NodeId,
    /// `FX15`.
    pub f15: NodeId,
    /// `FX18`.
    pub f18: NodeId,
    /// `FX1E`.
    pub f1e: NodeId,
    /// `FX29`.
    pub f29: NodeId,
    /// `FX33`.
    pub f33: NodeId,
    /// `FX55`.
    pub f55: NodeId,
    /// `FX65`.
    pub f65: NodeId,
    /// The machine runs: `STOP` is 0.
    pub nstop: NodeId,
    /// An illegal opcode in a running step: a fault.
    pub illegal: NodeId,
}

impl Decode {
    /// `c` in a running step: effects happen only in a legal, running step.
    pub fn running(&self, s: &mut CircuitBuilder, c: NodeId) -> NodeId {
        s.all(&[c, self.nstop])
    }
}

/// Decode the opcode.
pub fn decode(s: &mut CircuitBuilder, st: &State, f: &Fetch) -> Decode {
    let (top, n, lo) = (f.top, f.n, f.lo);
    let t = |s: &mut CircuitBuilder, v: u64| s.eq_const(top, v);
    let cls = s.eq_const(f.op, 0x00E0);
    let ret = s.eq_const(f.op, 0x00EE);
    let jp = t(s, 1);
    let call = t(s, 2);
    let se = t(s, 3);
    let sne = t(s, 4);
    let n0 = s.eq_const(n, 0);
    let t5 = t(s, 5);
    let sexy = s.and(t5, n0);
    let ld = t(s, 6);
    let addk = t(s, 7);
    let t8 = t(s, 8);
    let alu: Vec<NodeId> = [0u64, 1, 2, 3, 4, 5, 6, 7, 0xE]
        .iter()
        .map(|k| {
            let e = s.eq_const(n, *k);
            s.and(t8, e)
        })
        .collect();
    let t9 = t(s, 9);
    let snexy = s.and(t9, n0);
    let ldi = t(s, 0xA);
    let jpv0 = t(s, 0xB);
    let rnd = t(s, 0xC);
    let drw = t(s, 0xD);
    let te = t(s, 0xE);
    let tf = t(s, 0xF);
    let f = |s: &mut CircuitBuilder, top_is: NodeId, v: u64| {
        let e = s.eq_const(lo, v);
        s.and(top_is, e)
    };
    let skp = f(s, te, 0x9E);
    let sknp = f(s, te, 0xA1);
    let f07 = f(s, tf, 0x07);
    let f0a = f(s, tf, 0x0A);
    let f15 = f(s, tf, 0x15);
    let f18 = f(s, tf, 0x18);
    let f1e = f(s, tf, 0x1E);
    let f29 = f(s, tf, 0x29);
    let f33 = f(s, tf, 0x33);
    let f55 = f(s, tf, 0x55);
    let f65 = f(s, tf, 0x65);
    let mut legal_sigs = vec![cls, ret, jp, call, se, sne, sexy, ld, addk, snexy, ldi, jpv0, rnd, drw, skp, sknp, f07, f0a, f15, f18, f1e, f29, f33, f55, f65];
    legal_sigs.extend(&alu);
    let legal = s.any(&legal_sigs);
    let nstop = s.not(st.stop);
    let illegal = {
        let nl = s.not(legal);
        s.and(nl, nstop)
    };
    Decode {
        cls, ret, jp, call, se, sne, n0, sexy, ld, addk, alu, snexy, ldi, jpv0, rnd, drw, skp, sknp,
        f07, f0a, f15, f18, f1e, f29, f33, f55, f65, nstop, illegal,
    }
}
