//! The 2C02 PPU (NTSC), dot by dot, written from the NESdev wiki ("PPU registers", "PPU scrolling", "PPU
//! rendering", "PPU sprite evaluation", "PPU OAM", "PPU palettes", "PPU memory map").
//!
//! A frame is 262 scanlines of 341 dots: 240 visible lines, the post-render line 240, vertical blank from line
//! 241 (its flag and the NMI at dot 1), and the pre-render line 261, which clears the flags and reloads the
//! vertical scroll; on odd frames with rendering on it is one dot shorter. The background is fetched eight
//! dots per tile into 16-bit shift registers, with the loopy `v`/`t`/`x`/`w` scroll registers; sprites are
//! evaluated for the next line at dot 257 (eight per line, the overflow flag with the hardware's diagonal
//! search), drawn with their priority, and sprite 0's hit sets its flag at the first overlap of opaque pixels.
//!
//! Simplified, as no NROM game depends on it: sprite evaluation and the sprite pattern fetches happen at once
//! at dot 257 rather than spread over dots 65-320 (the address bus's A12, which MMC3 counts, follows the
//! hardware's fetch timing); the open-bus latch does not decay; color emphasis bits are not applied to the
//! picture (greyscale is).

use crate::cartridge::Cartridge;
#[cfg(test)]
use crate::cartridge::Mirroring;

/// Visible picture width in pixels.
pub const WIDTH: usize = 256;
/// Visible picture height in pixels.
pub const HEIGHT: usize = 240;
/// Dots per scanline.
pub const DOTS: u16 = 341;
/// Scanlines per frame (NTSC).
pub const LINES: u16 = 262;

/// One sprite selected for the line being drawn.
#[derive(Clone, Copy, Debug, Default)]
struct LineSprite {
    x: u8,
    attr: u8,
    lo: u8,
    hi: u8,
    zero: bool,
    /// Its pattern fetch reads the table at $1000 (PPU A12 high).
    high_table: bool,
}

/// The PPU, its VRAM, palette RAM, OAM and the cartridge's CHR.
pub struct Ppu {
    /// $2000.
    pub ctrl: u8,
    /// $2001.
    pub mask: u8,
    vblank: bool,
    /// The odd frame's dot skip, decided while rendering is on near the pre-render line's end.
    skip_dot: bool,
    /// A $2002 read on the dot before vertical blank begins: the flag is not set this frame.
    suppress_vblank: bool,
    sprite0_hit: bool,
    overflow: bool,
    /// $2003.
    pub oam_addr: u8,
    /// Object attribute memory: 64 sprites of (Y, tile, attributes, X).
    pub oam: [u8; 256],
    v: u16,
    t: u16,
    x: u8,
    w: bool,
    read_buffer: u8,
    /// The last value on the PPU's CPU data bus (what write-only registers read back).
    latch: u8,
    vram: [u8; 0x1000],
    palette: [u8; 32],
    /// The cartridge: CHR through its banks, the nametable layout, the mapper watching A12 (the board reaches
    /// its PRG side through here too).
    pub cart: Cartridge,
    /// Dots since power-on (MMC3's A12 filter measures in dots).
    dots: u64,
    /// Current scanline (0-261) and dot (0-340).
    pub scanline: u16,
    pub dot: u16,
    /// Frames begun since power-on (the odd/even frame parity).
    pub frame: u64,
    // Background pipeline.
    next_tile: u8,
    next_attr: u8,
    next_lo: u8,
    next_hi: u8,
    shift_lo: u16,
    shift_hi: u16,
    shift_attr_lo: u16,
    shift_attr_hi: u16,
    sprites: [LineSprite; 8],
    sprite_count: usize,
    /// The picture being drawn: palette indices (0-63), row-major, 256 x 240.
    pixels: Vec<u8>,
    /// Set when a frame's last visible dot has been drawn; taken by [`Ppu::take_frame`].
    frame_ready: bool,
}

