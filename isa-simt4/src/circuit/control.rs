//! Control: the micro-step register `BUSY` (stores and atomics over the lanes, divisions over their steps), the
//! barrier `BAR` (save the `PC`, switch warp), and the next `PC` (held, jump, barrier, or the next instruction).

use super::decode::{Decode, Operands};
use super::fault::Faults;
use super::fetch::Fetch;
use super::lane::Lane;
use super::shape::Shape;
use crate::face::{mem, reg};
use crate::isa::{BUSY_BITS, PC_BITS};
use isa_api::{CircuitBuilder, NodeId};

/// What the `PC` reads of the micro-step.
pub(super) struct Busy {
    /// A store or atomic before its last lane (1 bit).
    pub more: NodeId,
}

/// `BUSY`'s next value: advanced during a store or atomic (while no lane faults) and a division, reset to 0
/// after the last micro-step, held by a fault.
pub(super) fn busy(s: &mut CircuitBuilder, shape: &Shape, f: &Fetch, d: &Decode, faults: &Faults) -> Busy {
    let busy = f.busy;
    let last = s.eq_const(busy, u64::from(shape.lanes - 1));
    let not_last = s.not(last);
    let more = s.and(d.ser, not_last);
    let adv = {
        let mut v = vec![more];
        v.extend(&faults.nterms);
        let st = s.all(&v);
        s.or(st, d.step.more)
    };
    let one = s.konst(BUSY_BITS, 1);
    let busy1 = s.add(busy, one);
    let busy_next = s.one_hot(BUSY_BITS, &[(adv, busy1), (faults.fault, busy)]);
    s.set_next(reg::BUSY, busy_next);
    Busy { more }
}

/// What the `PC` reads of the barrier.
pub(super) struct Bar {
    /// `PC + 1` (12 bits).
    pub pc1: NodeId,
    /// A `BAR` that switches warps (more than one warp named, 1 bit).
    pub bar_act: NodeId,
    /// The `PC` after the barrier: the saved `PC` of the next warp (12 bits).
    pub pc_bar: NodeId,
}

/// `BAR`: `WPC[w] = PC + 1`, `WARP = (w + 1) mod min(n, warps)`, `PC = WPC[WARP]`.
pub(super) fn bar(s: &mut CircuitBuilder, shape: &Shape, f: &Fetch, d: &Decode, o: &Operands) -> Bar {
    let (lw, wb) = (shape.lw, shape.wb);
    let one12 = s.konst(PC_BITS, 1);
    let pc1 = s.add(f.pc, one12);
    let bar_act = {
        let hi = s.slice(d.imm, 1, 31);
        let gt1 = s.ne_const(hi, 0);
        s.and(d.o_bar, gt1)
    };
    let (next_w, pc_bar) = if lw == 0 {
        (s.konst(wb, 0), pc1)
    } else {
        let w = o.warp_lo.expect("lw > 0");
        let big = {
            let hi = s.slice(d.imm, lw, 32 - lw);
            s.ne_const(hi, 0)
        };
        let lo = s.slice(d.imm, 0, lw);
        let idx = s.concat(&[w, lo, big]);
        let nw = shape.warps as u64;
        let table: Vec<u64> = (0..(1u64 << (2 * lw + 1)))
            .map(|i| {
                let w = i & (nw - 1);
                let lo = (i >> lw) & (nw - 1);
                let m = if i >> (2 * lw) == 1 { nw } else { lo };
                if m == 0 { 0 } else { (w + 1) % m }
            })
            .collect();
        let next_w = s.lookup(wb, table, idx);
        (next_w, s.load(mem::WPC, PC_BITS, next_w))
    };
    s.mem_write(mem::WPC, f.warp, pc1, bar_act);
    let warp_next = s.select(bar_act, next_w, f.warp);
    s.set_next(reg::WARP, warp_next);
    Bar { pc1, bar_act, pc_bar }
}

/// The next `PC`: held (a fault, or a micro-step before the last), a taken jump, the barrier's, or `PC + 1`.
pub(super) fn pc(s: &mut CircuitBuilder, f: &Fetch, d: &Decode, faults: &Faults, busy: &Busy, bar: &Bar, ls: &[Lane]) {
    let (more, d_more, bar_act) = (busy.more, d.step.more, bar.bar_act);
    let act_all: Vec<NodeId> = ls.iter().map(|x| x.act).collect();
    let any_act = s.any(&act_all);
    let none_act = s.not(any_act);
    let jt = {
        let a = s.and(d.o_jnone, none_act);
        let b2 = s.and(d.o_jany, any_act);
        s.any(&[d.o_jmp, a, b2])
    };
    // hold: a fault, or a store's, atomic's or division's micro-step before the last (exclusive with jumps
    // and BAR)
    let hold = {
        let mut v = vec![d.illegal, more, d_more];
        v.extend(&faults.terms);
        s.any(&v)
    };
    let plain = {
        let mut v = vec![d.illegal, more, d_more, jt, bar_act];
        v.extend(&faults.terms);
        let special = s.any(&v);
        s.not(special)
    };
    let pc_next = s.one_hot(PC_BITS, &[(hold, f.pc), (jt, d.imm12), (bar_act, bar.pc_bar), (plain, bar.pc1)]);
    s.set_next(reg::PC, pc_next);
}
