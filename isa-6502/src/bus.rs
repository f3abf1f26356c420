//! The CPU's view of memory: a [`Bus`] that the NES memory map (a later issue) or a flat RAM ([`FlatRam`])
//! implements.

use thiserror::Error;

/// What the CPU reads and writes, one byte per cycle. The CPU performs every access of the real chip, dummy
/// reads and the double write of read-modify-write instructions included, so a bus with side effects (the NES's
/// PPU and APU registers) sees what the hardware would.
pub trait Bus {
    /// Reads the byte at `addr` (one CPU cycle).
    fn read(&mut self, addr: u16) -> u8;
    /// Writes `value` at `addr` (one CPU cycle).
    fn write(&mut self, addr: u16, value: u8);
}

/// A loaded image that does not fit below $10000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("an image of {len} bytes loaded at ${addr:04X} runs past $FFFF")]
pub struct ImageTooLarge {
    /// Where the image was to start.
    pub addr: u16,
    /// Its length in bytes.
    pub len: usize,
}

/// 64 KiB of RAM over the whole address space, with no devices: the map of Tom Harte's and Klaus Dormann's tests.
#[derive(Clone)]
pub struct FlatRam {
    bytes: Box<[u8]>,
}

impl FlatRam {
    /// The address space's size in bytes.
    pub const SIZE: usize = 0x1_0000;

    /// 64 KiB of zeros.
    pub fn new() -> Self {
        FlatRam { bytes: vec![0; Self::SIZE].into_boxed_slice() }
    }

    /// Copies `image` to `addr..addr + image.len()`; an image that would run past $FFFF is refused whole.
    pub fn load(&mut self, addr: u16, image: &[u8]) -> Result<(), ImageTooLarge> {
        let start = usize::from(addr);
        let region = self.bytes.get_mut(start..start + image.len()).ok_or(ImageTooLarge { addr, len: image.len() })?;
        region.copy_from_slice(image);
        Ok(())
    }

    /// The whole address space, $0000 first.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes
    }
}

impl Default for FlatRam {
    fn default() -> Self {
        Self::new()
    }
}

impl Bus for FlatRam {
    fn read(&mut self, addr: u16) -> u8 {
        self.bytes[usize::from(addr)]
    }

    fn write(&mut self, addr: u16, value: u8) {
        self.bytes[usize::from(addr)] = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_fits_exactly_or_is_refused() {
        let mut ram = FlatRam::new();
        assert_eq!(ram.load(0xFFFE, &[1, 2]), Ok(()));
        assert_eq!(ram.read(0xFFFF), 2);
        assert_eq!(ram.load(0xFFFF, &[1, 2]), Err(ImageTooLarge { addr: 0xFFFF, len: 2 }));
        assert_eq!(ram.load(0, &vec![7; FlatRam::SIZE]), Ok(()));
        assert_eq!(ram.as_slice()[0x1234], 7);
    }
}
