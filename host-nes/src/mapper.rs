//! The cartridge boards' bank switching: mappers 0 (NROM), 1 (MMC1: SxROM), 2 (UxROM), 3 (CNROM) and 4 (MMC3:
//! TxROM), written from the NESdev wiki's pages of those names ("MMC1", "UxROM", "CNROM", "MMC3").
//!
//! A mapper sees the CPU's writes to $8000-$FFFF (its registers) and the PPU's address bus (MMC3's scanline
//! counter clocks on rises of A12), and answers where each CPU address in $8000-$FFFF and each PPU address in
//! $0000-$1FFF lands in the PRG and CHR, which nametable layout the console's VRAM has, and whether it holds the
//! IRQ line low. The maps are kept as offsets of 8 KiB PRG windows and 1 KiB CHR windows, recomputed at each
//! register write.
//!
//! Choices where boards differ (each the common emulators' default, `tetanes-core`'s included): UxROM and CNROM
//! without bus conflicts (the value written is the register's, not ANDed with the ROM byte; games write a ROM
//! byte equal to the value, so both give the same bank); MMC1 ignores a write on the CPU cycle right after
//! another (its consecutive-write rule); MMC1 and MMC3 leave PRG RAM always enabled and writable; MMC3's IRQ is the
//! newer ("Sharp", revision B) behaviour: a clock that reloads the counter to 0, or finds it 0, raises the IRQ
//! while enabled. MMC3's A12 filter: a rise counts after A12 was low for at least 10 PPU dots (just over three
//! CPU cycles), so one rise per scanline counts while the sprite or background fetches toggle A12.

/// Mapper numbers this host runs.
pub const SUPPORTED: [u16; 5] = [0, 1, 2, 3, 4];

/// Dots A12 must stay low before a rise clocks MMC3's counter.
const A12_LOW_DOTS: u64 = 10;

/// MMC1's registers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mmc1 {
    shift: u8,
    count: u8,
    /// Control: bits 0-1 mirroring, 2-3 PRG mode, 4 CHR mode.
    pub control: u8,
    pub chr0: u8,
    pub chr1: u8,
    pub prg: u8,
    /// The CPU cycle of the last write it saw (consecutive-write rule).
    last_write: Option<u64>,
}

/// MMC3's registers and scanline counter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mmc3 {
    /// Bank select: bits 0-2 the register `R0`-`R7` the next data write sets, bit 6 PRG mode, bit 7 CHR A12
    /// inversion.
    pub select: u8,
    pub regs: [u8; 8],
    /// Nametable layout bit ($A000): 0 vertical, 1 horizontal (ignored on four-screen boards).
    pub mirroring: u8,
    pub irq_latch: u8,
    pub irq_counter: u8,
    irq_reload: bool,
    pub irq_enabled: bool,
    pub irq_pending: bool,
    /// A12's level and since which PPU dot it is low.
    a12_high: bool,
    a12_low_since: u64,
}

/// A board's bank state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mapper {
    Nrom,
    Mmc1(Mmc1),
    /// UxROM: the 16 KiB bank at $8000 (the last bank is fixed at $C000).
    Uxrom(u8),
    /// CNROM: the 8 KiB CHR bank.
    Cnrom(u8),
    Mmc3(Mmc3),
}

impl Mapper {
    /// Mapper `number` at power-on. `None` when this host does not run it.
    pub fn power_on(number: u16) -> Option<Self> {
        Some(match number {
            0 => Mapper::Nrom,
            1 => Mapper::Mmc1(Mmc1 { shift: 0, count: 0, control: 0x0C, chr0: 0, chr1: 0, prg: 0, last_write: None }),
            2 => Mapper::Uxrom(0),
            3 => Mapper::Cnrom(0),
            // R6 = 0 and R7 = 1: $8000-$9FFF and $A000-$BFFF hold the first two banks until the program sets them.
            4 => Mapper::Mmc3(Mmc3 {
                select: 0,
                regs: [0, 2, 4, 5, 6, 7, 0, 1],
                mirroring: 0,
                irq_latch: 0,
                irq_counter: 0,
                irq_reload: false,
                irq_enabled: false,
                irq_pending: false,
                a12_high: false,
                a12_low_since: 0,
            }),
            _ => return None,
        })
    }

