//! Control transfers (Unpriv §2.5): the branch condition, the jump targets (pc-relative for JAL and the
//! branches, in the word-index domain; rs1 + imm for JALR), and whether a target is misaligned or outside RAM.

use super::decode::Decode;
use super::fetch::Fetch;
use super::{Ram, ram_offset};
use isa_api::{CircuitBuilder, CmpKind, NodeId};

/// What [`control`] hands the later sections (node ids of its signals).
#[derive(Clone)]
pub(super) struct Control {
    /// A jump to a misaligned target.
    pub(super) jmp_mis: NodeId,
    /// A jump to an aligned target outside RAM.
    pub(super) jmp_oor: NodeId,
    /// JALR's target rs1 + imm (bit 0 not cleared).
    pub(super) jt: NodeId,
    /// JALR's target is not a multiple of 4.
    pub(super) jt_mis: NodeId,
    /// JALR's target lies in RAM.
    pub(super) jt_ok: NodeId,
    /// JAL, JALR or a taken branch.
    pub(super) jumps: NodeId,
    /// The jump's target as a RAM word index.
    pub(super) pc_jump: NodeId,
    /// The pc-relative offset (J- or B-immediate).
    pub(super) rel_imm: NodeId,
    /// The pc-relative offset is not a multiple of 4.
    pub(super) rel_mis: NodeId,
    /// The pc-relative target lies in RAM.
    pub(super) rel_ok: NodeId,
    /// The target (JALR's or the pc-relative one) is misaligned.
    pub(super) t_mis: NodeId,
}

/// Control transfers (Unpriv §2.5): branch condition, targets, misaligned and out-of-RAM jumps.
pub(super) fn control(s: &mut CircuitBuilder, ram: &Ram, fetch: &Fetch, decode: &Decode) -> Control {
    let Ram { aw, .. } = *ram;
    let Fetch { a, bv, pc, .. } = fetch.clone();
    let Decode { br, imm_b, imm_i, imm_j, is_jal, is_jalr, .. } = decode.clone();
    // ---- control transfers (Unpriv §2.5) -----------------------------------------------------------------------
    let taken = {
        let eq = s.eq(a, bv);
        let ne = s.not(eq);
        let lt = s.cmp(CmpKind::Lts, a, bv);
        let ge = s.not(lt);
        let ltu = s.cmp(CmpKind::Ltu, a, bv);
        let geu = s.not(ltu);
        let c: Vec<(NodeId, NodeId)> = br.iter().zip([eq, ne, lt, ge, ltu, geu]).map(|(x, y)| (*x, y)).collect();
        s.and_or(1, &c)
    };
    let jumps = s.any(&[is_jal, is_jalr, taken]);
    // pc-relative targets (JAL, branches) in the word-index domain: s = pc + imm/4, in RAM iff 0 <= s < 2^aw.
    let rel_imm = s.select(is_jal, imm_j, imm_b);
    let ww = aw.max(20) + 2;
    let (rel_pc, rel_ok) = {
        let p = s.zext(pc, ww);
        let i4 = s.slice(rel_imm, 2, ww);
        let t = s.add(p, i4);
        let hi = s.slice(t, aw, ww - aw);
        let ok = s.eq_const(hi, 0);
        (s.slice(t, 0, aw), ok)
    };
    let rel_mis = s.bit(rel_imm, 1);
    // JALR: (rs1 + imm) with bit 0 cleared (bit 0 does not affect the word index or bit 1).
    let jt = s.add(a, imm_i);
    let jt_mis = s.bit(jt, 1);
    let (jt_off, jt_ok) = ram_offset(s, ram, jt);
    let jt_pc = s.slice(jt_off, 2, aw);
    let pc_jump = s.select(is_jalr, jt_pc, rel_pc);
    let t_mis = s.select(is_jalr, jt_mis, rel_mis);
    let t_ok = s.select(is_jalr, jt_ok, rel_ok);
    let jmp_mis = s.and(jumps, t_mis);
    let jmp_oor = {
        let nm = s.not(t_mis);
        let no = s.not(t_ok);
        s.all(&[jumps, nm, no])
    };
    Control { jmp_mis, jmp_oor, jt, jt_mis, jt_ok, jumps, pc_jump, rel_imm, rel_mis, rel_ok, t_mis }
}
