//! Memory: one lane's addresses, bound check and loads of `SHARED` and `GLOBAL` at `base + A`, and the one write
//! a step to each of them: the store or atomic of lane `BUSY`.

use super::decode::{Decode, Operands};
use super::lane::{Lane, Reads};
use super::shape::Shape;
use crate::face::mem;
use isa_api::{CircuitBuilder, CmpKind, NodeId};

/// One lane's memory operands and loads.
pub(super) struct LaneMem {
    /// In bounds for a memory op: `A < len` (1 bit).
    pub inb: NodeId,
    /// Addresses `base + A` sliced to the shared and global address widths.
    pub saddr: NodeId,
    pub gaddr: NodeId,
    /// Shared and global words at `base + A` (32 bits).
    pub sh: NodeId,
    pub gl: NodeId,
}

/// One lane's bound check, addresses and loads.
pub(super) fn lane_memory(s: &mut CircuitBuilder, shape: &Shape, o: &Operands, r: &Reads) -> LaneMem {
    let a = r.a;
    let inb = s.cmp(CmpKind::Ltu, a, o.len);
    let saddr = {
        let x = s.slice(a, 0, shape.sb);
        s.add(x, o.base_s)
    };
    let gaddr = {
        let x = s.slice(a, 0, shape.gb);
        s.add(x, o.base_g)
    };
    let sh = s.load(mem::SHARED, 32, saddr);
    let gl = s.load(mem::GLOBAL, 32, gaddr);
    LaneMem { inb, saddr, gaddr, sh, gl }
}

/// The writes of `SHARED` and `GLOBAL`: the store or atomic of lane `BUSY` (when active and in bounds).
pub(super) fn memory_writes(s: &mut CircuitBuilder, shape: &Shape, d: &Decode, ls: &[Lane]) {
    let ok: Vec<NodeId> = ls.iter().map(|x| s.and(x.act, x.inb)).collect();
    for (memi, st, at, shared) in [(mem::SHARED, d.o_sts, d.o_atoms, true), (mem::GLOBAL, d.o_stg, d.o_atomg, false)] {
        let aw = if shared { shape.sb } else { shape.gb };
        let mut addr_cases = Vec::new();
        let mut data_cases = Vec::new();
        let mut en_cases = Vec::new();
        for (l, x) in ls.iter().enumerate() {
            let (addr, old) = if shared { (x.saddr, x.sh) } else { (x.gaddr, x.gl) };
            addr_cases.push((x.bsel, addr));
            let sum = s.add(old, x.rb);
            let st_l = s.and(x.bsel, st);
            let at_l = s.and(x.bsel, at);
            data_cases.push((st_l, x.rb));
            data_cases.push((at_l, sum));
            en_cases.push((x.bsel, ok[l]));
        }
        let addr = s.one_hot(aw, &addr_cases);
        let data = s.one_hot(32, &data_cases);
        let lane_ok = s.one_hot(1, &en_cases);
        let op = s.or(st, at);
        let en = s.and(op, lane_ok);
        s.mem_write(memi, addr, data, en);
    }
}
