//! The CHIP-8 machine as an `isa-api` circuit: one machine step per forward pass of the woven network,
//! semantics exactly those of [`crate::interp`] (the quirks are listed there); the state and ports are listed in
//! [`crate::face`].
//!
//! [`chip8_machine`] builds one step as a pipeline of sections, one file each: `state` reads the registers and
//! inputs, `fetch` the opcode and its operands, `decode` names the instruction, `micro` sequences the micro-coded
//! ones, `alu` and `keys` compute values, `vregs`, `screen`, `ram` and `stack` write the memories, `pc` and
//! `commit` the registers.
//!
//! One write per memory per step: `8XY4` and the like write VX to `V` and the flag to the `VF` register in the
//! same step; the instructions that write several bytes or rows are micro-coded over `BUSY`. `CLS` is one step
//! that clears `SCREEN` (`mem_clear`): in the woven network, one token whose Gated DeltaNet decay is 0 on the
//! display's heads.

mod alu;
mod commit;
mod decode;
mod fetch;
mod keys;
mod micro;
mod pc;
mod ram;
mod screen;
mod stack;
mod state;
mod vregs;

pub use crate::face::{INSTRUCTIONS_PER_TICK, mem, reg};
use isa_api::{CircuitBuilder, MachineDesc};

/// The machine description.
pub fn chip8_machine() -> MachineDesc {
    let mut b = CircuitBuilder::new();
    let s = &mut b;
    let st = state::state(s);
    let f = fetch::fetch(s, &st);
    let d = decode::decode(s, &st, &f);
    let m = micro::micro(s, &st, &f, &d);
    let ops = alu::alu(s, &f, &d);
    let k = keys::keys(s, &st, &f);
    let v = vregs::vregs(s, &st, &f, &d, &m, &ops, &k);
    let scr = screen::screen(s, &st, &f, &d, &m);
    ram::ram(s, &st, &f, &d);
    let stk = stack::stack(s, &st, &d);
    pc::pc(s, &st, &f, &d, &m, &k, &stk);
    commit::sp(s, &st, &d, &stk);
    commit::i(s, &st, &f, &d, &m, &k);
    commit::clock(s, &st, &f, &d, &m);
    commit::busy_and_lfsr(s, &st, &d, &m);
    commit::vf(s, &st, &f, &d, &m, &ops, &v, &scr);
    commit::fault(s, &st, &f, &d);
    crate::face::machine(b.finish())
}
