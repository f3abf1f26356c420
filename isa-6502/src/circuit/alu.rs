//! The read-modify-write stage (shifts, rotates, increments on the operand) and the ALU stage (one 9-bit adder
//! for ADC, SBC, the compares and AXS, the logic operations and the unofficial ones), parts of the execute
//! section.

use super::Ctx;
use super::decode::{Alu, Decoded, ctl};
use isa_api::circuit::{NodeId, ShiftKind, SumTerm};

/// The read-modify-write stage's results.
pub(super) struct RmwStage {
    /// (select, value) of each variant: ASL, LSR, ROL, ROR, INC or DEC (one sum), none (the operand).
    pub(super) variants: [(NodeId, NodeId); 6],
    /// The modified operand (the operand itself when the instruction modifies nothing).
    pub(super) value: NodeId,
    /// The carry a shift or rotate moves out.
    pub(super) shift_c: NodeId,
    /// The ALU's carry in: ROR's out-carry for RRA, else C.
    pub(super) alu_cin: NodeId,
}

/// The read-modify-write stage on `operand` (`flag_c`: the carry before the instruction).
pub(super) fn rmw_stage(cx: &mut Ctx, d: Decoded, operand: NodeId, flag_c: NodeId) -> RmwStage {
    let rmw = d.field(cx, ctl::RMW, 3);
    let rmw_is = cx.s.one_hot_decode(rmw, 7);
    let shl = cx.s.shift_const(ShiftKind::Shl, operand, 1);
    let shr = cx.s.shift_const(ShiftKind::Shr, operand, 1);
    // ROL and ROR: the old carry in the free bit, as a sum of disjoint bits (one layer, no OR gate).
    let rol = {
        let lo7 = cx.s.slice(operand, 0, 7);
        cx.s.concat(&[flag_c, lo7])
    };
    let ror = {
        let hi7 = cx.s.slice(operand, 1, 7);
        cx.s.concat(&[hi7, flag_c])
    };
    // INC and DEC as one sum, `operand + 1 - 2 * dec` (modulo 256): half the units that move with the operand
    // (at most steps), where `operand + 1` and `operand - 1` were two sums; the decoded `dec` is ready long
    // before the operand, so the sum is still one layer after it.
    let inc_dec = cx.s.sum(8, &[SumTerm { node: operand, shift: 0, neg: false }, SumTerm { node: rmw_is[6], shift: 1, neg: true }], 1);
    let is_inc_dec = cx.s.or(rmw_is[5], rmw_is[6]);
    let rmw_variants = [(rmw_is[1], shl), (rmw_is[2], shr), (rmw_is[3], rol), (rmw_is[4], ror), (is_inc_dec, inc_dec), (rmw_is[0], operand)];
    let rmw_val = cx.s.one_hot(8, &rmw_variants);
    let op_b7 = cx.s.bit(operand, 7);
    let op_b0 = cx.s.bit(operand, 0);
    let left = cx.s.or(rmw_is[1], rmw_is[3]);
    let shift_c = cx.s.select(left, op_b7, op_b0);
    // Carry into the ALU: RRA's ADC takes the carry its ROR moved out.
    let is_ror = rmw_is[4];
    let alu_cin = cx.s.select(is_ror, op_b0, flag_c);
    RmwStage { variants: rmw_variants, value: rmw_val, shift_c, alu_cin }
}

/// The ALU stage's results.
pub(super) struct AluStage {
    /// A AND X (SAX, AXS).
    pub(super) ax: NodeId,
    /// A AND the unmodified operand (ANC, ALR, ARR, BIT).
    pub(super) a_and_op: NodeId,
    pub(super) is_axs: NodeId,
    /// The 9-bit adder's low 8 bits, carry out and signed overflow.
    pub(super) sum: NodeId,
    pub(super) sum_c: NodeId,
    pub(super) sum_v: NodeId,
    /// ARR's result before its flags.
    pub(super) arr: NodeId,
    /// (decoded ALU operation, result) of each operation that writes A, not yet gated by `exec`.
    pub(super) cases: Vec<(NodeId, NodeId)>,
}