impl Ppu {
    /// The PPU at power-on with the cartridge: scanline 0, dot 0, registers clear.
    pub fn new(cart: Cartridge) -> Self {
        Ppu {
            ctrl: 0,
            mask: 0,
            vblank: false,
            skip_dot: false,
            suppress_vblank: false,
            sprite0_hit: false,
            overflow: false,
            oam_addr: 0,
            oam: [0; 256],
            v: 0,
            t: 0,
            x: 0,
            w: false,
            read_buffer: 0,
            latch: 0,
            vram: [0; 0x1000],
            palette: [0; 32],
            cart,
            dots: 0,
            scanline: 0,
            dot: 0,
            frame: 0,
            next_tile: 0,
            next_attr: 0,
            next_lo: 0,
            next_hi: 0,
            shift_lo: 0,
            shift_hi: 0,
            shift_attr_lo: 0,
            shift_attr_hi: 0,
            sprites: [LineSprite::default(); 8],
            sprite_count: 0,
            pixels: vec![0; WIDTH * HEIGHT],
            frame_ready: false,
        }
    }

    /// The NMI output: vertical blank while $2000 bit 7 enables it (the CPU takes its rising edge).
    pub fn nmi_line(&self) -> bool {
        self.vblank && self.ctrl & 0x80 != 0
    }

    fn rendering(&self) -> bool {
        self.mask & 0x18 != 0
    }

    // --- PPU memory ---------------------------------------------------------------------------------------------

    fn palette_index(addr: u16) -> usize {
        let i = usize::from(addr & 0x1F);
        // $3F10/$3F14/$3F18/$3F1C are $3F00/$3F04/$3F08/$3F0C.
        if i & 0x13 == 0x10 { i & 0x0F } else { i }
    }

    fn mem_read(&self, addr: u16) -> u8 {
        let addr = addr & 0x3FFF;
        match addr {
            0x0000..=0x1FFF => self.cart.chr_byte(addr),
            0x2000..=0x3EFF => self.vram[self.cart.nametables().vram_offset(addr)],
            _ => self.palette[Self::palette_index(addr)],
        }
    }

    fn mem_write(&mut self, addr: u16, value: u8) {
        let addr = addr & 0x3FFF;
        match addr {
            0x0000..=0x1FFF => self.cart.chr_write(addr, value),
            0x2000..=0x3EFF => self.vram[self.cart.nametables().vram_offset(addr)] = value,
            _ => self.palette[Self::palette_index(addr)] = value & 0x3F,
        }
    }

    // --- CPU registers ------------------------------------------------------------------------------------------

    /// A CPU read of register `reg` (the address's low three bits: $2000 + reg, mirrored through $3FFF).
    pub fn read_register(&mut self, reg: u16) -> u8 {
        let value = match reg & 7 {
            2 => {
                let s = (u8::from(self.vblank) << 7) | (u8::from(self.sprite0_hit) << 6) | (u8::from(self.overflow) << 5);
                self.vblank = false;
                self.w = false;
                if self.scanline == 241 && self.dot == 1 {
                    self.suppress_vblank = true;
                }
                s | (self.latch & 0x1F)
            }
            4 => {
                let b = self.oam[usize::from(self.oam_addr)];
                // Attribute bits 2-4 do not exist.
                if self.oam_addr & 3 == 2 { b & 0xE3 } else { b }
            }
            7 => {
                let addr = self.v & 0x3FFF;
                let v = if addr >= 0x3F00 {
                    // Palette reads are immediate (upper bits from the bus); the buffer takes the nametable
                    // byte underneath.
                    self.read_buffer = self.mem_read(addr - 0x1000);
                    (self.mem_read(addr) & 0x3F) | (self.latch & 0xC0)
                } else {
                    let b = self.read_buffer;
                    self.read_buffer = self.mem_read(addr);
                    b
                };
                self.increment_v();
                v
            }
            _ => self.latch,
        };
        self.latch = value;
        value
    }

