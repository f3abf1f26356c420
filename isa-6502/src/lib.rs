//! The NES's CPU, the Ricoh 2A03 (an NMOS 6502 without decimal mode), woven into Qwen3.5 weights.
//!
//! - [`circuit`]: the machine as an `isa-api` circuit, one instruction per step, in a flat 64 KiB map or the NES
//!   map (IO ranges, OAM DMA): `mos6502_machine`, one file per section;
//! - [`face`]: its public face: options, register, memory and port indices, constants (re-exported by
//!   [`circuit`]);
//! - [`front`]: its registry entry (`isa = "6502"`), `[machine]` keys, program loader (raw binaries, NROM iNES
//!   files), demos, host devices and the lockstep of a trace with the interpreter;
//! - the reference interpreter, written from the NESdev wiki's CPU pages and checked against independent data
//!   (Tom Harte's tests with every bus cycle, nestest's log, Klaus Dormann's and blargg's tests): [`opcode`] (the
//!   256-opcode matrix), [`bus`] (the [`Bus`] it runs on), [`cpu`] (every official opcode, the stable unofficial
//!   ones and LXA/SHY/SHX, cycle-exact bus accesses, reset, NMI, IRQ, BRK; JAM and the other unstable opcodes are
//!   a [`Fault`]).
//!
//! See the crate's README for the design, the tests and the figures.

pub mod bus;
pub mod circuit;
pub mod cpu;
pub mod face;
pub mod front;
pub mod opcode;

pub use bus::{Bus, FlatRam, ImageTooLarge};
pub use cpu::{Cpu, Fault, Lines, Poll, flag, oam_dma_cycles};
pub use opcode::{AddressingMode, Mnemonic, Opcode, decode};
