//! Cartridges: the iNES and NES 2.0 file formats (NESdev wiki, "iNES" and "NES 2.0"), mappers 0-4
//! ([`crate::mapper`]).
//!
//! A board holds PRG ROM the CPU reads at $8000-$FFFF through its mapper's banks, CHR ROM (or 8 KiB of CHR RAM
//! when the header gives no CHR ROM) the PPU reads at $0000-$1FFF through the CHR banks, and wires the PPU's
//! 2 KiB of nametable RAM horizontally or vertically (the header's mirroring bit, or the mapper's register), to
//! one screen (MMC1), or gives four screens. The 8 KiB of PRG RAM at $6000 are the CPU's memory, not the
//! cartridge's here.

use thiserror::Error;

use crate::mapper::Mapper;

/// Why a file is not a cartridge this host can run. Each names the problem.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CartridgeError {
    /// No `NES\x1A` magic, or fewer than 16 bytes.
    #[error("not an iNES file: {0}")]
    NotINes(String),
    /// A mapper other than 0-4.
    #[error("mapper {0} is not supported (this host runs mappers 0-4: NROM, MMC1, UxROM, CNROM, MMC3)")]
    Mapper(u16),
    /// A NES 2.0 submapper whose board differs from what this host models.
    #[error("mapper {mapper} submapper {submapper} ({what}) is not modelled")]
    Submapper { mapper: u16, submapper: u8, what: &'static str },
    /// A PRG or CHR size the mapper does not have.
    #[error("{0}")]
    Size(String),
    /// The file ends before the data its header announces.
    #[error("the file is {len} bytes, its header announces {want} (header, trainer, PRG and CHR ROM)")]
    Truncated { len: usize, want: usize },
}

/// How the two 1 KiB nametables of the console's VRAM fill the PPU's four nametable slots ($2000, $2400, $2800,
/// $2C00).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mirroring {
    /// $2000 = $2400 and $2800 = $2C00 (vertical scrolling games; header bit 0 clear).
    Horizontal,
    /// $2000 = $2800 and $2400 = $2C00 (horizontal scrolling games; header bit 0 set).
    Vertical,
    /// Four distinct nametables (4 KiB of VRAM; header bit 3).
    FourScreen,
    /// All four slots show the first nametable (MMC1).
    SingleLower,
    /// All four slots show the second nametable (MMC1).
    SingleUpper,
}

impl Mirroring {
    /// The VRAM offset (0..4 KiB) of nametable address `addr` ($2000-$3EFF).
    pub fn vram_offset(self, addr: u16) -> usize {
        let a = usize::from(addr & 0x0FFF);
        let (slot, within) = (a / 0x400, a % 0x400);
        let table = match self {
            Mirroring::Horizontal => slot / 2,
            Mirroring::Vertical => slot % 2,
            Mirroring::FourScreen => slot,
            Mirroring::SingleLower => 0,
            Mirroring::SingleUpper => 1,
        };
        table * 0x400 + within
    }
}

/// A cartridge: its ROMs and its mapper's bank state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cartridge {
    /// PRG ROM: a multiple of 16 KiB (MMC3: of 8 KiB).
    pub prg: Vec<u8>,
    /// CHR: ROM, or 8 KiB of RAM (zeros) when `chr_ram`.
    pub chr: Vec<u8>,
    /// Whether `chr` is RAM (the PPU may write it).
    pub chr_ram: bool,
    /// The header's nametable layout (the mapper may select another: [`Cartridge::nametables`]).
    pub mirroring: Mirroring,
    /// Whether the header is NES 2.0.
    pub nes2: bool,
    /// Whether the header says the PRG RAM is battery-backed.
    pub battery: bool,
    /// The mapper's registers (its power-on state after parsing).
    pub mapper: Mapper,
    /// PRG offsets of the four 8 KiB CPU windows at $8000-$FFFF, CHR offsets of the eight 1 KiB PPU windows,
    /// the nametable layout: recomputed at each mapper write.
    prg_map: [usize; 4],
    chr_map: [usize; 8],
    nametables: Mirroring,
}