    /// A CPU write of `value` to register `reg` ($2000 + reg).
    pub fn write_register(&mut self, reg: u16, value: u8) {
        self.latch = value;
        match reg & 7 {
            0 => {
                self.ctrl = value;
                self.t = (self.t & !0x0C00) | (u16::from(value & 3) << 10);
            }
            1 => self.mask = value,
            3 => self.oam_addr = value,
            4 => self.write_oam(value),
            5 => {
                if !self.w {
                    self.t = (self.t & !0x001F) | u16::from(value >> 3);
                    self.x = value & 7;
                } else {
                    self.t = (self.t & !0x73E0) | (u16::from(value & 7) << 12) | (u16::from(value >> 3) << 5);
                }
                self.w = !self.w;
            }
            6 => {
                if !self.w {
                    self.t = (self.t & 0x00FF) | (u16::from(value & 0x3F) << 8);
                } else {
                    self.t = (self.t & 0xFF00) | u16::from(value);
                    self.v = self.t;
                }
                self.w = !self.w;
            }
            7 => {
                self.mem_write(self.v, value);
                self.increment_v();
            }
            _ => {}
        }
    }

    /// One byte written to OAM at OAMADDR, which advances ($2004 writes and OAM DMA). While rendering (the
    /// visible lines and the pre-render line, background or sprites on) OAM keeps its bytes and OAMADDR takes
    /// the glitchy increment of its high six bits (the wiki's "PPU registers", OAMDATA). An attribute byte keeps
    /// bits 0-1 and 5-7 (the others do not exist).
    pub fn write_oam(&mut self, value: u8) {
        if (self.scanline < 240 || self.scanline == 261) && self.rendering() {
            self.oam_addr = self.oam_addr.wrapping_add(4);
            return;
        }
        let value = if self.oam_addr & 3 == 2 { value & 0xE3 } else { value };
        self.oam[usize::from(self.oam_addr)] = value;
        self.oam_addr = self.oam_addr.wrapping_add(1);
    }

    fn increment_v(&mut self) {
        if self.scanline < 240 && self.rendering() {
            // During rendering a $2007 access bumps the scroll: coarse X and Y at once (the wiki's "PPU
            // scrolling", "$2007 reads and writes"), as tetanes-core does.
            self.increment_x();
            self.increment_y();
            return;
        }
        self.v = self.v.wrapping_add(if self.ctrl & 0x04 != 0 { 32 } else { 1 }) & 0x7FFF;
    }

    // --- scrolling (the wiki's "PPU scrolling" pseudo-code) -----------------------------------------------------

    fn increment_x(&mut self) {
        if self.v & 0x001F == 31 {
            self.v &= !0x001F;
            self.v ^= 0x0400;
        } else {
            self.v += 1;
        }
    }

    fn increment_y(&mut self) {
        if self.v & 0x7000 != 0x7000 {
            self.v += 0x1000;
        } else {
            self.v &= !0x7000;
            let mut y = (self.v & 0x03E0) >> 5;
            if y == 29 {
                y = 0;
                self.v ^= 0x0800;
            } else if y == 31 {
                y = 0;
            } else {
                y += 1;
            }
            self.v = (self.v & !0x03E0) | (y << 5);
        }
    }

    fn copy_horizontal(&mut self) {
        self.v = (self.v & !0x041F) | (self.t & 0x041F);
    }

    fn copy_vertical(&mut self) {
        self.v = (self.v & !0x7BE0) | (self.t & 0x7BE0);
    }

    // --- the background pipeline --------------------------------------------------------------------------------

