//! The stack: `2NNN` pushes PC + 2 at SP; the return address `00EE` pops is read at SP - 1.

use super::decode::Decode;
use super::state::State;
use crate::face::mem;
use isa_api::{CircuitBuilder, NodeId};

/// The stack's values for the next PC and SP.
pub struct Stack {
    /// PC + 2: the next instruction.
    pub pc2: NodeId,
    /// The constant 1, 4 bits.
    pub one4: NodeId,
    /// SP - 1.
    pub sp_m1: NodeId,
    /// The return address on top of the stack.
    pub ret_to: NodeId,
}

/// Push on `2NNN`; read the top for `00EE`.
pub fn stack(s: &mut CircuitBuilder, st: &State, d: &Decode) -> Stack {
    let two12 = s.konst(12, 2);
    let pc2 = s.add(st.pc, two12);
    let call_en = d.running(s, d.call);
    s.mem_write(mem::STACK, st.sp, pc2, call_en);
    let one4 = s.konst(4, 1);
    let sp_m1 = s.sub(st.sp, one4);
    let ret_to = s.load(mem::STACK, 12, sp_m1);
    Stack { pc2, one4, sp_m1, ret_to }
}
