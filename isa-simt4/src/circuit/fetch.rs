//! Fetch: the state registers `PC`, `WARP`, `BUSY`, `STOP` and the instruction word at `PC`.

use super::shape::Shape;
use crate::face::{mem, reg};
use crate::isa::{BUSY_BITS, PC_BITS};
use isa_api::{CircuitBuilder, NodeId};

/// The state registers and the instruction word.
pub(super) struct Fetch {
    /// `PC` (12 bits).
    pub pc: NodeId,
    /// `WARP` ([`Shape::wb`] bits).
    pub warp: NodeId,
    /// `BUSY` (6 bits): the micro-step.
    pub busy: NodeId,
    /// `STOP` (1 bit).
    pub stop: NodeId,
    /// `PROG[PC]` (64 bits).
    pub word: NodeId,
}

/// Read the state registers and fetch the instruction word.
pub(super) fn fetch(s: &mut CircuitBuilder, shape: &Shape) -> Fetch {
    let pc = s.reg(reg::PC, PC_BITS);
    let warp = s.reg(reg::WARP, shape.wb);
    let busy = s.reg(reg::BUSY, BUSY_BITS);
    let stop = s.reg(reg::STOP, 1);
    let word = s.load(mem::PROG, 64, pc);
    Fetch { pc, warp, busy, stop, word }
}