    fn load_shifters(&mut self) {
        self.shift_lo = (self.shift_lo & 0xFF00) | u16::from(self.next_lo);
        self.shift_hi = (self.shift_hi & 0xFF00) | u16::from(self.next_hi);
        let (a_lo, a_hi) = (if self.next_attr & 1 != 0 { 0xFF } else { 0 }, if self.next_attr & 2 != 0 { 0xFF } else { 0 });
        self.shift_attr_lo = (self.shift_attr_lo & 0xFF00) | a_lo;
        self.shift_attr_hi = (self.shift_attr_hi & 0xFF00) | a_hi;
    }

    fn shift(&mut self) {
        self.shift_lo <<= 1;
        self.shift_hi <<= 1;
        self.shift_attr_lo <<= 1;
        self.shift_attr_hi <<= 1;
    }

    fn fetch(&mut self, phase: u16) {
        match phase {
            0 => {
                self.load_shifters();
                self.next_tile = self.mem_read(0x2000 | (self.v & 0x0FFF));
            }
            2 => {
                let v = self.v;
                let at = self.mem_read(0x23C0 | (v & 0x0C00) | ((v >> 4) & 0x38) | ((v >> 2) & 0x07));
                let shift = ((v >> 4) & 4) | (v & 2);
                self.next_attr = (at >> shift) & 3;
            }
            4 | 6 => {
                let table = if self.ctrl & 0x10 != 0 { 0x1000 } else { 0 };
                let addr = table + u16::from(self.next_tile) * 16 + ((self.v >> 12) & 7) + if phase == 6 { 8 } else { 0 };
                let b = self.mem_read(addr);
                if phase == 4 {
                    self.next_lo = b;
                } else {
                    self.next_hi = b;
                }
            }
            7 => self.increment_x(),
            _ => {}
        }
    }

    // --- sprites ------------------------------------------------------------------------------------------------

    fn sprite_height(&self) -> u16 {
        if self.ctrl & 0x20 != 0 { 16 } else { 8 }
    }

    /// Sprite evaluation for the line after `line`: the first eight sprites in range, their pattern bytes; the
    /// overflow flag by the hardware's search, which after the eighth sprite also steps the byte index (the
    /// wiki's "sprite overflow bug").
    fn evaluate_sprites(&mut self, line: u16) {
        let h = self.sprite_height();
        let in_range = |y: u8| line.wrapping_sub(u16::from(y)) < h;
        self.sprite_count = 0;
        let mut n = 0usize;
        while n < 64 && self.sprite_count < 8 {
            let y = self.oam[n * 4];
            if in_range(y) {
                let (tile, attr, x) = (self.oam[n * 4 + 1], self.oam[n * 4 + 2], self.oam[n * 4 + 3]);
                let mut row = line - u16::from(y);
                if attr & 0x80 != 0 {
                    row = h - 1 - row;
                }
                let addr = if h == 16 {
                    let table = if tile & 1 != 0 { 0x1000 } else { 0 };
                    let t = u16::from(tile & 0xFE) + if row >= 8 { 1 } else { 0 };
                    table + t * 16 + (row & 7)
                } else {
                    let table = if self.ctrl & 0x08 != 0 { 0x1000 } else { 0 };
                    table + u16::from(tile) * 16 + row
                };
                let (mut lo, mut hi) = (self.mem_read(addr), self.mem_read(addr + 8));
                if attr & 0x40 != 0 {
                    lo = lo.reverse_bits();
                    hi = hi.reverse_bits();
                }
                self.sprites[self.sprite_count] = LineSprite { x, attr, lo, hi, zero: n == 0, high_table: addr & 0x1000 != 0 };
                self.sprite_count += 1;
            }
            n += 1;
        }
        let mut m = 0usize;
        while n < 64 {
            if in_range(self.oam[n * 4 + m]) {
                self.overflow = true;
                break;
            }
            n += 1;
            m = (m + 1) & 3;
        }
    }

    // --- one dot ------------------------------------------------------------------------------------------------

