//! The board driven by the reference interpreter (`--cpu reference`): the check on the network, never its
//! driver. Its memory map is the woven NES map's (`isa_6502::front::nes_location`): 2 KiB of RAM mirrored
//! through $1FFF, the IO registers on the [`Board`], memory elsewhere (PRG RAM at $6000), so the two CPUs see
//! the same machine. The PRG ROM at $8000-$FFFF is read through the cartridge's banks and writes there go to
//! its mapper, as the network's do (`--cpu network` runs a ROM only while its banks stay where they started).

use crate::board::Board;
use isa_6502::front::{CpuState, ProgramImage, nes_location};
use isa_6502::{Bus, Cpu, Fault};

/// The interpreter, its memory and the board.
pub struct ReferenceNes {
    pub cpu: Cpu,
    /// The 64 KiB the NES map keeps in memory (RAM at $0000-$07FF, PRG RAM, PRG ROM at their addresses).
    pub memory: Vec<u8>,
    pub board: Board,
    /// Instructions (and interrupt sequences) run.
    pub instructions: u64,
}

struct RefBus<'a> {
    memory: &'a mut [u8],
    board: &'a mut Board,
    cycle: u64,
    dma_page: Option<u8>,
}

impl Bus for RefBus<'_> {
    fn read(&mut self, addr: u16) -> u8 {
        let v = match nes_location(addr) {
            Some(a) if a >= 0x8000 => self.board.prg_byte(a),
            Some(a) => self.memory[usize::from(a)],
            None => self.board.read(addr, self.cycle),
        };
        self.cycle += 1;
        v
    }
    fn write(&mut self, addr: u16, value: u8) {
        match nes_location(addr) {
            Some(a) if a >= 0x8000 => self.board.write(a, value, self.cycle),
            Some(a) => self.memory[usize::from(a)] = value,
            None => {
                if addr == 0x4014 {
                    self.dma_page = Some(value);
                }
                self.board.write(addr, value, self.cycle);
            }
        }
        self.cycle += 1;
    }
}

impl ReferenceNes {
    /// The interpreter at `image`'s start state (after the reset sequence) with `board`.
    pub fn new(image: &ProgramImage, board: Board) -> Self {
        let start: CpuState = image.start;
        let mut r = ReferenceNes { cpu: start.cpu(), memory: image.memory(), board, instructions: 0 };
        // The network's boot step is a boundary at the start state's cycle: sample the lines there too.
        let lines = r.board.boundary(r.cpu.cycles);
        r.cpu.set_lines(lines);
        r
    }

    /// Run one instruction (or interrupt sequence), an OAM DMA it starts, and the board up to its end; the
    /// interrupt lines for the next one are set from the board (and, before a DMA, those its store's poll sees).
    pub fn step(&mut self) -> Result<(), Fault> {
        let mut bus = RefBus { memory: &mut self.memory, board: &mut self.board, cycle: self.cpu.cycles, dma_page: None };
        self.cpu.step(&mut bus)?;
        if let Some(page) = bus.dma_page {
            // The page as the network's DMA reads it: memory through the NES map, 0 on the IO pages.
            let bytes: Vec<u8> = (0..=255u16)
                .map(|k| match nes_location((u16::from(page) << 8) | k) {
                    Some(a) if a >= 0x8000 => self.board.prg_byte(a),
                    Some(a) => self.memory[usize::from(a)],
                    None => 0,
                })
                .collect();
            let lines = self.board.boundary(self.cpu.cycles);
            self.cpu.set_lines(lines);
            self.board.oam_dma(&bytes);
            self.cpu.dma(isa_6502::oam_dma_cycles(self.cpu.cycles));
        }
        let lines = self.board.boundary(self.cpu.cycles);
        self.cpu.set_lines(lines);
        self.instructions += 1;
        Ok(())
    }

    /// blargg's test protocol in PRG RAM: the status at $6000 once final (< $80, with DE B0 61 at $6001) and
    /// the text from $6004.
    pub fn test_result(&self) -> Option<(u8, String)> {
        test_result(&self.memory)
    }
}

/// blargg's test protocol read from a 64 KiB memory image: `(status, text)` once the status is final.
pub fn test_result(m: &[u8]) -> Option<(u8, String)> {
    if m[0x6001..0x6004] == [0xDE, 0xB0, 0x61] && m[0x6000] < 0x80 {
        let text: Vec<u8> = m[0x6004..].iter().take_while(|&&b| b != 0).copied().collect();
        Some((m[0x6000], String::from_utf8_lossy(&text).into_owned()))
    } else {
        None
    }
}