/// The ALU stage on A and the (modified) operand: one 9-bit adder for ADC, SBC, the compares and AXS, the
/// logic operations and the unofficial ones.
#[allow(clippy::too_many_arguments)]
pub(super) fn alu_stage(cx: &mut Ctx, d: Decoded, [a, x, y]: [NodeId; 3], operand: NodeId, rmw_variants: &[(NodeId, NodeId); 6], rmw_val: NodeId, alu_cin: NodeId, flag_c: NodeId) -> AluStage {
    let one = cx.one;
    let t = |node: NodeId, shift: u32| SumTerm { node, shift, neg: false };
    let alu = d.field(cx, ctl::ALU, 4);
    let alu_is = cx.s.one_hot_decode(alu, 14);
    let o = rmw_val;
    let ax = cx.s.and(a, x);
    let a_or = cx.s.or(a, o);
    let a_and = cx.s.and(a, o);
    // ANC, ALR, ARR and BIT AND the operand itself (no read-modify-write before them): a shorter path.
    let a_and_op = cx.s.and(a, operand);
    let a_eor = cx.s.xor(a, o);
    // One 9-bit adder: ADC (A + o + C), SBC (A + !o + C), compares (reg + !o + 1), AXS ((A & X) + !o + 1).
    let is_sbc = alu_is[Alu::Sbc as usize];
    let is_cmp = alu_is[Alu::Cmp as usize];
    let is_cpx = alu_is[Alu::Cpx as usize];
    let is_cpy = alu_is[Alu::Cpy as usize];
    let is_axs = alu_is[Alu::Axs as usize];
    let is_adc = alu_is[Alu::Adc as usize];
    let compare = cx.s.any(&[is_cmp, is_cpx, is_cpy, is_axs]);
    let invert = cx.s.or(is_sbc, compare);
    // The adder's operand: the read-modify-write variant, as is for ADC, inverted for SBC and the compares, in
    // one select; 0 for every other instruction (none reads the adder), so the adder holds still when the
    // operand of a load, a store or a logic operation moves.
    let addend = {
        let mut cases = Vec::new();
        for &(sel, v) in rmw_variants {
            let plain = cx.s.and(sel, is_adc);
            let inv = cx.s.and(sel, invert);
            let nv = cx.s.not(v);
            cases.push((plain, v));
            cases.push((inv, nv));
        }
        cx.s.one_hot(8, &cases)
    };
    let add_left = cx.s.one_hot_or(8, &[(is_cpx, x), (is_cpy, y), (is_axs, ax)], a);
    let cin = cx.s.select(compare, one, alu_cin);
    let sum9 = cx.s.sum(9, &[t(add_left, 0), t(addend, 0), t(cin, 0)], 0);
    let sum = cx.s.slice(sum9, 0, 8);
    let sum_c = cx.s.bit(sum9, 8);
    // Signed overflow: both inputs of one sign, the result of the other.
    let sum_v = {
        let (a7, d7, s7) = (cx.s.bit(a, 7), cx.s.bit(addend, 7), cx.s.bit(sum, 7));
        let c = cx.s.concat(&[a7, d7, s7]);
        // (a7, d7, s7) = (0, 0, 1) or (1, 1, 0): one lookup, one layer.
        cx.s.truth_table(c, |i| i == 0b100 || i == 0b011)
    };
    let alr = cx.s.shift_const(ShiftKind::Shr, a_and_op, 1);
    let arr = {
        let hi7 = cx.s.slice(a_and_op, 1, 7);
        cx.s.concat(&[hi7, flag_c])
    };
    let cases = vec![
        (alu_is[Alu::Ora as usize], a_or),
        (alu_is[Alu::And as usize], a_and),
        (alu_is[Alu::Eor as usize], a_eor),
        (is_adc, sum),
        (is_sbc, sum),
        (alu_is[Alu::Anc as usize], a_and_op),
        (alu_is[Alu::Alr as usize], alr),
        (alu_is[Alu::Arr as usize], arr),
    ];
    AluStage { ax, a_and_op, is_axs, sum, sum_c, sum_v, arr, cases }
}