    /// Advance one dot.
    pub fn tick(&mut self) {
        let (line, dot) = (self.scanline, self.dot);
        let visible = line < 240;
        let pre = line == 261;
        if pre && dot == 1 {
            self.vblank = false;
            self.sprite0_hit = false;
            self.overflow = false;
        }
        if line == 241 && dot == 1 {
            self.vblank = !self.suppress_vblank;
            self.suppress_vblank = false;
        }
        if (visible || pre) && self.rendering() {
            if (2..=257).contains(&dot) || (322..=337).contains(&dot) {
                self.shift();
            }
            if (1..=256).contains(&dot) || (321..=336).contains(&dot) {
                self.fetch((dot - 1) % 8);
            }
            if dot == 256 {
                self.increment_y();
            }
            if dot == 257 {
                self.load_shifters();
                self.copy_horizontal();
                if visible {
                    self.evaluate_sprites(line);
                } else {
                    self.sprite_count = 0;
                }
            }
            if pre && (280..=304).contains(&dot) {
                self.copy_vertical();
            }
        }
        if visible && (1..=256).contains(&dot) {
            self.draw(line, dot - 1);
        }
        if self.cart.mapper.watches_a12() {
            let a12 = self.a12(line, dot);
            self.cart.mapper.ppu_a12(a12, self.dots);
        }
        self.dots += 1;
        if line == 239 && dot == 256 {
            self.frame_ready = true;
        }
        // Next dot; the odd frame's pre-render line skips its last dot while rendering is on.
        self.dot += 1;
        // blargg's 10-even_odd_timing places the decision at dot 338: rendering enabled later is too late.
        if pre && dot == 338 {
            self.skip_dot = self.frame % 2 == 1 && self.rendering();
        }
        if pre && self.dot == 340 && self.skip_dot {
            self.dot = 341;
        }
        if self.dot >= DOTS {
            self.dot = 0;
            self.scanline += 1;
            if self.scanline >= LINES {
                self.scanline = 0;
                self.frame += 1;
            }
        }
    }

    /// The PPU address bus's A12 on this dot: while rendering, the pattern fetches' table (the background's on
    /// dots 4-7 of each eight, the sprites' on dots 260-263 of the first sprite slot and the same four of each
    /// of the eight slots up to 320; an empty slot fetches tile $FF); else the VRAM address `v`. The sprite data
    /// itself is fetched at dot 257 (see the module docs); only the bus timing is kept here. The rises fall a
    /// dot before the fetch's first dot, where blargg's `mmc3_test` 4-scanline_timing places the counter's
    /// clock (dot 260 with sprites at $1000, as the wiki's "MMC3" says).
    fn a12(&self, line: u16, dot: u16) -> bool {
        if !(self.rendering() && (line < 240 || line == 261)) {
            return self.v & 0x1000 != 0;
        }
        match dot {
            1..=256 | 321..=336 => dot % 8 >= 4 && self.ctrl & 0x10 != 0,
            257..=320 => {
                let (slot, phase) = (usize::from((dot - 256) / 8), (dot - 256) % 8);
                phase >= 4
                    && if slot < self.sprite_count {
                        self.sprites[slot].high_table
                    } else {
                        self.sprite_height() == 16 || self.ctrl & 0x08 != 0
                    }
            }
            _ => false,
        }
    }

