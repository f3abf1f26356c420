//! The ALU of `8XYN`: the value each of the nine operations writes to VX and the flag it writes to VF (the
//! logic operations reset VF; the shifts take VY).

use super::decode::Decode;
use super::fetch::Fetch;
use isa_api::{CircuitBuilder, CmpKind, NodeId, ShiftKind};

/// The ALU's results.
pub struct Alu {
    /// The value for VX, 8 bits.
    pub val: NodeId,
    /// The flag for VF, 8 bits.
    pub flag: NodeId,
    /// The operation writes VF (every `8XYN` but `8XY0`).
    pub flag_op: NodeId,
}

/// The `8XYN` operations on VX and VY, selected by the decoded operation.
pub fn alu(s: &mut CircuitBuilder, f: &Fetch, d: &Decode) -> Alu {
    let (vx, vy, alu) = (f.vx, f.vy, &d.alu);
    let (or_, and_, xor_) = (s.or(vx, vy), s.and(vx, vy), s.xor(vx, vy));
    let sum9 = {
        let a = s.zext(vx, 9);
        let c = s.zext(vy, 9);
        s.add(a, c)
    };
    let sum = s.slice(sum9, 0, 8);
    let carry = s.bit(sum9, 8);
    let sub_xy = s.sub(vx, vy);
    let sub_yx = s.sub(vy, vx);
    let x_lt_y = s.cmp(CmpKind::Ltu, vx, vy);
    let y_lt_x = s.cmp(CmpKind::Ltu, vy, vx);
    let x_ge_y = s.not(x_lt_y);
    let y_ge_x = s.not(y_lt_x);
    let shr = s.shift_const(ShiftKind::Shr, vy, 1);
    let shl = s.shift_const(ShiftKind::Shl, vy, 1);
    let y0 = s.bit(vy, 0);
    let y7 = s.bit(vy, 7);
    let val = s.and_or(8, &[(alu[0], vy), (alu[1], or_), (alu[2], and_), (alu[3], xor_), (alu[4], sum), (alu[5], sub_xy), (alu[6], shr), (alu[7], sub_yx), (alu[8], shl)]);
    let z1 = s.konst(1, 0);
    let flag1 = s.and_or(1, &[(alu[1], z1), (alu[2], z1), (alu[3], z1), (alu[4], carry), (alu[5], x_ge_y), (alu[6], y0), (alu[7], y_ge_x), (alu[8], y7)]);
    let flag = s.zext(flag1, 8);
    let flag_op = s.any(&alu[1..]);
    Alu { val, flag, flag_op }
}