    /// The iNES mapper number.
    pub fn number(&self) -> u16 {
        match self {
            Mapper::Nrom => 0,
            Mapper::Mmc1(_) => 1,
            Mapper::Uxrom(_) => 2,
            Mapper::Cnrom(_) => 3,
            Mapper::Mmc3(_) => 4,
        }
    }

    /// The board's name.
    pub fn name(&self) -> &'static str {
        match self {
            Mapper::Nrom => "NROM",
            Mapper::Mmc1(_) => "MMC1",
            Mapper::Uxrom(_) => "UxROM",
            Mapper::Cnrom(_) => "CNROM",
            Mapper::Mmc3(_) => "MMC3",
        }
    }

    /// A CPU write of `value` to `addr` ($8000-$FFFF) on CPU cycle `cycle`.
    pub fn cpu_write(&mut self, addr: u16, value: u8, cycle: u64) {
        match self {
            Mapper::Nrom => {}
            Mapper::Uxrom(b) | Mapper::Cnrom(b) => *b = value,
            Mapper::Mmc1(m) => {
                let consecutive = m.last_write.is_some_and(|c| c + 1 == cycle);
                m.last_write = Some(cycle);
                if consecutive {
                    return;
                }
                if value & 0x80 != 0 {
                    m.shift = 0;
                    m.count = 0;
                    m.control |= 0x0C;
                    return;
                }
                m.shift |= (value & 1) << m.count;
                m.count += 1;
                if m.count == 5 {
                    let v = m.shift;
                    match (addr >> 13) & 3 {
                        0 => m.control = v,
                        1 => m.chr0 = v,
                        2 => m.chr1 = v,
                        _ => m.prg = v,
                    }
                    m.shift = 0;
                    m.count = 0;
                }
            }
            Mapper::Mmc3(m) => match (addr & 0xE001, value) {
                (0x8000, v) => m.select = v,
                (0x8001, v) => m.regs[usize::from(m.select & 7)] = v,
                (0xA000, v) => m.mirroring = v & 1,
                (0xA001, _) => {} // PRG RAM protect: PRG RAM stays enabled and writable
                (0xC000, v) => m.irq_latch = v,
                (0xC001, _) => {
                    m.irq_counter = 0;
                    m.irq_reload = true;
                }
                (0xE000, _) => {
                    m.irq_enabled = false;
                    m.irq_pending = false;
                }
                _ => m.irq_enabled = true,
            },
        }
    }

    /// The PPU's address bus A12 at PPU dot `dot` (a running count): MMC3 clocks its scanline counter on a rise
    /// after A12 was low for [`A12_LOW_DOTS`].
    #[inline]
    pub fn ppu_a12(&mut self, high: bool, dot: u64) {
        let Mapper::Mmc3(m) = self else { return };
        if high == m.a12_high {
            return;
        }
        m.a12_high = high;
        if !high {
            m.a12_low_since = dot;
            return;
        }
        if dot - m.a12_low_since < A12_LOW_DOTS {
            return;
        }
        if m.irq_counter == 0 || m.irq_reload {
            m.irq_counter = m.irq_latch;
        } else {
            m.irq_counter -= 1;
        }
        m.irq_reload = false;
        if m.irq_counter == 0 && m.irq_enabled {
            m.irq_pending = true;
        }
    }

    /// Whether the board holds the CPU's IRQ line (MMC3's scanline IRQ).
    pub fn irq(&self) -> bool {
        matches!(self, Mapper::Mmc3(m) if m.irq_pending)
    }

    /// Whether this board's scanline counter watches A12 (the PPU reports it only then).
    pub fn watches_a12(&self) -> bool {
        matches!(self, Mapper::Mmc3(_))
    }

    /// The PRG ROM offsets of the four 8 KiB windows at $8000, $A000, $C000 and $E000, for `prg_len` bytes of
    /// PRG ROM (a power of two times 8 KiB; bank numbers wrap).
    pub fn prg_windows(&self, prg_len: usize) -> [usize; 4] {
        let k16 = |bank: usize| [bank * 0x4000 % prg_len, (bank * 0x4000 + 0x2000) % prg_len];
        let last16 = prg_len / 0x4000 - 1;
        let pair = |a: [usize; 2], b: [usize; 2]| [a[0], a[1], b[0], b[1]];
        match self {
            Mapper::Nrom | Mapper::Cnrom(_) => pair(k16(0), k16(1)),
            Mapper::Uxrom(b) => pair(k16(usize::from(*b)), k16(last16)),
            Mapper::Mmc1(m) => {
                // 512 KiB boards (SUROM): CHR bank 0's bit 4 selects the 256 KiB half.
                let outer = if prg_len > 0x40000 { usize::from(m.chr0 & 0x10) } else { 0 };
                let bank = outer | usize::from(m.prg & 0x0F);
                let last = outer | (last16.min(0x0F));
                match (m.control >> 2) & 3 {
                    0 | 1 => pair(k16(bank & !1), k16(bank | 1)),
                    2 => pair(k16(outer), k16(bank)),
                    _ => pair(k16(bank), k16(last)),
                }
            }
            Mapper::Mmc3(m) => {
                let k8 = |bank: usize| bank * 0x2000 % prg_len;
                let n = prg_len / 0x2000;
                let (r6, r7) = (k8(usize::from(m.regs[6] & 0x3F)), k8(usize::from(m.regs[7] & 0x3F)));
                let (second_last, last) = (k8(n - 2), k8(n - 1));
                if m.select & 0x40 == 0 { [r6, r7, second_last, last] } else { [second_last, r7, r6, last] }
            }
        }
    }

    /// The CHR offsets of the eight 1 KiB windows of PPU $0000-$1FFF, for `chr_len` bytes of CHR (bank numbers
    /// wrap).
    pub fn chr_windows(&self, chr_len: usize) -> [usize; 8] {
        let k1 = |bank: usize| bank * 0x400 % chr_len;
        let span = |first: usize, n: usize| -> Vec<usize> { (0..n).map(|i| k1(first + i)).collect() };
        let v: Vec<usize> = match self {
            Mapper::Nrom | Mapper::Uxrom(_) => span(0, 8),
            Mapper::Cnrom(b) => span(usize::from(*b) * 8, 8),
            Mapper::Mmc1(m) => {
                if m.control & 0x10 == 0 {
                    span(usize::from(m.chr0 & !1) * 4, 8)
                } else {
                    [span(usize::from(m.chr0) * 4, 4), span(usize::from(m.chr1) * 4, 4)].concat()
                }
            }
            Mapper::Mmc3(m) => {
                let r = |i: usize| usize::from(m.regs[i]);
                let two = [span(r(0) & !1, 2), span(r(1) & !1, 2)].concat();
                let four = [r(2), r(3), r(4), r(5)].map(k1).to_vec();
                if m.select & 0x80 == 0 { [two, four].concat() } else { [four, two].concat() }
            }
        };
        v.try_into().expect("eight windows")
    }

    /// The nametable layout the board selects now, given the header's (`header`).
    pub fn mirroring(&self, header: Mirroring) -> Mirroring {
        match self {
            Mapper::Mmc1(m) => match m.control & 3 {
                0 => Mirroring::SingleLower,
                1 => Mirroring::SingleUpper,
                2 => Mirroring::Vertical,
                _ => Mirroring::Horizontal,
            },
            Mapper::Mmc3(m) if header != Mirroring::FourScreen => {
                if m.mirroring == 0 {
                    Mirroring::Vertical
                } else {
                    Mirroring::Horizontal
                }
            }
            _ => header,
        }
    }
}

