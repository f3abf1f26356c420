//! The board around the CPU: the PPU, the APU, the two pads and the cartridge's CHR, clocked from the CPU's
//! cycle count. The CPU (the woven network, or the reference interpreter) reaches it only through its IO
//! registers ($2000-$3FFF, $4000-$401F), OAM DMA, and the interrupt lines it reads between instructions.
//!
//! **Timing.** The board runs its devices up to the CPU cycle of each IO access before performing it (three
//! PPU dots and one APU cycle per CPU cycle), so a read of $2002 sees the PPU as it was on that cycle. The
//! network announces the cycle of an IO read within its instruction on port `IO_READ`; a write happens on the
//! instruction's last cycle. The board samples the PPU's NMI output once per CPU cycle (after the cycle's first
//! dot) and the APU's IRQ output after each CPU cycle. At each instruction boundary it reports them as
//! [`Lines`]: a new NMI edge with its age in cycles, the IRQ level on the last two cycles but one; the CPU
//! decides what its poll saw (the wiki's "CPU interrupts": the poll at the end of the second-to-last cycle, a
//! cycle earlier for a taken branch on its page, none in BRK and the interrupt sequences, which an early NMI
//! hijacks). These choices make blargg's ppu_vbl_nmi, vbl_nmi_timing and cpu_interrupts_v2 pass to the clock.
//! Both CPU drivers use exactly this model, so the same program gives the same frames and samples on both.

use crate::apu::Apu;
use crate::cartridge::Cartridge;
use crate::input::{InputSchedule, LiveButtons, Pad};
use crate::ppu::Ppu;

/// A finished picture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Frames finished before it (the first is 0).
    pub number: u64,
    /// Palette indices (0-63), 256 x 240, row-major.
    pub pixels: Vec<u8>,
}

pub use isa_6502::Lines;

/// PPU dots run before the CPU's first cycle (see [`Board::new`]).
pub const POWER_ON_DOTS: u32 = 2;

/// The NES board outside the CPU.
pub struct Board {
    pub ppu: Ppu,
    pub apu: Apu,
    pub pads: [Pad; 2],
    input: InputSchedule,
    live: LiveButtons,
    /// CPU cycles the devices have run.
    cycle: u64,
    nmi_output: bool,
    /// The CPU cycle of a rising edge of the PPU's NMI output not yet reported to the CPU.
    nmi_edge: Option<u64>,
    /// The APU's IRQ output after each of the last eight CPU cycles (bit 0: the latest).
    irq_history: u8,
    frames: Vec<Frame>,
    finished: u64,
}

impl Board {
    /// The board at power-on with `cart` and the buttons of `input`.
    pub fn new(cart: Cartridge, input: InputSchedule) -> Self {
        let ppu = Ppu::new(cart);
        let mut b = Board {
            ppu,
            apu: Apu::new(),
            pads: [Pad::default(), Pad::default()],
            input,
            live: LiveButtons::default(),
            cycle: 0,
            nmi_output: false,
            nmi_edge: None,
            irq_history: 0,
            frames: Vec::new(),
            finished: 0,
        };
        b.set_buttons();
        // Power-on alignment: the PPU runs two dots ahead of the CPU's cycle count. Hardware's alignment varies
        // from one power-on to the next; this is `tetanes-core`'s, so that frames compare exactly with it (with
        // the PPU in step, the games of `nes/games` whose frames differed from tetanes' only in the frame where
        // rendering turns on, or by a frame throughout, equal it: `tests/tetanes.rs`).
        for _ in 0..POWER_ON_DOTS {
            b.ppu.tick();
        }
        b
    }

    /// Buttons held live on pad 1 (a window's keyboard), added to the schedule's from the next frame on.
    pub fn set_live(&mut self, live: LiveButtons) {
        self.live = live;
    }

    fn set_buttons(&mut self) {
        let (p1, p2) = self.input.at(self.finished);
        self.pads[0].buttons = p1 | self.live.get();
        self.pads[1].buttons = p2;
    }

    /// CPU cycles the devices have run.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// Frames finished so far.
    pub fn frames_finished(&self) -> u64 {
        self.finished
    }

