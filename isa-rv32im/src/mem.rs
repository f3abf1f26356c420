//! Flat byte-addressed little-endian RAM (Unpriv §1.4 "Memory": byte-addressed, little-endian for RISC-V).
//!
//! Misaligned accesses (Unpriv §2.6 leaves them to the execution environment) are performed byte by byte, which is
//! what qemu-riscv32 user mode does for ordinary loads and stores: the access succeeds and returns the same bytes
//! as the aligned pieces would (checked in the lockstep and misalignment tests).

/// Default RAM size: 256 KiB.
pub const DEFAULT_RAM_SIZE: u32 = 256 * 1024;
/// Default base address (the RISC-V Linux linker default text address 0x10000, so the same ELF runs under
/// qemu-riscv32 user mode).
pub const DEFAULT_RAM_BASE: u32 = 0x0001_0000;

/// RAM of `bytes.len()` bytes mapped at `[base, base + len)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ram {
    base: u32,
    bytes: Vec<u8>,
}

impl Ram {
    /// Zero-filled RAM. The end address `base + size` may be 2^32 at most (returns `None` beyond that).
    pub fn new(base: u32, size: u32) -> Option<Ram> {
        if base as u64 + size as u64 > 1u64 << 32 {
            return None;
        }
        Some(Ram {
            base,
            bytes: vec![0; size as usize],
        })
    }

    /// First address.
    pub fn base(&self) -> u32 {
        self.base
    }

    /// One past the last address (a u64 because RAM may end at 2^32).
    pub fn end(&self) -> u64 {
        self.base as u64 + self.bytes.len() as u64
    }

    /// Size in bytes.
    pub fn size(&self) -> u32 {
        self.bytes.len() as u32
    }

    /// Offset of `[addr, addr + len)` in the byte vector, if the whole range lies in RAM. Addresses do not wrap
    /// around 2^32.
    pub fn offset(&self, addr: u32, len: u32) -> Option<usize> {
        let start = addr as u64;
        if start >= self.base as u64 && start + len as u64 <= self.end() {
            Some((addr - self.base) as usize)
        } else {
            None
        }
    }

    /// Reads `len` (1, 2 or 4) bytes little-endian, zero-extended.
    pub fn read(&self, addr: u32, len: u32) -> Option<u32> {
        let off = self.offset(addr, len)?;
        let mut v = 0u32;
        for i in (0..len as usize).rev() {
            v = (v << 8) | self.bytes[off + i] as u32;
        }
        Some(v)
    }

    /// Writes the low `len` (1, 2 or 4) bytes of `value` little-endian. Returns `None` (and writes nothing) if
    /// any byte falls outside RAM.
    pub fn write(&mut self, addr: u32, len: u32, value: u32) -> Option<()> {
        let off = self.offset(addr, len)?;
        for i in 0..len as usize {
            self.bytes[off + i] = (value >> (8 * i)) as u8;
        }
        Some(())
    }

    /// The bytes `[addr, addr + len)`, if all in RAM.
    pub fn slice(&self, addr: u32, len: u32) -> Option<&[u8]> {
        let off = self.offset(addr, len)?;
        Some(&self.bytes[off..off + len as usize])
    }

    /// Copies `data` to `addr`; `None` if it does not fit.
    pub fn load(&mut self, addr: u32, data: &[u8]) -> Option<()> {
        let len = u32::try_from(data.len()).ok()?;
        let off = self.offset(addr, len)?;
        self.bytes[off..off + data.len()].copy_from_slice(data);
        Some(())
    }

    /// All of RAM.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn little_endian_and_bounds() {
        let mut r = Ram::new(0x1000, 16).unwrap();
        r.write(0x1001, 4, 0x1122_3344).unwrap(); // misaligned
        assert_eq!(r.bytes()[1..5], [0x44, 0x33, 0x22, 0x11]);
        assert_eq!(r.read(0x1001, 4), Some(0x1122_3344));
        assert_eq!(r.read(0x1002, 2), Some(0x2233));
        assert_eq!(r.read(0x100c, 4), Some(0));
        assert_eq!(r.read(0x100d, 4), None); // straddles the end
        assert_eq!(r.read(0x0fff, 1), None);
        assert_eq!(r.write(0x100e, 4, 7), None);
        assert_eq!(r.bytes()[14..], [0, 0]); // nothing written on a fault
        assert!(Ram::new(0xffff_fff0, 16).is_some());
        assert!(Ram::new(0xffff_fff0, 17).is_none());
        let top = Ram::new(0xffff_fff0, 16).unwrap();
        assert_eq!(top.read(0xffff_fffc, 4), Some(0));
        assert_eq!(top.read(0xffff_fffe, 4), None); // no wrap-around
    }
}