impl Cartridge {
    /// Parse an iNES or NES 2.0 file.
    pub fn parse(file: &[u8]) -> Result<Self, CartridgeError> {
        if file.len() < 16 {
            return Err(CartridgeError::NotINes(format!("{} bytes, shorter than the 16-byte header", file.len())));
        }
        if &file[..4] != b"NES\x1A" {
            return Err(CartridgeError::NotINes("the file does not start with NES\\x1A".into()));
        }
        let nes2 = file[7] & 0x0C == 0x08;
        // Archaic iNES: bytes 12-15 hold a ripper's signature ("DiskDude!"), so byte 7 is garbage too.
        let archaic = !nes2 && file[12..16].iter().any(|&b| b != 0);
        let mut mapper = u16::from(file[6] >> 4);
        if !archaic {
            mapper |= u16::from(file[7] & 0xF0);
        }
        let (mut prg_units, mut chr_units) = (usize::from(file[4]), usize::from(file[5]));
        if nes2 {
            mapper |= u16::from(file[8] & 0x0F) << 8;
            // An exponent-multiplier size (nibble $F) is a size no NROM board has.
            let (prg_hi, chr_hi) = (usize::from(file[9] & 0x0F), usize::from(file[9] >> 4));
            if prg_hi == 0x0F || chr_hi == 0x0F {
                return Err(CartridgeError::Size("NES 2.0 exponent-multiplier ROM sizes are not NROM sizes".into()));
            }
            prg_units |= prg_hi << 8;
            chr_units |= chr_hi << 8;
        }
        let Some(power_on) = Mapper::power_on(mapper) else {
            return Err(CartridgeError::Mapper(mapper));
        };
        let submapper = if nes2 { file[8] >> 4 } else { 0 };
        // Submapper 1 of UxROM and CNROM: no bus conflicts, as modelled; the others are different boards.
        let what = match (mapper, submapper) {
            (_, 0) | (2 | 3, 1) => None,
            (2 | 3, 2) => Some("bus conflicts"),
            (1, 5) => Some("SEROM, fixed PRG"),
            (1, _) => Some("an MMC1 variant"),
            (4, 1) => Some("MMC6"),
            (4, _) => Some("an MMC3 variant"),
            _ => Some("unknown"),
        };
        if let Some(what) = what {
            return Err(CartridgeError::Submapper { mapper, submapper, what });
        }
        // (PRG KiB allowed, CHR ROM KiB allowed) by board, from the wiki's board tables.
        let (prg_ok, chr_ok, name) = match mapper {
            0 => (prg_units == 1 || prg_units == 2, chr_units <= 1, "NROM has 16 or 32 KiB of PRG ROM and at most 8 KiB of CHR ROM"),
            1 => ((1..=32).contains(&prg_units), chr_units <= 16, "MMC1 boards have 16-512 KiB of PRG ROM and at most 128 KiB of CHR ROM"),
            2 => ((1..=256).contains(&prg_units), chr_units <= 1, "UxROM boards have 16 KiB-4 MiB of PRG ROM and at most 8 KiB of CHR ROM"),
            3 => ((prg_units == 1 || prg_units == 2) && chr_units <= 256, chr_units >= 1, "CNROM boards have 16 or 32 KiB of PRG ROM and 8 KiB-2 MiB of CHR ROM"),
            _ => ((1..=32).contains(&prg_units), chr_units <= 32, "MMC3 boards have 16-512 KiB of PRG ROM and at most 256 KiB of CHR ROM"),
        };
        if !prg_ok || !chr_ok {
            return Err(CartridgeError::Size(format!("{name}; the header says {} KiB of PRG ROM and {} KiB of CHR ROM", prg_units * 16, chr_units * 8)));
        }
        let trainer = if file[6] & 0x04 != 0 { 512 } else { 0 };
        let prg_start = 16 + trainer;
        let chr_start = prg_start + prg_units * 0x4000;
        let want = chr_start + chr_units * 0x2000;
        if file.len() < want {
            return Err(CartridgeError::Truncated { len: file.len(), want });
        }
        let mirroring = if file[6] & 0x08 != 0 {
            Mirroring::FourScreen
        } else if file[6] & 0x01 != 0 {
            Mirroring::Vertical
        } else {
            Mirroring::Horizontal
        };
        let prg = file[prg_start..chr_start].to_vec();
        let (chr, chr_ram) = if chr_units == 0 { (vec![0; 0x2000], true) } else { (file[chr_start..want].to_vec(), false) };
        let mut c = Cartridge::new(power_on, prg, chr, chr_ram, mirroring);
        c.nes2 = nes2;
        c.battery = file[6] & 0x02 != 0;
        Ok(c)
    }