use crate::cartridge::Mirroring;

#[cfg(test)]
mod tests {
    use super::*;

    fn mmc1_write(m: &mut Mapper, addr: u16, v: u8, cycle: &mut u64) {
        for i in 0..5 {
            m.cpu_write(addr, (v >> i) & 1, *cycle);
            *cycle += 2;
        }
    }

    #[test]
    fn uxrom_switches_the_bank_at_8000_and_fixes_the_last() {
        let mut m = Mapper::power_on(2).unwrap();
        assert_eq!(m.prg_windows(0x20000), [0, 0x2000, 0x1C000, 0x1E000]);
        m.cpu_write(0x8000, 3, 10);
        assert_eq!(m.prg_windows(0x20000), [0xC000, 0xE000, 0x1C000, 0x1E000]);
        // Bank numbers past the ROM wrap.
        m.cpu_write(0xFFFF, 9, 12);
        assert_eq!(m.prg_windows(0x20000)[0], 0x4000);
    }

    #[test]
    fn cnrom_switches_8k_of_chr() {
        let mut m = Mapper::power_on(3).unwrap();
        m.cpu_write(0x8123, 2, 10);
        assert_eq!(m.chr_windows(0x8000), [0x4000, 0x4400, 0x4800, 0x4C00, 0x5000, 0x5400, 0x5800, 0x5C00]);
        assert_eq!(m.prg_windows(0x4000), [0, 0x2000, 0, 0x2000]);
    }

