//! The division micro-code (Unpriv §7.2): DIV, DIVU, REM and REMU as radix-16 restoring division on magnitudes,
//! ten steps each. State: the register `DIV_Q` (which costs no trace token while it keeps its value) and the
//! scratch rows D (|d|) and R (the partial remainder) of `X`.
//!
//! - `BUSY = 0`: `DIV_Q = |rs1|`, row D = `|rs2|`.
//! - `BUSY = 1..=8`, iteration `i = BUSY - 1` on 4-bit group `g = 7 - i`: `X = 16·R + DIV_Q[g]` (R = 0 at
//!   the first); the quotient digit `q` is the number of `j` in 1..16 with `X >= j·d`, all fifteen `X - j·d`
//!   computed side by side as one weighted sum each ([`isa_api::Op::Sum`]); row R = `X - q·d` (selected, as the
//!   differences are at hand) and `q` replaces the dividend digit it consumed, `DIV_Q[g]`. After the last,
//!   `DIV_Q` is the quotient.
//! - `BUSY = 9`: rd = the quotient or remainder with its sign; the instruction retires.
//!
//! Division by zero gives `Q = 2^32 - 1` and `R = n` straight out of the iteration (Table 7.1; DIV's quotient is
//! not negated when the divisor is 0); signed overflow (`-2^31 / -1`) gives `Q = 2^31`, not negated, and `R = 0`.

use super::decode::Decode;
use super::fetch::Fetch;
use crate::face::{BUSY_BITS, reg};
use isa_api::{CircuitBuilder, NodeId};

/// Quotient bits of one division iteration (radix 2^DIV_RADIX_BITS).
const DIV_RADIX_BITS: u32 = 4;
/// Division iterations: 32 / [`DIV_RADIX_BITS`], at `BUSY = 1 ..= DIV_ITERS`; `BUSY = DIV_ITERS + 1` writes rd.
const DIV_ITERS: u64 = 32 / DIV_RADIX_BITS as u64;

/// What [`divider`] hands the later sections (node ids of its signals).
#[derive(Clone)]
pub(super) struct Divider {
    /// `BUSY = 1` (the first iteration; also the second step of the syscalls' and crossing accesses' loops).
    pub(super) c1: NodeId,
    /// The first step of a division (`BUSY = 0`): it writes |divisor| to row D.
    pub(super) d_c0: NodeId,
    /// The last step of a division (`BUSY = 9`): it writes rd.
    pub(super) d_fin: NodeId,
    /// A division step that holds pc (all but the last).
    pub(super) d_hold: NodeId,
    /// An iteration step (`BUSY = 1..=8`): it writes the remainder row R.
    pub(super) d_iter: NodeId,
    /// `BUSY + 1`.
    pub(super) div_busy_next: NodeId,
    /// The result for rd: the quotient or remainder with its sign.
    pub(super) div_res: NodeId,
    /// |rs2| (to row D).
    pub(super) mag_d: NodeId,
    /// The next partial remainder (to row R).
    pub(super) r_next: NodeId,
}

/// What [`iteration`] hands back: `BUSY = 1`, the next partial remainder and the next `DIV_Q`.
struct Iteration {
    c1: NodeId,
    r_next: NodeId,
    q_next: NodeId,
}

