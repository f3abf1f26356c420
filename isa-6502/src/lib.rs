//! The NES's CPU, the Ricoh 2A03 (an NMOS 6502 without decimal mode), for issue 13.
//!
//! What exists: the reference interpreter, written from the NESdev wiki's CPU pages, and its tests against
//! independent data (Tom Harte's single-instruction tests with every bus cycle, nestest's golden log, Klaus
//! Dormann's functional test):
//!
//! - [`opcode`]: the 256-opcode matrix (mnemonic and addressing mode), official and unofficial,
//! - [`bus`]: the [`Bus`] the CPU reads and writes through, and a flat 64 KiB RAM implementing it,
//! - [`cpu`]: the interpreter: every official opcode and the stable unofficial ones, cycle-exact bus accesses,
//!   reset, NMI, IRQ and BRK; JAM and the unstable opcodes are a [`Fault`].
//!
//! Not built yet: the CPU as an `isa-api` circuit woven into the weights, the NES memory map in the network, its
//! configs and `loom run`/`loom lockstep` for it (see the crate's README).

pub mod bus;
pub mod circuit;
pub mod cpu;
pub mod front;
pub mod opcode;

pub use bus::{Bus, FlatRam, ImageTooLarge};
pub use cpu::{Cpu, Fault, flag};
pub use opcode::{AddressingMode, Mnemonic, Opcode, decode};