    #[test]
    fn mmc1_loads_registers_serially_and_ignores_consecutive_writes() {
        let mut m = Mapper::power_on(1).unwrap();
        let mut c = 100;
        // Power-on: PRG mode 3, the last bank at $C000.
        assert_eq!(m.prg_windows(0x20000), [0, 0x2000, 0x1C000, 0x1E000]);
        mmc1_write(&mut m, 0xE000, 5, &mut c);
        assert_eq!(m.prg_windows(0x20000), [0x14000, 0x16000, 0x1C000, 0x1E000]);
        // Control: vertical, PRG mode 2 (first bank fixed at $8000), 4 KiB CHR.
        mmc1_write(&mut m, 0x8000, 0b11010, &mut c);
        assert_eq!(m.prg_windows(0x20000), [0, 0x2000, 0x14000, 0x16000]);
        assert_eq!(m.mirroring(Mirroring::Horizontal), Mirroring::Vertical);
        mmc1_write(&mut m, 0xA000, 3, &mut c);
        mmc1_write(&mut m, 0xC000, 6, &mut c);
        assert_eq!(m.chr_windows(0x20000), [0x3000, 0x3400, 0x3800, 0x3C00, 0x6000, 0x6400, 0x6800, 0x6C00]);
        // A write on the cycle after another is ignored: five writes on consecutive cycles load nothing.
        let before = m.clone();
        for i in 0..4 {
            m.cpu_write(0xE000, 1, c + i);
        }
        assert_eq!(m.prg_windows(0x20000), before.prg_windows(0x20000));
        // Bit 7 resets the shift register and sets PRG mode 3.
        m.cpu_write(0x8000, 0x80, c + 10);
        assert_eq!(m.prg_windows(0x20000), [0x14000, 0x16000, 0x1C000, 0x1E000]);
    }

    #[test]
    fn mmc3_banks_and_counts_scanlines() {
        let mut m = Mapper::power_on(4).unwrap();
        let prg = 0x40000;
        m.cpu_write(0x8000, 6, 0);
        m.cpu_write(0x8001, 4, 0);
        m.cpu_write(0x8000, 7, 0);
        m.cpu_write(0x8001, 5, 0);
        assert_eq!(m.prg_windows(prg), [0x8000, 0xA000, 0x3C000, 0x3E000]);
        m.cpu_write(0x8000, 0x40, 0);
        assert_eq!(m.prg_windows(prg), [0x3C000, 0xA000, 0x8000, 0x3E000]);
        m.cpu_write(0x8000, 0x80, 0);
        m.cpu_write(0x8001, 7, 0); // R0 = 7: its low bit is ignored
        assert_eq!(m.chr_windows(0x40000)[4..6], [0x1800, 0x1C00]);
        m.cpu_write(0xA000, 1, 0);
        assert_eq!(m.mirroring(Mirroring::Vertical), Mirroring::Horizontal);
        assert_eq!(m.mirroring(Mirroring::FourScreen), Mirroring::FourScreen);
        // Latch 2, reload, enable: the IRQ on the third counted rise (reload to 2, then 1, then 0).
        m.cpu_write(0xC000, 2, 0);
        m.cpu_write(0xC001, 0, 0);
        m.cpu_write(0xE001, 0, 0);
        let mut dot = 1000;
        for line in 0..3 {
            assert!(!m.irq(), "line {line}");
            // A short low pulse does not count.
            m.ppu_a12(true, dot);
            m.ppu_a12(false, dot + 4);
            m.ppu_a12(true, dot + 8);
            m.ppu_a12(false, dot + 12);
            dot += 341;
        }
        assert!(m.irq());
        m.cpu_write(0xE000, 0, 0);
        assert!(!m.irq());
    }
}
