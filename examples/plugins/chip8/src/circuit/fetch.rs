//! Fetch and operands: the opcode's two bytes at PC, its fields (X, Y, N, NN, NNN), the V registers they name
//! (V15 is the `VF` register, the others the memory `V`), and the operands of the micro-coded instructions
//! (V[BUSY] and the byte at I + BUSY).

use super::state::State;
use crate::face::mem;
use isa_api::{CircuitBuilder, NodeId};

/// The opcode, its fields and the values they name.
pub struct Fetch {
    /// The constant 1, 12 bits.
    pub one12: NodeId,
    /// The opcode's low byte NN (at PC + 1).
    pub lo: NodeId,
    /// X, 4 bits.
    pub x: NodeId,
    /// The opcode's top nibble.
    pub top: NodeId,
    /// N, 4 bits.
    pub n: NodeId,
    /// NNN, 12 bits.
    pub nnn: NodeId,
    /// The whole opcode, 16 bits.
    pub op: NodeId,
    /// VX.
    pub vx: NodeId,
    /// VY.
    pub vy: NodeId,
    /// V0 (for `BNNN`).
    pub v0: NodeId,
    /// BUSY's low 4 bits: the register index of `FX55`, `FX65`.
    pub busy4: NodeId,
    /// V[BUSY] (`FX55`).
    pub vb: NodeId,
    /// I + BUSY, 12 bits.
    pub i_b: NodeId,
    /// The byte at I + BUSY: a `DXYN` sprite row, an `FX65` byte.
    pub mb: NodeId,
    /// BUSY is 0: the first step of an instruction.
    pub busy0: NodeId,
}

/// V[r]: the memory `V`, or the `VF` register for r = 15.
fn v_of(s: &mut CircuitBuilder, vf: NodeId, r: NodeId) -> NodeId {
    let m = s.load(mem::V, 8, r);
    let is15 = s.eq_const(r, 15);
    s.select(is15, vf, m)
}

/// Fetch the opcode at PC and read its operands.
pub fn fetch(s: &mut CircuitBuilder, st: &State) -> Fetch {
    let one12 = s.konst(12, 1);
    let pc1 = s.add(st.pc, one12);
    let hi = s.load(mem::RAM, 8, st.pc);
    let lo = s.load(mem::RAM, 8, pc1);
    let x = s.slice(hi, 0, 4);
    let top = s.slice(hi, 4, 4);
    let y = s.slice(lo, 4, 4);
    let n = s.slice(lo, 0, 4);
    let nnn = s.concat(&[lo, x]);
    let op = s.concat(&[lo, hi]);
    let vx = v_of(s, st.vf, x);
    let vy = v_of(s, st.vf, y);
    let zero4 = s.konst(4, 0);
    let v0 = s.load(mem::V, 8, zero4);
    let busy4 = s.slice(st.busy, 0, 4);
    let vb = v_of(s, st.vf, busy4); // FX55: V[BUSY]
    let i_b = {
        let bz = s.zext(st.busy, 12);
        s.add(st.i, bz)
    };
    let mb = s.load(mem::RAM, 8, i_b); // DXYN sprite row, FX65 byte
    let busy0 = s.eq_const(st.busy, 0);
    Fetch { one12, lo, x, top, n, nnn, op, vx, vy, v0, busy4, vb, i_b, mb, busy0 }
}
