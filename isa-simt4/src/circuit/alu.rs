//! One lane's ALU: add and subtract, one unsigned 64-bit product (`MUL`, `MULHU`, `MULHI`), the bitwise ops, one
//! logical right shift (`SHR`, `SHL` bit-reversed, `SRA` inverted), compares, min/max, `CMOV` and the thread id.

use super::decode::{Decode, Operands};
use super::lane::Reads;
use super::shape::Shape;
use isa_api::{CircuitBuilder, CmpKind, NodeId, ShiftKind};

/// One lane's ALU results (32 bits unless noted).
pub(super) struct Alu {
    /// `a + b`, `a - b`.
    pub add: NodeId,
    pub sub: NodeId,
    /// `MUL` (the product's low word), `MULHI` (signed high word), `MULHU` (unsigned high word).
    pub mul: NodeId,
    pub mulhi: NodeId,
    pub mulhu: NodeId,
    /// `a & b`, `a | b`, `a ^ b`.
    pub and: NodeId,
    pub or: NodeId,
    pub xor: NodeId,
    /// `a < 0` (1 bit).
    pub a_sign: NodeId,
    /// `SRA` with `a >= 0`, with `a < 0` (1 bit each).
    pub sra_pos: NodeId,
    pub sra_neg: NodeId,
    /// The shifter's output (`SHR`, `SRA` with `a >= 0`), reversed (`SHL`), inverted (`SRA` with `a < 0`).
    pub sh_out: NodeId,
    pub sh_rev: NodeId,
    pub sh_not: NodeId,
    /// `SLT`, `SLTU`, `SEQ`, `SNE` (0 or 1).
    pub slt: NodeId,
    pub sltu: NodeId,
    pub seq: NodeId,
    pub sne: NodeId,
    /// `MIN`, `MAX`, `MINU`, `MAXU`.
    pub min: NodeId,
    pub max: NodeId,
    pub minu: NodeId,
    pub maxu: NodeId,
    /// `a != 0`, `a == 0` (1 bit each).
    pub a_nz: NodeId,
    pub a_z: NodeId,
    /// `CMOV`: `a != 0 ? b : R[rd]`.
    pub cmov: NodeId,
    /// The thread id `warp * lanes + l`.
    pub tid32: NodeId,
}

/// The ALU of lane `l` on its operands `r`.
pub(super) fn alu(s: &mut CircuitBuilder, shape: &Shape, d: &Decode, o: &Operands, r: &Reads, l: u32) -> Alu {
    let (a, bv) = (r.a, r.bv);
    let add = s.add(a, bv);
    let sub = s.sub(a, bv);
    // One unsigned 64-bit product: MUL is its low word, MULHU its high word, and MULHI the high word
    // less `b` where `a < 0` and less `a` where `b < 0` (the signed product's correction, mod 2^32).
    let (mul, mulhi, mulhu) = {
        let a64 = s.zext(a, 64);
        let b64 = s.zext(bv, 64);
        let p = s.mul_lo(a64, b64);
        let lo = s.slice(p, 0, 32);
        let hi = s.slice(p, 32, 32);
        let a_neg = s.bit(a, 31);
        let b_neg = s.bit(bv, 31);
        let a_negs = s.sext(a_neg, 32);
        let b_negs = s.sext(b_neg, 32);
        let corr_a = s.and(bv, a_negs);
        let corr_b = s.and(a, b_negs);
        let t = |node, neg| isa_api::SumTerm { node, shift: 0, neg };
        let shi = s.sum(32, &[t(hi, false), t(corr_a, true), t(corr_b, true)], 0);
        (lo, shi, hi)
    };
    let and = s.and(a, bv);
    let or = s.or(a, bv);
    let xor = s.xor(a, bv);
    // One logical right shift serves SHL (on the bit-reversed operand, result reversed back), SHR, and SRA
    // (on `!a` when `a < 0`, result inverted: `a >> k` arithmetic = `!(!a >> k)` logical).
    let a_sign = s.bit(a, 31);
    let rev = |s: &mut CircuitBuilder, x: NodeId| {
        let bits: Vec<NodeId> = (0..32).rev().map(|k| s.bit(x, k)).collect();
        s.concat(&bits)
    };
    let a_rev = rev(s, a);
    let a_not = s.not(a);
    let a_pos = s.not(a_sign);
    let sra_pos = s.and(d.o_sra, a_pos);
    let sra_neg = s.and(d.o_sra, a_sign);
    let sh_in = s.one_hot(32, &[(d.o_shl, a_rev), (d.o_shr, a), (sra_pos, a), (sra_neg, a_not)]);
    let sh_out = s.shift(ShiftKind::Shr, sh_in, r.by);
    let sh_rev = rev(s, sh_out);
    let sh_not = s.not(sh_out);
    let lts = s.cmp(CmpKind::Lts, a, bv);
    let ltu = s.cmp(CmpKind::Ltu, a, bv);
    let eqv = s.eq(a, bv);
    let nev = s.not(eqv);
    let slt = s.zext(lts, 32);
    let sltu = s.zext(ltu, 32);
    let seq = s.zext(eqv, 32);
    let sne = s.zext(nev, 32);
    let min = s.select(lts, a, bv);
    let max = s.select(lts, bv, a);
    let minu = s.select(ltu, a, bv);
    let maxu = s.select(ltu, bv, a);
    let a_nz = s.ne_const(a, 0);
    let a_z = s.not(a_nz);
    let cmov = s.select(a_nz, bv, r.dv);
    let lane_c = s.konst(shape.ll, u64::from(l));
    let tid = match o.warp_lo {
        Some(w) => s.concat(&[lane_c, w]),
        None => lane_c,
    };
    let tid32 = s.zext(tid, 32);
    Alu {
        add, sub, mul, mulhi, mulhu, and, or, xor, a_sign, sra_pos, sra_neg, sh_out, sh_rev, sh_not, slt, sltu, seq,
        sne, min, max, minu, maxu, a_nz, a_z, cmov, tid32,
    }
}
