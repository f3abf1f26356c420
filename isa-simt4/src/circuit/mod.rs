//! The SIMT4 machine as an `isa-api` circuit: one machine step per forward pass of the woven network,
//! semantics exactly those of [`crate::interp`] (written from [`crate::isa`]), step for step.
//!
//! | state | kind | meaning |
//! |---|---|---|
//! | `PC` | register, 12 bits | instruction index |
//! | `WARP` | register, max(1, log2 `warps`) bits | the running warp |
//! | `BUSY` | register, 6 bits | micro-step: the lane a store or atomic is at, or the step a division is at (0 between instructions) |
//! | `STOP` | register, 1 bit | a fault was reported: the next step halts |
//! | `DQ{l}`, `DR{l}` | registers, 32 bits, per lane `l` | division: dividend shifting out / quotient shifting in, partial remainder |
//! | `PROG` | memory, 4096 x 64 | the program, one instruction word per row |
//! | `SHARED` | memory, `shared_words` x 32 | shared memory |
//! | `GLOBAL` | memory, `global_words` x 32 | global memory |
//! | `WPC` | memory, `warps` x 12 (at least 2 rows) | the saved PCs of the warps (`BAR`) |
//! | `R0` .. `R{lanes-1}` | memories, (`warps` * 32) x 32 | lane `l`'s registers: row `warp * 32 + reg` |
//! | `FAULT` | port, 64 bits, [`PortRole::Fault`](isa_api::PortRole::Fault) | [`crate::isa::Fault::word`] of a fault |
//!
//! Per lane the circuit reads four registers of the running warp: `A = R[rs1]`, `B = R[rs2]`, `D = R[rd]`
//! (for `CMOV`) and `C = R[31]` (the activity counter; its address depends only on `WARP`, so activity is known
//! early), and the shared and global words at `base + A` (the loads, and the old value of an atomic).
//!
//! One write per memory per step: a lane's register memory takes `rd` (ALU ops and loads in active lanes; the
//! atomic's `rd` in lane `BUSY`) or `r31` (counter ops, only where the counter word changes); `SHARED` and
//! `GLOBAL` take the store or atomic of lane `BUSY`; `WPC` the `BAR`'s saved PC. Stores and atomics are
//! micro-coded over `BUSY = 0 .. lanes-1`.
//!
//! Divisions (`DIV DIVU REM REMU`) are micro-coded over `BUSY = 0 ..= 17` ([`crate::isa::DIV_STEPS`]) with
//! the `PC` held, in every active lane at once: step 0 loads `DQ = |a|`, `DR = 0`; steps 1..=16 are radix-4
//! restoring steps: `d = |b|` and `3d` (one weighted sum per sign of `b`) from the operand read again, three
//! 34-bit compares of `t = DR * 4 + DQ >> 30` with `d`, `2d`, `3d` and four candidate remainders selected
//! one-hot (as deep as the multiply; registers are ready at the start of the step); step 17 writes `rd` (the
//! quotient or remainder, negated per the signs) through the lane's register write. A lane's division
//! registers hold their value in every other step and in inactive lanes. (Keeping `|b|` and `3|b|` in
//! registers too would make the steps shallower but costs step fields: every 8-bit register chunk is a step
//! field of the trace protocol, which grows the vocabulary and the state heads.)
//!
//! Per lane one unsigned 64-bit product serves `MUL` (its low word), `MULHU` (its high word) and `MULHI` (the
//! high word corrected for the signs), and one logical right shift by a 6-bit amount (the low 5 bits of `b`
//! and "`b` >= 32") serves `SHR`, `SHL` (bit-reversed in and out) and `SRA` (inverted in and out when `a < 0`).
//! The woven depth is about 14 layers for 4 and 8 lanes (the multiply is the critical path).
//!
//! A fault step writes the `FAULT` port and sets `STOP`, nothing else (the interpreter's fault step changes no
//! state); the next step halts. The `HALT` instruction sets the circuit's halt bit in the step that executes
//! it (that step changes nothing, as in the interpreter).
//!
//! The builder below calls one section a stage, in the circuit's node order: `fetch` (the state registers and
//! the instruction word), `decode` (opcode fields and classes, the division's micro-step) and its `operands`
//! (register rows, memory operands), per lane `lane` (reads, ALU, memory, counters, division, the register
//! write's data), then `faults`, the writes of the lanes' registers (`lane_writes`) and of `SHARED`/`GLOBAL`
//! (`memory_writes`), `BUSY`, `BAR`, `PC` and the description (`describe`), each in `circuit/<section>.rs`.

mod alu;
mod commit;
mod control;
mod counter;
mod decode;
mod describe;
mod divide;
mod fault;
mod fetch;
mod lane;
mod memory;
mod shape;

pub use self::divide::{DivPath, div_datapath};
pub use crate::error::Simt4Error;
pub use crate::face::{mem, port, reg, warp_bits};

use crate::isa::Simt4Config;
use isa_api::{CircuitBuilder, MachineDesc};

/// The SIMT4 machine of shape `cfg`: registers `PC`, `WARP`, `BUSY`, `STOP` and the lanes' division registers
/// `DQ{l}`, `DR{l}` ([`reg`]), memories `PROG`,
/// `SHARED`, `GLOBAL`, `WPC`, `R0`.. ([`mem`]), output port `FAULT` ([`port`]); `BUSY` is the micro-step
/// register. Errors: `cfg` is out of range ([`Simt4Config::validate`]).
pub fn simt4_machine(cfg: &Simt4Config) -> Result<MachineDesc, Simt4Error> {
    cfg.validate().map_err(Simt4Error::Config)?;
    let shape = shape::Shape::of(cfg);
    let mut b = CircuitBuilder::new();
    let s = &mut b;
    let f = fetch::fetch(s, &shape);
    let d = decode::decode(s, &f);
    let o = decode::operands(s, &shape, &f, &d);
    let lanes: Vec<lane::Lane> = (0..shape.lanes).map(|l| lane::lane(s, &shape, &f, &d, &o, l)).collect();
    let faults = fault::faults(s, &shape, &f, &d, &lanes);
    commit::lane_writes(s, &d, &o, &faults, &lanes);
    memory::memory_writes(s, &shape, &d, &lanes);
    let busy = control::busy(s, &shape, &f, &d, &faults);
    let bar = control::bar(s, &shape, &f, &d, &o);
    control::pc(s, &f, &d, &faults, &busy, &bar, &lanes);
    describe::describe(cfg, &shape, b)
}
