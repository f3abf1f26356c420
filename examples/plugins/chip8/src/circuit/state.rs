//! The state a step starts from: the committed registers and the host's inputs, read once at the top of the
//! circuit (each read is a node, in register-index order).

use crate::face::{input, reg};
use isa_api::{CircuitBuilder, NodeId};

/// The registers and inputs at the start of the step.
pub struct State {
    /// Program counter, 12 bits.
    pub pc: NodeId,
    /// Index register, 12 bits.
    pub i: NodeId,
    /// Stack pointer, 4 bits.
    pub sp: NodeId,
    /// Delay timer, 8 bits.
    pub dt: NodeId,
    /// Sound timer, 8 bits.
    pub st: NodeId,
    /// The last tick count seen, 8 bits.
    pub last: NodeId,
    /// The micro-step, 6 bits.
    pub busy: NodeId,
    /// The random generator, 16 bits.
    pub lfsr: NodeId,
    /// VF, 8 bits.
    pub vf: NodeId,
    /// A fault was reported: this step halts.
    pub stop: NodeId,
    /// The host's tick count (input), 8 bits.
    pub tick: NodeId,
    /// The keys held (input), 16 bits.
    pub keys: NodeId,
}

/// Read the registers and inputs.
pub fn state(s: &mut CircuitBuilder) -> State {
    let pc = s.reg(reg::PC, 12);
    let i = s.reg(reg::I, 12);
    let sp = s.reg(reg::SP, 4);
    let dt = s.reg(reg::DT, 8);
    let st = s.reg(reg::ST, 8);
    let last = s.reg(reg::LAST, 8);
    let busy = s.reg(reg::BUSY, 6);
    let lfsr = s.reg(reg::LFSR, 16);
    let vf = s.reg(reg::VF, 8);
    let stop = s.reg(reg::STOP, 1);
    let tick = s.input(input::TICK, 8);
    let keys = s.input(input::KEYS, 16);
    State { pc, i, sp, dt, st, last, busy, lfsr, vf, stop, tick, keys }
}
