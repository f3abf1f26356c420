//! The reference interpreter: CHIP-8 as the COSMAC VIP ran it (Cowgod's technical reference, the CHIP-8
//! research of Timendus' test suite), with these choices (the "quirks"):
//!
//! - `8XY6` / `8XYE` shift **VY** into VX (VF = the bit shifted out);
//! - `FX55` / `FX65` leave **I incremented** by X + 1;
//! - `BNNN` jumps to NNN + **V0**;
//! - `8XY1` / `8XY2` / `8XY3` reset **VF to 0**;
//! - `DXYN` wraps the start position (X mod 64, Y mod 32) and **clips** the sprite at the screen's edges;
//! - `DXYN` **waits for the display**: as on the COSMAC VIP, whose interpreter draws right after the vertical
//!   blank interrupt, it runs only in a step that a host tick (the 60 Hz frame) came before; until then it waits
//!   like `FX0A` (PC stays, the LFSR steps), so at most one sprite is drawn per frame;
//! - `FX0A` waits while no key is held, then takes the lowest key held (no wait for the release);
//! - `CXNN`: the random byte is the low byte of a 16-bit Galois LFSR (taps 0xB400, seed 0xACE1) that steps once
//!   per instruction;
//! - the delay and sound timers count down by one at each host tick; an instruction that sets a timer in the
//!   step of a tick wins over the tick, and one that reads it sees the value before the tick;
//! - `0NNN` (a machine-code call) and the opcodes no CHIP-8 has fault.
//!
//! Memory: 4 KiB; programs load at 0x200; the font (16 glyphs of 5 bytes) at 0x000. Display 64 x 32.

/// The 16 font glyphs, 5 bytes each (Cowgod's reference, 2.4).
pub const FONT: [u8; 80] = [
    0xF0, 0x90, 0x90, 0x90, 0xF0, 0x20, 0x60, 0x20, 0x20, 0x70, 0xF0, 0x10, 0xF0, 0x80, 0xF0, 0xF0, 0x10, 0xF0, 0x10, 0xF0, //
    0x90, 0x90, 0xF0, 0x10, 0x10, 0xF0, 0x80, 0xF0, 0x10, 0xF0, 0xF0, 0x80, 0xF0, 0x90, 0xF0, 0xF0, 0x10, 0x20, 0x40, 0x40, //
    0xF0, 0x90, 0xF0, 0x90, 0xF0, 0xF0, 0x90, 0xF0, 0x10, 0xF0, 0xF0, 0x90, 0xF0, 0x90, 0x90, 0xE0, 0x90, 0xE0, 0x90, 0xE0, //
    0xF0, 0x80, 0x80, 0x80, 0xF0, 0xE0, 0x90, 0x90, 0x90, 0xE0, 0xF0, 0x80, 0xF0, 0x80, 0xF0, 0xF0, 0x80, 0xF0, 0x80, 0x80,
];

/// Where programs load.
pub const PROGRAM_BASE: u16 = 0x200;
/// The LFSR's first state.
pub const LFSR_SEED: u16 = 0xACE1;

/// One step of the LFSR.
pub fn lfsr_next(s: u16) -> u16 {
    (s >> 1) ^ if s & 1 == 1 { 0xB400 } else { 0 }
}

/// Why the machine stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// An opcode CHIP-8 does not have (or `0NNN`), at `pc`.
    Illegal { pc: u16, opcode: u16 },
}

/// A CHIP-8 machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chip8 {
    pub ram: Vec<u8>,
    pub v: [u8; 16],
    pub i: u16,
    pub pc: u16,
    pub sp: u8,
    pub stack: [u16; 16],
    pub dt: u8,
    pub st: u8,
    pub lfsr: u16,
    /// Row y, bit x = pixel (x, y).
    pub screen: [u64; 32],
    /// Keys held, bit k = key k.
    pub keys: u16,
}

impl Chip8 {
    /// A machine with the font at 0 and `program` at 0x200; `None` if it does not fit.
    pub fn new(program: &[u8]) -> Option<Self> {
        if program.len() > 4096 - PROGRAM_BASE as usize {
            return None;
        }
        let mut ram = vec![0u8; 4096];
        ram[..80].copy_from_slice(&FONT);
        ram[0x200..0x200 + program.len()].copy_from_slice(program);
        Some(Chip8 { ram, v: [0; 16], i: 0, pc: PROGRAM_BASE, sp: 0, stack: [0; 16], dt: 0, st: 0, lfsr: LFSR_SEED, screen: [0; 32], keys: 0 })
    }

