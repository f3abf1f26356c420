//! The NES host around the woven 2A03, the light host Nesformer also keeps: it draws, plays and
//! reads the controllers; the CPU, its RAM and the cartridge program run in the network (or, to check the
//! network, in the reference interpreter).
//!
//! - [`cartridge`]: iNES / NES 2.0 files, CHR ROM or RAM, nametable mirroring;
//! - [`mapper`]: the boards' bank switching, mappers 0-4 (NROM, MMC1, UxROM, CNROM, MMC3) and MMC3's scanline IRQ;
//! - [`ppu`]: the 2C02 (NTSC), dot by dot;
//! - [`apu`]: pulse, triangle, noise, DMC, the frame counter, mixed to 44.1 kHz;
//! - [`input`]: the standard pads, button schedules from an input file or an FCEUX movie;
//! - [`board`]: the devices clocked from the CPU's cycle count, its IO registers and interrupt lines;
//! - [`network`]: the board as host devices of the woven NES-map machine (`--cpu network`);
//! - [`reference`]: the board driven by the reference interpreter (`--cpu reference`), to check the network;
//! - [`output`]: PNG frames, an animated GIF, WAV audio, frame and audio hashes;
//! - [`window`] (feature `window`, on by default): the frames in a window, pad 1 from its keyboard.

pub mod apu;
pub mod board;
pub mod cartridge;
pub mod input;
pub mod mapper;
pub mod network;
pub mod output;
pub mod ppu;
pub mod reference;
#[cfg(feature = "window")]
pub mod window;

pub use board::{Board, Frame, Lines};
pub use cartridge::{Cartridge, CartridgeError, Mirroring};
pub use input::{InputSchedule, LiveButtons};
pub use network::{NetworkDevices, Recorder};
pub use reference::ReferenceNes;

use isa_6502::circuit::{PrgBanking, PrgRom};
use isa_6502::front::{CpuState, MemoryMap, Mos6502Keys, Mos6502Machine, ProgramImage};

/// Why the host cannot load a ROM, run the reference CPU or open its window.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NesError {
    /// The ROM file `name` is not a cartridge the board runs.
    #[error("{name}: {source}")]
    Rom { name: String, source: CartridgeError },
    /// The reference CPU faulted; the message is [`reference_frames`]'s (`after N instructions: ...`).
    #[error("{0}")]
    Fault(String),
    /// No window could be opened (`--window`, no display); the window library's message.
    #[error("--window: cannot open a window ({0}); is there a display (DISPLAY)?")]
    Window(String),
}

/// The woven NES-map machine's keys (`configs/nes.toml`).
pub fn nes_machine() -> Mos6502Machine {
    Mos6502Machine { keys: Mos6502Keys { map: MemoryMap::Nes, ..Default::default() } }
}

/// The NES-map machine for `cart`: its memory holds the whole PRG ROM where the circuit runs the board's PRG
/// banking (UxROM, MMC1 and MMC3, 32-512 KiB), else the 32 KiB the CPU sees at power-on ([`nes_machine`]; NROM
/// and CNROM never move them).
pub fn nes_machine_for(cart: &Cartridge) -> Mos6502Machine {
    let kib = (cart.prg.len() / 1024) as u32;
    let mut m = nes_machine();
    let (banking, most) = match cart.mapper {
        mapper::Mapper::Uxrom(_) => (PrgBanking::Uxrom, 512),
        mapper::Mapper::Mmc3(_) => (PrgBanking::Mmc3, 512),
        // 512 KiB MMC1 boards (SUROM) take the PRG ROM's half from CHR bank 0's bit 4 (`MMC1_OUTER`).
        mapper::Mapper::Mmc1(_) => (PrgBanking::Mmc1, 512),
        _ => (PrgBanking::Fixed, 32),
    };
    if banking != PrgBanking::Fixed && kib.is_power_of_two() && (32..=most).contains(&kib) {
        m.keys.prg = PrgRom { kib, banking };
    }
    m
}

/// An iNES file as a cartridge for the board and the CPU's start image: the 32 KiB of PRG ROM its mapper shows
/// at $8000-$FFFF at power-on, the state after reset with PC from the reset vector there. `name` names the file
/// in errors.
pub fn load_rom(name: &str, bytes: &[u8]) -> Result<(Cartridge, ProgramImage), NesError> {
    let cart = Cartridge::parse(bytes).map_err(|source| NesError::Rom { name: name.to_string(), source })?;
    let view = cart.prg_view();
    let pc = u16::from_le_bytes([view[0x7FFC], view[0x7FFD]]);
    let bytes = view.iter().enumerate().map(|(i, &b)| (0x8000 + i as u16, b)).collect();
    let prg_rom = Some(cart.prg.clone());
    Ok((cart, ProgramImage { bytes, start: CpuState::after_reset(pc), prg_rom }))
}

/// Run `rom` on the reference CPU for `frames` frames, handing frames and samples to `recorder`. Returns the
/// instructions run. Stops early at an interpreter fault (an error naming it).
pub fn run_reference(cart: Cartridge, image: &ProgramImage, input: InputSchedule, frames: u64, recorder: &mut dyn Recorder) -> Result<ReferenceNes, NesError> {
    match run_reference_to_fault(cart, image, input, frames, recorder) {
        (nes, None) => Ok(nes),
        (_, Some(fault)) => Err(NesError::Fault(fault)),
    }
}

/// [`run_reference`], but a fault ends the run with what it recorded so far: the machine and, after a fault,
/// its message (`after N instructions: ...`).
pub fn run_reference_to_fault(cart: Cartridge, image: &ProgramImage, input: InputSchedule, frames: u64, recorder: &mut dyn Recorder) -> (ReferenceNes, Option<String>) {
    let mut nes = ReferenceNes::new(image, Board::new(cart, input));
    let fault = reference_frames(&mut nes, frames, recorder, |_, _| {});
    (nes, fault)
}

/// The reference CPU's frame loop, the one every host runs (`loom nes --cpu reference`, the tests): step `nes`
/// until `frames` frames are finished, `recorder` says stop or the CPU faults. Each finished frame goes to the
/// recorder and then to `on_frame(frame, instructions so far)` (a progress line), the samples after each frame
/// and at the end. Returns the fault (`after N instructions: ...`), if any.
pub fn reference_frames(nes: &mut ReferenceNes, frames: u64, recorder: &mut dyn Recorder, mut on_frame: impl FnMut(&Frame, u64)) -> Option<String> {
    let mut fault = None;
    while nes.board.frames_finished() < frames && !recorder.stop() {
        if let Err(f) = nes.step() {
            fault = Some(format!("after {} instructions: {f}", nes.instructions));
            break;
        }
        let finished = nes.board.take_frames();
        for f in &finished {
            recorder.frame(f);
            on_frame(f, nes.instructions);
        }
        if !finished.is_empty() {
            recorder.samples(&nes.board.take_samples());
        }
    }
    recorder.samples(&nes.board.take_samples());
    fault
}


/// Our demo ROM (`demo/demo.s`, built by `demo/build.sh` with Debian's cc65): what `loom nes` runs by default.
pub const DEMO_ROM: &[u8] = include_bytes!("../demo/demo.nes");
/// The demo's button schedule (`demo/input.txt`): it drives the player sprite.
pub const DEMO_INPUT: &str = include_str!("../demo/input.txt");
