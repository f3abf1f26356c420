//! The ALU: every result of the computational instructions side by side (Unpriv §2.4, Zba §2.1), AUIPC's
//! sum, and the M unit's one shared 64-bit product (Unpriv §7.1); the register-file write selects one. This is
//! the circuit's ALU; its oracle, the instructions' pure semantics, is [`crate::alu`].

use super::decode::Decode;
use super::fetch::Fetch;
use super::pc_unit::PcUnit;
use isa_api::{CircuitBuilder, CmpKind, NodeId, ShiftKind};

/// What [`alu`] hands the later sections (node ids of its signals): one 32-bit result per operation.
#[derive(Clone)]
pub(super) struct Alu {
    /// ADD/ADDI.
    pub(super) r_add: NodeId,
    /// AND/ANDI.
    pub(super) r_and: NodeId,
    /// AUIPC: pc + U-immediate.
    pub(super) r_auipc: NodeId,
    /// MUL: the product's low word.
    pub(super) r_mul: NodeId,
    /// MULH/MULHSU/MULHU: the product's high word.
    pub(super) r_mulhi: NodeId,
    /// OR/ORI.
    pub(super) r_or: NodeId,
    /// SH1ADD, SH2ADD, SH3ADD.
    pub(super) r_sh: Vec<NodeId>,
    /// SLL/SLLI.
    pub(super) r_sll: NodeId,
    /// SLT/SLTI.
    pub(super) r_slt: NodeId,
    /// SLTU/SLTIU.
    pub(super) r_sltu: NodeId,
    /// SRA/SRAI.
    pub(super) r_sra: NodeId,
    /// SRL/SRLI.
    pub(super) r_srl: NodeId,
    /// SUB.
    pub(super) r_sub: NodeId,
    /// XOR/XORI.
    pub(super) r_xor: NodeId,
}

/// The ALU (Unpriv §2.4, Zba §2.1) and the M unit's one shared 64-bit product (Unpriv §7.1).
pub(super) fn alu(s: &mut CircuitBuilder, fetch: &Fetch, decode: &Decode, pc_unit: &PcUnit) -> Alu {
    let Fetch { a, bv, f3, .. } = fetch.clone();
    let Decode { imm_i, imm_u, is_op, .. } = decode.clone();
    let PcUnit { pc_addr, .. } = pc_unit.clone();
    // ---- ALU (Unpriv §2.4, Zba §2.1) ---------------------------------------------------------------------------
    let op2 = s.select(is_op, bv, imm_i);
    let shamt = s.slice(op2, 0, 5);
    let r_add = s.add(a, op2);
    let r_sub = s.sub(a, bv);
    let r_sll = s.shift(ShiftKind::Shl, a, shamt);
    let r_srl = s.shift(ShiftKind::Shr, a, shamt);
    let r_sra = s.shift(ShiftKind::Sar, a, shamt);
    let r_slt = {
        let c = s.cmp(CmpKind::Lts, a, op2);
        s.zext(c, 32)
    };
    let r_sltu = {
        let c = s.cmp(CmpKind::Ltu, a, op2);
        s.zext(c, 32)
    };
    let r_xor = s.xor(a, op2);
    let r_or = s.or(a, op2);
    let r_and = s.and(a, op2);
    let r_sh: Vec<NodeId> = (1..=3)
        .map(|k| {
            let x = s.shift_const(ShiftKind::Shl, a, k);
            s.add(x, bv)
        })
        .collect();
    let r_auipc = s.add(pc_addr, imm_u);
    // M (Unpriv §7.1): ONE 64-bit product serves all four instructions. funct3 = 0 MUL, 1 MULH, 2 MULHSU,
    // 3 MULHU: rs1 is signed for MULH/MULHSU (f3[0] xor f3[1]), rs2 for MULH only (f3 == 1). Each operand is
    // sign- or zero-extended to 64 bits by that choice and the low 64 bits of the product are the exact
    // signed x signed, signed x unsigned or unsigned x unsigned product. MUL (the low word) does not depend
    // on the signedness. The weaver folds the repeated extension bits of the partial products into one
    // negated term each (Baugh-Wooley), so this costs about one unsigned 32 x 32 multiplier.
    let (r_mul, r_mulhi) = {
        let m0 = s.bit(f3, 0);
        let m1 = s.bit(f3, 1);
        let sa = s.xor(m0, m1);
        let nm1 = s.not(m1);
        let sb = s.and(m0, nm1);
        let a31 = s.bit(a, 31);
        let b31 = s.bit(bv, 31);
        let ea = s.and(sa, a31);
        let eb = s.and(sb, b31);
        let a33 = s.concat(&[a, ea]);
        let b33 = s.concat(&[bv, eb]);
        let a64 = s.sext(a33, 64);
        let b64 = s.sext(b33, 64);
        let p = s.mul_lo(a64, b64);
        (s.slice(p, 0, 32), s.slice(p, 32, 32))
    };
    Alu { r_add, r_and, r_auipc, r_mul, r_mulhi, r_or, r_sh, r_sll, r_slt, r_sltu, r_sra, r_srl, r_sub, r_xor }
}