    fn draw(&mut self, line: u16, x: u16) {
        let show_bg = self.mask & 0x08 != 0 && (x >= 8 || self.mask & 0x02 != 0);
        let show_sp = self.mask & 0x10 != 0 && (x >= 8 || self.mask & 0x04 != 0);
        let (mut bg, mut bg_pal) = (0u8, 0u8);
        if show_bg {
            let bit = 0x8000 >> self.x;
            bg = u8::from(self.shift_lo & bit != 0) | (u8::from(self.shift_hi & bit != 0) << 1);
            bg_pal = u8::from(self.shift_attr_lo & bit != 0) | (u8::from(self.shift_attr_hi & bit != 0) << 1);
        }
        let (mut sp, mut sp_pal, mut sp_behind) = (0u8, 0u8, false);
        if show_sp {
            for s in &self.sprites[..self.sprite_count] {
                let dx = x.wrapping_sub(u16::from(s.x));
                if dx >= 8 {
                    continue;
                }
                let b = 7 - dx;
                let px = ((s.lo >> b) & 1) | (((s.hi >> b) & 1) << 1);
                if px == 0 {
                    continue;
                }
                if s.zero && bg != 0 && x != 255 {
                    self.sprite0_hit = true;
                }
                if sp == 0 {
                    sp = px;
                    sp_pal = (s.attr & 3) + 4;
                    sp_behind = s.attr & 0x20 != 0;
                }
            }
        }
        let entry = match (bg, sp) {
            (0, 0) => 0,
            (0, _) => sp_pal * 4 + sp,
            (_, 0) => bg_pal * 4 + bg,
            _ if sp_behind => bg_pal * 4 + bg,
            _ => sp_pal * 4 + sp,
        };
        // Forced blanking with the VRAM address in the palette shows that entry instead of the backdrop (the
        // wiki's "PPU palettes": the background palette hack).
        let at = if !self.rendering() && self.v & 0x3F00 == 0x3F00 { self.v } else { 0x3F00 | u16::from(entry) };
        let mut color = self.mem_read(at) & 0x3F;
        if self.mask & 0x01 != 0 {
            color &= 0x30;
        }
        self.pixels[usize::from(line) * WIDTH + usize::from(x)] = color;
    }