/// The division micro-code (see the module docs): operand magnitudes, one radix-16 iteration, the signed
/// result, the step conditions and the next `DIV_Q`.
pub(super) fn divider(s: &mut CircuitBuilder, fetch: &Fetch, decode: &Decode) -> Divider {
    let Fetch { a, busy, busy0, bv, f3, s_d, s_r, .. } = fetch.clone();
    let Decode { is_div, .. } = decode.clone();
    let f3b0 = s.bit(f3, 0);
    let f3b1 = s.bit(f3, 1);
    let div_signed = s.not(f3b0); // DIV, REM
    let div_rem = f3b1; // REM, REMU
    let a31 = s.bit(a, 31);
    let b31 = s.bit(bv, 31);
    let sn = s.and(div_signed, a31);
    let sd = s.and(div_signed, b31);
    let mag_n = {
        let na = s.neg(a);
        s.select(sn, na, a)
    };
    let mag_d = {
        let nb = s.neg(bv);
        s.select(sd, nb, bv)
    };
    let dq = s.reg(reg::DIV_Q, 32);
    let (dd, dr) = (s_d, s_r);
    let Iteration { c1, r_next, q_next } = iteration(s, busy, dq, dd, dr);
    let div_res = {
        let mag = s.select(div_rem, dr, dq);
        let d_nz = s.ne_const(dd, 0);
        let qs = s.xor(sn, sd);
        let qneg = s.and(qs, d_nz);
        let neg = s.select(div_rem, sn, qneg);
        let nm = s.neg(mag);
        s.select(neg, nm, mag)
    };
    let in_iter = {
        let hi = s.ltu_const(busy, DIV_ITERS + 1);
        let nz = s.not(busy0);
        s.and(hi, nz)
    };
    let d_c0 = s.and(is_div, busy0);
    let d_iter = s.and(is_div, in_iter);
    let d_fin = {
        let last = s.eq_const(busy, DIV_ITERS + 1);
        s.and(is_div, last)
    };
    let d_hold = s.or(d_c0, d_iter);
    let div_busy_next = {
        let one = s.konst_masked(BUSY_BITS, 1);
        s.add(busy, one)
    };
    let q_reg = {
        let q = s.select(d_iter, q_next, dq);
        s.select(d_c0, mag_n, q)
    };
    s.set_next(reg::DIV_Q, q_reg);
    Divider { c1, d_c0, d_fin, d_hold, d_iter, div_busy_next, div_res, mag_d, r_next }
}

/// One radix-16 iteration at `BUSY = 1..=8` on the dividend digits in `dq` (`DIV_Q`), the divisor `dd` (row D)
/// and the partial remainder `dr` (row R): the fifteen differences, the digit, the next remainder and the next
/// `DIV_Q` with the digit in place of the dividend digit it consumed.
fn iteration(s: &mut CircuitBuilder, busy: NodeId, dq: NodeId, dd: NodeId, dr: NodeId) -> Iteration {
    let c1 = s.eq_const(busy, 1);
    let k = DIV_RADIX_BITS;
    let groups = 32 / k;
    // iteration i (BUSY = i + 1) consumes dividend group groups-1-i and decides quotient group groups-1-i
    let iter_at: Vec<NodeId> = (0..groups as u64).map(|i| s.eq_const(busy, i + 1)).collect();
    let group = |s: &mut CircuitBuilder, x: NodeId, g: u32| s.slice(x, g * k, k);
    let nb = {
        let cases: Vec<(NodeId, NodeId)> =
            (0..groups).map(|i| (iter_at[i as usize], group(s, dq, groups - 1 - i))).collect();
        s.and_or(k, &cases)
    };
    let z32 = s.konst_masked(32, 0);
    let r_in = s.select(c1, z32, dr);
    let x = s.concat(&[nb, r_in]); // 16·R + next digit of n, 36 bits
    let wide = 32 + k + 1;
    let diffs: Vec<NodeId> = (1..1u64 << k)
        .map(|j| {
            let mut terms = vec![isa_api::SumTerm { node: x, shift: 0, neg: false }];
            terms.extend(
                (0..k).filter(|b| (j >> b) & 1 == 1).map(|b| isa_api::SumTerm { node: dd, shift: b, neg: true }),
            );
            s.sum(wide, &terms, 0)
        })
        .collect();
    // ge[j - 1]: X >= j·d (the difference's sign bit is clear); a thermometer code in j.
    let ge: Vec<NodeId> = diffs
        .iter()
        .map(|d| {
            let sign = s.bit(*d, wide - 1);
            s.not(sign)
        })
        .collect();
    let n = ge.len();
    let mut onehot = vec![s.not(ge[0])];
    for j in 1..n {
        let nxt = s.not(ge[j]);
        onehot.push(s.and(ge[j - 1], nxt));
    }
    onehot.push(ge[n - 1]);
    let r_next = {
        let mut cases = vec![(onehot[0], s.slice(x, 0, 32))];
        for j in 1..=n {
            cases.push((onehot[j], s.slice(diffs[j - 1], 0, 32)));
        }
        s.and_or(32, &cases)
    };
    let q_digit = {
        let cases: Vec<(NodeId, NodeId)> = (1..=n).map(|j| (onehot[j], s.konst_masked(k, j as u64))).collect();
        s.and_or(k, &cases)
    };
    let q_next = {
        let parts: Vec<NodeId> = (0..groups)
            .map(|g| {
                let old = group(s, dq, g);
                s.select(iter_at[(groups - 1 - g) as usize], q_digit, old)
            })
            .collect();
        s.concat(&parts)
    };
    Iteration { c1, r_next, q_next }
}