    fn watch_nmi(&mut self) {
        let out = self.ppu.nmi_line();
        if out && !self.nmi_output {
            self.nmi_edge.get_or_insert(self.cycle);
        }
        self.nmi_output = out;
    }

    /// Run the devices up to CPU cycle `cycle` (nothing when they are there already).
    pub fn run_to(&mut self, cycle: u64) {
        while self.cycle < cycle {
            let cart = &self.ppu.cart;
            self.apu.clock(&mut |a| cart.prg_byte(a));
            for phase in 0..3 {
                self.ppu.tick();
                if phase == 0 {
                    self.watch_nmi();
                }
                if let Some(px) = self.ppu.take_frame() {
                    self.frames.push(Frame { number: self.finished, pixels: px.to_vec() });
                    self.finished += 1;
                    self.set_buttons();
                }
            }
            self.irq_history = (self.irq_history << 1) | u8::from(self.apu.irq() || self.ppu.cart.mapper.irq());
            self.cycle += 1;
        }
    }

    /// A CPU read of IO register `addr` ($2000-$401F) on CPU cycle `cycle`.
    pub fn read(&mut self, addr: u16, cycle: u64) -> u8 {
        self.run_to(cycle);
        match addr {
            0x2000..=0x3FFF => self.ppu.read_register(addr & 7),
            0x4015 => self.apu.read_status(),
            // Bits 5-7 are open bus: the high byte of the address, $40.
            0x4016 => 0x40 | self.pads[0].read(),
            0x4017 => 0x40 | self.pads[1].read(),
            _ => (addr >> 8) as u8,
        }
    }

    /// A CPU write of `value` to IO register `addr` ($2000-$401F) or to the cartridge's mapper ($8000-$FFFF)
    /// on CPU cycle `cycle`. $4014 (OAM DMA) is the CPU side's: it passes the page to [`Board::oam_dma`].
    pub fn write(&mut self, addr: u16, value: u8, cycle: u64) {
        self.run_to(cycle);
        match addr {
            0x8000..=0xFFFF => self.ppu.cart.cpu_write(addr, value, cycle),
            0x2000..=0x3FFF => self.ppu.write_register(addr & 7, value),
            0x4016 => {
                self.pads[0].write_strobe(value);
                self.pads[1].write_strobe(value);
            }
            0x4014 => {}
            0x4000..=0x4017 => self.apu.write(addr, value),
            _ => {}
        }
    }

    /// The PRG ROM byte the CPU reads at `addr` ($8000-$FFFF) through the mapper's banks now.
    pub fn prg_byte(&self, addr: u16) -> u8 {
        self.ppu.cart.prg_byte(addr)
    }

    /// OAM DMA: 256 bytes written through $2004.
    pub fn oam_dma(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.ppu.write_oam(b);
        }
    }

    /// Run to `cycle`, an instruction boundary, and report the interrupt lines to the CPU: a rising edge of the
    /// PPU's NMI output not reported before, with its age (sampled in the boundary's last cycle: 1; 4 and more
    /// are one class), and the APU's IRQ output as the CPU's two poll points see it: bit 0 the output after the
    /// third cycle from the end (it reaches the CPU's level detector in the next cycle, whose end is the
    /// instruction's poll), bit 1 a cycle earlier. blargg's cpu_interrupts_v2 3-5 measure this to the cycle.
    pub fn boundary(&mut self, cycle: u64) -> Lines {
        self.run_to(cycle);
        let nmi_age = match self.nmi_edge {
            Some(c) if c < cycle => {
                self.nmi_edge = None;
                (cycle - c).min(u64::from(Lines::NMI_AGE_MAX)) as u8
            }
            _ => 0,
        };
        Lines { nmi_age, irq: (self.irq_history >> 2) & 3 }
    }

    /// The frames finished since the last call.
    pub fn take_frames(&mut self) -> Vec<Frame> {
        std::mem::take(&mut self.frames)
    }

    /// The audio samples (signed 16-bit, mono, [`crate::apu::SAMPLE_RATE`] Hz) since the last call.
    pub fn take_samples(&mut self) -> Vec<i16> {
        self.apu.take_samples()
    }
}