    /// A cartridge of `mapper` (in its state) with these ROMs and header layout. `prg` must be a nonzero
    /// multiple of 8 KiB, `chr` of 1 KiB.
    pub fn new(mapper: Mapper, prg: Vec<u8>, chr: Vec<u8>, chr_ram: bool, mirroring: Mirroring) -> Self {
        let mut c = Cartridge { prg, chr, chr_ram, mirroring, nes2: false, battery: false, mapper, prg_map: [0; 4], chr_map: [0; 8], nametables: mirroring };
        c.remap();
        c
    }

    fn remap(&mut self) {
        self.prg_map = self.mapper.prg_windows(self.prg.len());
        self.chr_map = self.mapper.chr_windows(self.chr.len());
        self.nametables = self.mapper.mirroring(self.mirroring);
    }

    /// The PRG ROM byte the CPU reads at `addr` ($8000-$FFFF) through the current banks.
    #[inline]
    pub fn prg_byte(&self, addr: u16) -> u8 {
        let a = usize::from(addr);
        self.prg[self.prg_map[(a >> 13) & 3] + (a & 0x1FFF)]
    }

    /// The PRG ROM offsets of the four 8 KiB windows at $8000, $A000, $C000 and $E000 now.
    pub fn prg_windows(&self) -> [usize; 4] {
        self.prg_map
    }

    /// The 32 KiB the CPU sees at $8000-$FFFF now.
    pub fn prg_view(&self) -> Vec<u8> {
        (0x8000..=0xFFFFu16).map(|a| self.prg_byte(a)).collect()
    }

    /// The CHR byte at PPU address `addr` ($0000-$1FFF) through the current banks.
    #[inline]
    pub fn chr_byte(&self, addr: u16) -> u8 {
        let a = usize::from(addr & 0x1FFF);
        self.chr[self.chr_map[a >> 10] + (a & 0x3FF)]
    }

    /// A PPU write to `addr` ($0000-$1FFF): CHR RAM takes it, CHR ROM ignores it.
    #[inline]
    pub fn chr_write(&mut self, addr: u16, value: u8) {
        if self.chr_ram {
            let a = usize::from(addr & 0x1FFF);
            self.chr[self.chr_map[a >> 10] + (a & 0x3FF)] = value;
        }
    }

    /// The nametable layout now.
    #[inline]
    pub fn nametables(&self) -> Mirroring {
        self.nametables
    }