    /// Run one instruction; `tick`: a host tick came before it.
    pub fn step(&mut self, tick: bool) -> Result<(), Fault> {
        let pc = self.pc;
        let op = u16::from(self.ram[pc as usize & 0xFFF]) << 8 | u16::from(self.ram[(pc as usize + 1) & 0xFFF]);
        let (x, y) = (((op >> 8) & 0xF) as usize, ((op >> 4) & 0xF) as usize);
        let (n, nn, nnn) = ((op & 0xF) as u8, (op & 0xFF) as u8, op & 0xFFF);
        let (vx, vy) = (self.v[x], self.v[y]);
        let (dt0, st0) = (self.dt, self.st);
        let (mut dt_set, mut st_set) = (false, false);
        let mut next = pc.wrapping_add(2) & 0xFFF;
        let illegal = Err(Fault::Illegal { pc, opcode: op });
        match op >> 12 {
            0x0 => match op {
                0x00E0 => self.screen = [0; 32],
                0x00EE => {
                    self.sp = self.sp.wrapping_sub(1) & 0xF;
                    next = self.stack[self.sp as usize];
                }
                _ => return illegal,
            },
            0x1 => next = nnn,
            0x2 => {
                self.stack[self.sp as usize] = next;
                self.sp = (self.sp + 1) & 0xF;
                next = nnn;
            }
            0x3 => next = if vx == nn { next + 2 } else { next },
            0x4 => next = if vx != nn { next + 2 } else { next },
            0x5 if n == 0 => next = if vx == vy { next + 2 } else { next },
            0x6 => self.v[x] = nn,
            0x7 => self.v[x] = vx.wrapping_add(nn),
            0x8 => {
                let (r, f) = match n {
                    0x0 => (vy, None),
                    0x1 => (vx | vy, Some(0)),
                    0x2 => (vx & vy, Some(0)),
                    0x3 => (vx ^ vy, Some(0)),
                    0x4 => {
                        let (r, c) = vx.overflowing_add(vy);
                        (r, Some(c as u8))
                    }
                    0x5 => (vx.wrapping_sub(vy), Some((vx >= vy) as u8)),
                    0x6 => (vy >> 1, Some(vy & 1)),
                    0x7 => (vy.wrapping_sub(vx), Some((vy >= vx) as u8)),
                    0xE => (vy << 1, Some(vy >> 7)),
                    _ => return illegal,
                };
                self.v[x] = r;
                if let Some(f) = f {
                    self.v[15] = f;
                }
            }
            0x9 if n == 0 => next = if vx != vy { next + 2 } else { next },
            0xA => self.i = nnn,
            0xB => next = (nnn + u16::from(self.v[0])) & 0xFFF,
            0xC => self.v[x] = (self.lfsr as u8) & nn,
            0xD if !tick => next = pc,
            0xD => {
                let (x0, y0) = (u32::from(vx) % 64, u32::from(vy) % 32);
                let mut hit = 0;
                for r in 0..u32::from(n) {
                    let row = y0 + r;
                    if row >= 32 {
                        break;
                    }
                    let byte = self.ram[(self.i as usize + r as usize) & 0xFFF];
                    // Bit x of a row is pixel x; the sprite's bit 7 is its leftmost pixel; bits past 63 are clipped.
                    let mask = u64::from(byte.reverse_bits()) << x0;
                    let cur = self.screen[row as usize];
                    hit |= (cur & mask != 0) as u8;
                    self.screen[row as usize] = cur ^ mask;
                }
                self.v[15] = hit;
            }
            0xE if nn == 0x9E => next = if self.keys >> (vx & 0xF) & 1 == 1 { next + 2 } else { next },
            0xE if nn == 0xA1 => next = if self.keys >> (vx & 0xF) & 1 == 0 { next + 2 } else { next },
            0xF => match nn {
                0x07 => self.v[x] = dt0,
                0x0A => {
                    if self.keys == 0 {
                        next = pc;
                    } else {
                        self.v[x] = self.keys.trailing_zeros() as u8;
                    }
                }
                0x15 => {
                    self.dt = vx;
                    dt_set = true;
                }
                0x18 => {
                    self.st = vx;
                    st_set = true;
                }
                0x1E => self.i = (self.i + u16::from(vx)) & 0xFFF,
                0x29 => self.i = u16::from(vx & 0xF) * 5,
                0x33 => {
                    for (k, d) in [vx / 100, vx / 10 % 10, vx % 10].into_iter().enumerate() {
                        self.ram[(self.i as usize + k) & 0xFFF] = d;
                    }
                }
                0x55 => {
                    for r in 0..=x {
                        self.ram[(self.i as usize + r) & 0xFFF] = self.v[r];
                    }
                    self.i = (self.i + x as u16 + 1) & 0xFFF;
                }
                0x65 => {
                    for r in 0..=x {
                        self.v[r] = self.ram[(self.i as usize + r) & 0xFFF];
                    }
                    self.i = (self.i + x as u16 + 1) & 0xFFF;
                }
                _ => return illegal,
            },
            _ => return illegal,
        }
        if tick && !dt_set {
            self.dt = dt0.saturating_sub(1);
        }
        if tick && !st_set {
            self.st = st0.saturating_sub(1);
        }
        self.pc = next & 0xFFF;
        self.lfsr = lfsr_next(self.lfsr);
        Ok(())
    }
}
