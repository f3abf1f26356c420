//! The NES host around the woven 2A03 (issue 14), the light host Nesformer also keeps: it draws, plays and
//! reads the controllers; the CPU, its RAM and the cartridge program run in the network (or, to check the
//! network, in the reference interpreter).
//!
//! - [`cartridge`]: iNES / NES 2.0 files, mapper 0 (NROM), CHR ROM or RAM, nametable mirroring;
//! - [`ppu`]: the 2C02 (NTSC), dot by dot;
//! - [`apu`]: pulse, triangle, noise, DMC, the frame counter, mixed to 44.1 kHz;
//! - [`input`]: the standard pads, button schedules from an input file or an FCEUX movie;
//! - [`board`]: the devices clocked from the CPU's cycle count, its IO registers and interrupt lines;
//! - [`network`]: the board as host devices of the woven NES-map machine (`--cpu network`);
//! - [`reference`]: the board driven by the reference interpreter (`--cpu reference`), to check the network;
//! - [`output`]: PNG frames, an animated GIF, WAV audio, frame and audio hashes.

pub mod apu;
pub mod board;
pub mod cartridge;
pub mod input;
pub mod network;
pub mod output;
pub mod ppu;
pub mod reference;

pub use board::{Board, Frame, Lines};
pub use cartridge::{Cartridge, CartridgeError, Mirroring};
pub use input::InputSchedule;
pub use network::{NetworkDevices, Recorder};
pub use reference::ReferenceNes;