    /// The text of nametable `table` (0-3, at $2000 + $400 * table) as the 30 rows of 32 tile numbers read as
    /// ASCII (test ROMs whose font puts each character at its code; other tiles become spaces), rows joined by
    /// newlines and trimmed.
    pub fn nametable_text(&self, table: u16) -> String {
        let base = 0x2000 + 0x400 * (table & 3);
        (0..30u16)
            .map(|row| {
                let line: String = (0..32u16)
                    .map(|col| self.mem_read(base + row * 32 + col))
                    .map(|t| if (0x20..0x7F).contains(&t) { t as char } else { ' ' })
                    .collect();
                line.trim_end().to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
            .trim()
            .to_string()
    }

    /// The finished picture (palette indices 0-63, 256 x 240), once per frame after its last visible dot.
    pub fn take_frame(&mut self) -> Option<&[u8]> {
        if self.frame_ready {
            self.frame_ready = false;
            Some(&self.pixels)
        } else {
            None
        }
    }
}

/// The NTSC 2C02's 64 colors as RGB: the 2C02 palette of the NESdev wiki's "PPU palettes" page. (Frames are
/// compared as palette indices; this table only colors the pictures.)
pub const NTSC_PALETTE: [[u8; 3]; 64] = [
    [84, 84, 84], [0, 30, 116], [8, 16, 144], [48, 0, 136], [68, 0, 100], [92, 0, 48], [84, 4, 0], [60, 24, 0],
    [32, 42, 0], [8, 58, 0], [0, 64, 0], [0, 60, 0], [0, 50, 60], [0, 0, 0], [0, 0, 0], [0, 0, 0],
    [152, 150, 152], [8, 76, 196], [48, 50, 236], [92, 30, 228], [136, 20, 176], [160, 20, 100], [152, 34, 32], [120, 60, 0],
    [84, 90, 0], [40, 114, 0], [8, 124, 0], [0, 118, 40], [0, 102, 120], [0, 0, 0], [0, 0, 0], [0, 0, 0],
    [236, 238, 236], [76, 154, 236], [120, 124, 236], [176, 98, 236], [228, 84, 236], [236, 88, 180], [236, 106, 100], [212, 136, 32],
    [160, 170, 0], [116, 196, 0], [76, 208, 32], [56, 204, 108], [56, 180, 204], [60, 60, 60], [0, 0, 0], [0, 0, 0],
    [236, 238, 236], [168, 204, 236], [188, 188, 236], [212, 178, 236], [236, 174, 236], [236, 174, 212], [236, 180, 176], [228, 196, 144],
    [204, 210, 120], [180, 222, 120], [168, 226, 144], [152, 226, 180], [160, 214, 228], [160, 162, 160], [0, 0, 0], [0, 0, 0],
];

#[cfg(test)]
mod tests {
    use super::*;

    fn cart(mirroring: Mirroring) -> Cartridge {
        let mut chr = vec![0u8; 0x2000];
        // Tile 1: every pixel color 1 (low plane set). Tile 2: color 3 in its left column only.
        chr[16..24].fill(0xFF);
        for r in 0..8 {
            chr[32 + r] = 0x80;
            chr[40 + r] = 0x80;
        }
        Cartridge::new(crate::mapper::Mapper::Nrom, vec![0; 0x4000], chr, false, mirroring)
    }

    fn run_dots(p: &mut Ppu, n: u64) {
        for _ in 0..n {
            p.tick();
        }
    }

    fn set_addr(p: &mut Ppu, addr: u16) {
        p.write_register(6, (addr >> 8) as u8);
        p.write_register(6, addr as u8);
    }

    #[test]
    fn vblank_sets_at_line_241_and_a_status_read_clears_it() {
        let mut p = Ppu::new(cart(Mirroring::Horizontal));
        run_dots(&mut p, 241 * 341);
        assert_eq!(p.read_register(2) & 0x80, 0, "not yet at dot 1");
        run_dots(&mut p, 2);
        assert!(!p.nmi_line(), "NMI disabled");
        p.write_register(0, 0x80);
        assert!(p.nmi_line());
        assert_eq!(p.read_register(2) & 0x80, 0x80);
        assert_eq!(p.read_register(2) & 0x80, 0, "the read cleared it");
        assert!(!p.nmi_line());
        // A read on the dot before the flag is set reads it clear and keeps it from being set this frame.
        let mut r = Ppu::new(cart(Mirroring::Horizontal));
        run_dots(&mut r, 241 * 341 + 1);
        assert_eq!(r.read_register(2) & 0x80, 0);
        run_dots(&mut r, 5);
        assert_eq!(r.read_register(2) & 0x80, 0, "suppressed");
        // A frame with rendering off is 262 * 341 dots.
        let mut q = Ppu::new(cart(Mirroring::Horizontal));
        run_dots(&mut q, 262 * 341);
        assert_eq!((q.frame, q.scanline, q.dot), (1, 0, 0));
    }

    #[test]
    fn odd_frames_are_one_dot_shorter_with_rendering_on() {
        let mut p = Ppu::new(cart(Mirroring::Horizontal));
        p.write_register(1, 0x08);
        run_dots(&mut p, 262 * 341);
        assert_eq!((p.frame, p.scanline, p.dot), (1, 0, 0));
        run_dots(&mut p, 262 * 341 - 1);
        assert_eq!((p.frame, p.scanline, p.dot), (2, 0, 0), "the odd frame skipped a dot");
    }

    #[test]
    fn vram_reads_are_buffered_and_palette_reads_are_not() {
        let mut p = Ppu::new(cart(Mirroring::Vertical));
        set_addr(&mut p, 0x2005);
        p.write_register(7, 0x11);
        p.write_register(7, 0x22);
        set_addr(&mut p, 0x2805);
        assert_eq!(p.read_register(7), 0, "the stale buffer");
        assert_eq!(p.read_register(7), 0x11, "$2805 mirrors $2005 (vertical)");
        assert_eq!(p.read_register(7), 0x22);
        set_addr(&mut p, 0x3F10);
        p.write_register(7, 0x2C);
        set_addr(&mut p, 0x3F00);
        assert_eq!(p.read_register(7), 0x2C, "$3F10 mirrors $3F00, read at once");
        // +32 increments.
        p.write_register(0, 0x04);
        set_addr(&mut p, 0x2000);
        p.write_register(7, 0x33);
        p.write_register(7, 0x44);
        set_addr(&mut p, 0x2020);
        p.read_register(7);
        assert_eq!(p.read_register(7), 0x44);
    }

    #[test]
    fn scroll_writes_set_t_and_fine_x() {
        let mut p = Ppu::new(cart(Mirroring::Horizontal));
        p.write_register(0, 0x03);
        p.write_register(5, 0x7D); // coarse X 15, fine X 5
        p.write_register(5, 0x5E); // coarse Y 11, fine Y 6
        assert_eq!((p.t, p.x), (0x6000 | 0x0C00 | (11 << 5) | 15, 5));
        assert!(!p.w);
    }

    /// A background of tile 1 (color 1) with palette color $16 draws $16 everywhere; a sprite of tile 2 at
    /// (100, 50) draws its left column in its palette's color 3, and sprite 0 over the background sets the hit.
    #[test]
    fn background_and_sprites_draw_and_sprite_0_hits() {
        let mut p = Ppu::new(cart(Mirroring::Horizontal));
        set_addr(&mut p, 0x2000);
        for _ in 0..960 {
            p.write_register(7, 1);
        }
        set_addr(&mut p, 0x3F00);
        for c in [0x0F, 0x16, 0x27, 0x18] {
            p.write_register(7, c);
        }
        set_addr(&mut p, 0x3F13);
        p.write_register(7, 0x2A);
        p.oam[..4].copy_from_slice(&[49, 2, 0x00, 100]);
        for s in 1..64 {
            p.oam[s * 4] = 0xF0;
        }
        p.write_register(5, 0);
        p.write_register(5, 0);
        p.write_register(0, 0);
        p.write_register(1, 0x1E);
        run_dots(&mut p, 2 * 262 * 341);
        let frame = p.take_frame().expect("a frame").to_vec();
        assert_eq!(frame[10 * WIDTH + 10], 0x16);
        assert_eq!(frame[50 * WIDTH + 100], 0x2A, "the sprite's left column");
        assert_eq!(frame[50 * WIDTH + 101], 0x16, "its transparent pixels show the background");
        assert_eq!(frame[49 * WIDTH + 100], 0x16, "OAM Y 49 draws from line 50");
        assert_eq!(frame[57 * WIDTH + 100], 0x2A);
        assert_eq!(frame[58 * WIDTH + 100], 0x16);
        assert!(p.sprite0_hit || p.scanline >= 241 || p.scanline < 50, "hit until the pre-render line clears it");
        // Right after line 50 of the next frame the hit is set again.
        while !(p.scanline == 51 && p.dot == 0) {
            p.tick();
        }
        assert_eq!(p.read_register(2) & 0x40, 0x40);
    }

    #[test]
    fn nine_sprites_on_a_line_set_the_overflow_flag_and_eight_are_drawn() {
        let mut p = Ppu::new(cart(Mirroring::Horizontal));
        set_addr(&mut p, 0x3F00);
        p.write_register(7, 0x0F);
        set_addr(&mut p, 0x3F13);
        p.write_register(7, 0x2A);
        for s in 0..64 {
            p.oam[s * 4..s * 4 + 4].copy_from_slice(&if s < 9 { [20, 2, 0, (s * 10) as u8] } else { [0xF0, 0, 0, 0] });
        }
        p.write_register(1, 0x16);
        run_dots(&mut p, 262 * 341 + 30 * 341);
        assert_eq!(p.read_register(2) & 0x20, 0x20);
        let frame = p.take_frame().unwrap_or(&[]).to_vec();
        let frame = if frame.is_empty() { p.pixels.clone() } else { frame };
        assert_eq!(frame[25 * WIDTH + 70], 0x2A, "the eighth sprite");
        assert_eq!(frame[25 * WIDTH + 80], 0x0F, "not the ninth");
    }
}
