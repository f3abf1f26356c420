//! Cartridges: the iNES and NES 2.0 file formats (NESdev wiki, "iNES" and "NES 2.0"), mapper 0 (NROM).
//!
//! An NROM board holds 16 or 32 KiB of PRG ROM at $8000 (16 KiB appear twice, at $8000 and $C000), 8 KiB of
//! CHR ROM (or 8 KiB of CHR RAM when the header gives no CHR ROM) at PPU $0000-$1FFF, and wires the PPU's 2 KiB
//! of nametable RAM horizontally or vertically (the header's mirroring bit), or gives four screens.

use thiserror::Error;

/// Why a file is not a cartridge this host can run. Each names the problem.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CartridgeError {
    /// No `NES\x1A` magic, or fewer than 16 bytes.
    #[error("not an iNES file: {0}")]
    NotINes(String),
    /// A mapper other than 0.
    #[error("mapper {0} is not supported (this host runs mapper 0, NROM)")]
    Mapper(u16),
    /// A PRG or CHR size NROM does not have.
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
        };
        table * 0x400 + within
    }
}

/// A mapper-0 cartridge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cartridge {
    /// PRG ROM: 16 or 32 KiB.
    pub prg: Vec<u8>,
    /// CHR: 8 KiB of ROM, or of RAM (zeros) when `chr_ram`.
    pub chr: Vec<u8>,
    /// Whether `chr` is RAM (the PPU may write it).
    pub chr_ram: bool,
    pub mirroring: Mirroring,
    /// Whether the header is NES 2.0.
    pub nes2: bool,
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
        if mapper != 0 {
            return Err(CartridgeError::Mapper(mapper));
        }
        if prg_units != 1 && prg_units != 2 {
            return Err(CartridgeError::Size(format!("NROM has 16 or 32 KiB of PRG ROM, the header says {} KiB", prg_units * 16)));
        }
        if chr_units > 1 {
            return Err(CartridgeError::Size(format!("NROM has at most 8 KiB of CHR ROM, the header says {} KiB", chr_units * 8)));
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
        Ok(Cartridge { prg, chr, chr_ram, mirroring, nes2 })
    }

    /// The PRG ROM byte the CPU reads at `addr` ($8000-$FFFF; 16 KiB repeat).
    pub fn prg_byte(&self, addr: u16) -> u8 {
        self.prg[usize::from(addr) % self.prg.len()]
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
        assert_eq!(Cartridge::parse(&file(1, 1, 0x10, 0)), Err(CartridgeError::Mapper(1)));
        assert_eq!(Cartridge::parse(&file(1, 1, 0x40, 0x00)).unwrap_err().to_string(), "mapper 4 is not supported (this host runs mapper 0, NROM)");
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
