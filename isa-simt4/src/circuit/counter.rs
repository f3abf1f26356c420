//! One lane's activity counter (the low byte of `r31`): its next value under `IF`, `ELSE`, `ENDIF`, `BRK`,
//! `CRESET`, and whether the counter word changes (counter ops write `r31` only then).

use super::alu::Alu;
use super::decode::{Decode, Operands};
use super::lane::Reads;
use isa_api::{CircuitBuilder, CmpKind, NodeId};

/// One lane's counter update.
pub(super) struct Counter {
    /// The next counter word (the new counter byte, zero-extended to 32 bits).
    pub c_new32: NodeId,
    /// The counter word changes (1 bit).
    pub changed: NodeId,
}

/// The counter ops of one lane from its counter `r.c`, `r.cw` and ALU values `x`.
pub(super) fn counter(s: &mut CircuitBuilder, d: &Decode, o: &Operands, r: &Reads, x: &Alu) -> Counter {
    let (c, one8, zero8) = (r.c, o.one8, o.zero8);
    let c0 = s.eq_const(c, 0);
    let c1 = s.eq_const(c, 1);
    let cp1 = s.add(c, one8);
    let cm1 = s.sub(c, one8);
    let if_v = {
        let cond = s.or(x.a_nz, o.imm0);
        let ncond = s.not(cond);
        let n8 = s.zext(ncond, 8);
        s.select(c0, n8, cp1)
    };
    let else_v = {
        let e = s.select(c1, zero8, c);
        s.select(c0, one8, e)
    };
    let endif_v = s.select(c0, zero8, cm1);
    let brk_v = {
        let park = s.and(c0, x.a_z);
        s.select(park, o.imm8, c)
    };
    let creset_v = {
        let lt = s.cmp(CmpKind::Ltu, x.tid32, d.imm);
        let off = s.not(lt);
        s.zext(off, 8)
    };
    let c_new = s.one_hot(
        8,
        &[(d.o_if, if_v), (d.o_else, else_v), (d.o_endif, endif_v), (d.o_brk, brk_v), (d.o_creset, creset_v)],
    );
    let changed = {
        let ne = s.cmp(CmpKind::Ne, c_new, c);
        let hi = s.slice(r.cw, 8, 24);
        let hi_nz = s.ne_const(hi, 0);
        s.or(ne, hi_nz)
    };
    let c_new32 = s.zext(c_new, 32);
    Counter { c_new32, changed }
}
