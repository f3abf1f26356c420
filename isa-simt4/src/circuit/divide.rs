//! Division (`DIV DIVU REM REMU`), micro-coded over `BUSY = 0 ..= 17` in every active lane at once: the
//! datapath of one radix-4 restoring step ([`div_datapath`]) and one lane's division registers `DQ`, `DR` and
//! its result (the quotient or remainder, negated per the signs) for the register write at step 17.

use super::alu::Alu;
use super::decode::Decode;
use super::lane::Reads;
use crate::face::reg;
use isa_api::{CircuitBuilder, CmpKind, NodeId};

/// One lane's division datapath ([`div_datapath`]).
pub struct DivPath {
    /// `|a|` (32 bits): `DQ` at step 0.
    pub a_abs: NodeId,
    /// `DQ` after an iteration step (32 bits).
    pub q_iter: NodeId,
    /// `DR` after an iteration step (32 bits).
    pub r_iter: NodeId,
}

/// One lane's division datapath (see [`crate::isa`]): from the operands `a`, `bv` (32 bits), `sdiv` (1 bit: a
/// signed op, operands taken as magnitudes) and the lane's `DQ`, `DR`, the step-0 value `|a|` and one radix-4
/// iteration: `t = DR * 4 + DQ >> 30`, the digit `q` from `t >= d, 2d, 3d` with `d = |b|` (`3d` one weighted
/// sum per sign of `b`), `DR' = t - q * d`, `DQ' = DQ << 2 | q`; the four candidate remainders are selected
/// one-hot (the compares are monotone: `t >= 3d` implies `t >= 2d` implies `t >= d`).
pub fn div_datapath(s: &mut CircuitBuilder, a: NodeId, bv: NodeId, sdiv: NodeId, dq: NodeId, dr: NodeId) -> DivPath {
    let t = |node, shift, neg| isa_api::SumTerm { node, shift, neg };
    let a_sign = s.bit(a, 31);
    // step 0: magnitudes (signed ops: the absolute value), and 3 * |b| as one weighted sum per sign
    let b_sign = s.bit(bv, 31);
    let a_negm = s.and(sdiv, a_sign);
    let b_negm = s.and(sdiv, b_sign);
    let a_abs = {
        let n = s.neg(a);
        s.select(a_negm, n, a)
    };
    let b_abs = {
        let n = s.neg(bv);
        s.select(b_negm, n, bv)
    };
    let b3_abs = {
        let p3 = s.sum(34, &[t(bv, 0, false), t(bv, 1, false)], 0);
        let n3 = s.sum(34, &[t(bv, 0, true), t(bv, 1, true)], 3 << 32);
        s.select(b_negm, n3, p3)
    };
    // steps 1..=16: t = DR * 4 + DQ >> 30; digit from t >= d, 2d, 3d; DR = t - digit * d
    let tt = {
        let top = s.slice(dq, 30, 2);
        s.concat(&[top, dr])
    };
    let z1 = s.konst(1, 0);
    let z2 = s.konst(2, 0);
    let dd1 = s.concat(&[b_abs, z2]);
    let dd2 = s.concat(&[z1, b_abs, z1]);
    let c1 = s.cmp(CmpKind::Leu, dd1, tt);
    let c2 = s.cmp(CmpKind::Leu, dd2, tt);
    let c3 = s.cmp(CmpKind::Leu, b3_abs, tt);
    let n1 = s.not(c1);
    let n2 = s.not(c2);
    let n3 = s.not(c3);
    let s2 = s.and(c2, n3);
    let s1 = s.and(c1, n2);
    let r0 = s.slice(tt, 0, 32);
    let r1 = s.sum(32, &[t(tt, 0, false), t(b_abs, 0, true)], 0);
    let r2 = s.sum(32, &[t(tt, 0, false), t(b_abs, 1, true)], 0);
    let r3 = s.sum(32, &[t(tt, 0, false), t(b3_abs, 0, true)], 0);
    let r_iter = s.one_hot(32, &[(n1, r0), (s1, r1), (s2, r2), (c3, r3)]);
    let q_iter = {
        let d0 = s.or(c3, s1);
        let low = s.slice(dq, 0, 30);
        s.concat(&[d0, c2, low])
    };
    DivPath { a_abs, q_iter, r_iter }
}

/// One lane's division result for the register write (step 17): one-hot cases, selector then value (32 bits).
pub(super) struct LaneDiv {
    /// `DIV` with a negative quotient: `-DQ`.
    pub q_negs: NodeId,
    pub dq_neg: NodeId,
    /// `DIV` or `DIVU` otherwise: `DQ`.
    pub q_pos: NodeId,
    pub dq: NodeId,
    /// `REM` with `a < 0`: `-DR`.
    pub r_negs: NodeId,
    pub dr_neg: NodeId,
    /// `REM` or `REMU` otherwise: `DR`.
    pub r_pos: NodeId,
    pub dr: NodeId,
}

/// Lane `l`'s division (see the module doc of [`crate::circuit`]): its registers `DQ`, `DR` and their next
/// values (step 0 loads, 1..=16 iterate, else held, and held in inactive lanes), and its result.
pub(super) fn lane_division(s: &mut CircuitBuilder, d: &Decode, r: &Reads, x: &Alu, l: u32) -> LaneDiv {
    let (a, bv) = (r.a, r.bv);
    let dq = s.reg(reg::div_q(l), 32);
    let dr = s.reg(reg::div_r(l), 32);
    let b_sign = s.bit(bv, 31);
    let DivPath { a_abs, q_iter, r_iter } = div_datapath(s, a, bv, d.sdiv, dq, dr);
    let en = s.and(d.div, r.act);
    let e_first = s.and(en, d.step.first);
    let e_mid = s.and(en, d.step.mid);
    let keep = {
        let ch = s.or(e_first, e_mid);
        s.not(ch)
    };
    let dq_next = s.one_hot(32, &[(e_first, a_abs), (e_mid, q_iter), (keep, dq)]);
    let dr_next = s.one_hot(32, &[(e_mid, r_iter), (keep, dr)]);
    s.set_next(reg::div_q(l), dq_next);
    s.set_next(reg::div_r(l), dr_next);
    // step 17: rd = the quotient or remainder, negated per the signs (DIV: a, b of different signs and
    // b != 0; REM: a < 0)
    let b_nz = s.ne_const(bv, 0);
    let q_negs = {
        let signs = s.xor(x.a_sign, b_sign);
        s.all(&[d.o_div, signs, b_nz])
    };
    let r_negs = s.and(d.o_rem, x.a_sign);
    let q_pos = {
        let nq = s.not(q_negs);
        s.and(d.o_q, nq)
    };
    let r_pos = {
        let nr = s.not(r_negs);
        s.and(d.o_r, nr)
    };
    let dq_neg = s.neg(dq);
    let dr_neg = s.neg(dr);
    LaneDiv { q_negs, dq_neg, q_pos, dq, r_negs, dr_neg, r_pos, dr }
}