    /// A CPU write to the mapper ($8000-$FFFF) on CPU cycle `cycle`.
    pub fn cpu_write(&mut self, addr: u16, value: u8, cycle: u64) {
        self.mapper.cpu_write(addr, value, cycle);
        self.remap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(prg: u8, chr: u8, f6: u8, f7: u8) -> Vec<u8> {
        let mut h = b"NES\x1A".to_vec();
        h.extend([prg, chr, f6, f7]);
        h.resize(16, 0);
        h
    }

    fn file(prg: u8, chr: u8, f6: u8, f7: u8) -> Vec<u8> {
        let mut f = header(prg, chr, f6, f7);
        f.extend((0..usize::from(prg) * 0x4000).map(|i| (i % 251) as u8));
        f.extend(vec![0xAA; usize::from(chr) * 0x2000]);
        f
    }

    #[test]
    fn nrom_files_parse_with_their_mirroring_and_chr() {
        let c = Cartridge::parse(&file(1, 1, 0x01, 0)).unwrap();
        assert_eq!((c.prg.len(), c.chr.len(), c.chr_ram, c.mirroring), (0x4000, 0x2000, false, Mirroring::Vertical));
        // 16 KiB appear at $8000 and $C000.
        assert_eq!(c.prg_byte(0x8005), c.prg_byte(0xC005));
        assert_eq!(c.prg_byte(0x8005), 5);
        let c = Cartridge::parse(&file(2, 0, 0x00, 0)).unwrap();
        assert_eq!((c.prg.len(), c.chr_ram, c.mirroring), (0x8000, true, Mirroring::Horizontal));
        assert_eq!(c.chr, vec![0; 0x2000]);
        let c = Cartridge::parse(&file(1, 1, 0x08, 0x08)).unwrap();
        assert_eq!((c.mirroring, c.nes2), (Mirroring::FourScreen, true));
        // UxROM: 128 KiB, the last bank at $C000 from power-on.
        let c = Cartridge::parse(&file(8, 0, 0x22, 0)).unwrap();
        assert_eq!((c.mapper.number(), c.battery, c.chr_ram), (2, true, true));
        assert_eq!(c.prg_byte(0xC000), (7 * 0x4000 % 251) as u8);
    }

    #[test]
    fn mapper_writes_switch_banks_and_nametables() {
        let mut c = Cartridge::parse(&file(2, 4, 0x30, 0)).unwrap();
        let chr: Vec<u8> = (0..0x8000).map(|i| (i / 0x2000) as u8).collect();
        c.chr = chr;
        assert_eq!(c.chr_byte(0x1000), 0);
        c.cpu_write(0x8000, 3, 7);
        assert_eq!((c.chr_byte(0x0000), c.chr_byte(0x1FFF)), (3, 3));
        // MMC1 selects one-screen layouts.
        let mut m = Cartridge::parse(&file(2, 0, 0x10, 0)).unwrap();
        for (i, bit) in [0u8, 0, 0, 0, 0].iter().enumerate() {
            m.cpu_write(0x8000, *bit, 10 + 2 * i as u64);
        }
        assert_eq!(m.nametables(), Mirroring::SingleLower);
        assert_eq!(Mirroring::SingleUpper.vram_offset(0x2C05), 0x405);
    }

    #[test]
    fn nametable_mirroring_maps_the_four_slots() {
        let h = Mirroring::Horizontal;
        assert_eq!([0x2000, 0x2400, 0x2800, 0x2C00].map(|a| h.vram_offset(a)), [0, 0, 0x400, 0x400]);
        let v = Mirroring::Vertical;
        assert_eq!([0x2000, 0x2400, 0x2800, 0x2C05].map(|a| v.vram_offset(a)), [0, 0x400, 0, 0x405]);
        // $3000-$3EFF mirror $2000-$2EFF.
        assert_eq!(v.vram_offset(0x3401), 0x401);
    }

    #[test]
    fn bad_files_are_named_errors() {
        assert!(matches!(Cartridge::parse(b"NES"), Err(CartridgeError::NotINes(_))));
        assert!(matches!(Cartridge::parse(&[0u8; 40]), Err(CartridgeError::NotINes(_))));
        assert_eq!(Cartridge::parse(&file(1, 1, 0x50, 0)), Err(CartridgeError::Mapper(5)));
        assert_eq!(
            Cartridge::parse(&file(1, 1, 0x70, 0x00)).unwrap_err().to_string(),
            "mapper 7 is not supported (this host runs mappers 0-4: NROM, MMC1, UxROM, CNROM, MMC3)"
        );
        // Each board's sizes: CNROM needs CHR ROM; MMC1 has at most 128 KiB of CHR ROM.
        assert!(matches!(Cartridge::parse(&file(2, 0, 0x30, 0)), Err(CartridgeError::Size(_))));
        assert!(matches!(Cartridge::parse(&file(2, 17, 0x10, 0)), Err(CartridgeError::Size(_))));
        // A NES 2.0 submapper that is another board.
        let mut f = file(2, 0, 0x20, 0x08);
        f[8] = 0x20;
        assert_eq!(Cartridge::parse(&f).unwrap_err().to_string(), "mapper 2 submapper 2 (bus conflicts) is not modelled");
        f[8] = 0x10;
        assert!(Cartridge::parse(&f).is_ok());
        // NES 2.0 mapper bits 8-11.
        let mut f = file(1, 1, 0, 0x08);
        f[8] = 0x01;
        assert_eq!(Cartridge::parse(&f), Err(CartridgeError::Mapper(256)));
        assert!(matches!(Cartridge::parse(&file(4, 1, 0, 0)), Err(CartridgeError::Size(_))));
        assert!(matches!(Cartridge::parse(&file(1, 2, 0, 0)), Err(CartridgeError::Size(_))));
        let mut short = file(2, 1, 0, 0);
        short.truncate(16 + 0x8000 + 100);
        assert_eq!(Cartridge::parse(&short), Err(CartridgeError::Truncated { len: 16 + 0x8000 + 100, want: 16 + 0x8000 + 0x2000 }));
        // An archaic header's garbage byte 7 does not make a mapper.
        let mut dd = file(1, 1, 0, 0x40);
        dd[12..16].copy_from_slice(b"Dude");
        assert!(Cartridge::parse(&dd).is_ok());
    }
}
