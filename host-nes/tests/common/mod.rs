//! Helpers shared by host-nes' tests: the shared test data, a recorder of frame hashes and audio.
#![allow(dead_code)]

use host_nes::Recorder;
use host_nes::output::fnv1a;

/// A path under the shared test data (`WEAVER_TESTDATA`); `None` (SKIPPED) when it is unset or the file is
/// missing, a failure under CI.
#[allow(unused_imports)]
pub use test_kit::testdata;

/// Every frame's hash (frames must come in order) and every audio sample.
#[derive(Default)]
pub struct Hashes {
    pub frames: Vec<u64>,
    pub audio: Vec<i16>,
}

impl Recorder for Hashes {
    fn frame(&mut self, f: &host_nes::Frame) {
        assert_eq!(f.number as usize, self.frames.len());
        self.frames.push(fnv1a(f.pixels.iter().copied()));
    }
    fn samples(&mut self, s: &[i16]) {
        self.audio.extend_from_slice(s);
    }
}

/// A 512 KiB MMC1 cartridge (SUROM: CHR bank 0's bit 4 selects the PRG ROM's 256 KiB half), built here since
/// `nes/games` has none. Bank `b` (0-31) of 16 KiB starts with `LDA #b; RTS` and ends in ten NOPs; every bank
/// holds the same program at $EAEA (every vector is $EAEA, so the NOPs are the vectors too). Each frame, in
/// vertical blank, with `v` = 13 x the frame number (mod 256): a read-modify-write to ROM (`INC $FFF6`, whose
/// first write, $EA, resets MMC1's serial port); serial writes of the PRG mode `3 - (v >> 5) % 4` to control,
/// `v & $10` to CHR bank 0 (the half) and `v & $0F` to the PRG bank; `JSR $8000` (the $8000 window's bank
/// number) and `JSR $BFF6` (NOPs from $BFF6 into the $C000 window, whose bank number it returns). The second
/// number is the backdrop colour, the first the pulse channel's period: a wrong bank shows in the frame and the
/// sound.
pub fn surom_test_rom() -> Vec<u8> {
    const ORG: usize = 0xEAEA;
    let mut c: Vec<u8> = Vec::new();
    // Waits for vertical blank: BIT $2002; BPL back to the BIT.
    let wait = |c: &mut Vec<u8>| c.extend([0x2C, 0x02, 0x20, 0x10, 0xFB]);
    // MMC1's serial write of A to the register at $hi00: five STAs, A shifted right between them.
    let serial = |c: &mut Vec<u8>, hi: u8| {
        for i in 0..5 {
            c.extend([0x8D, 0x00, hi]);
            if i < 4 {
                c.push(0x4A);
            }
        }
    };
    c.extend([0x78, 0xD8, 0xA2, 0xFF, 0x9A]); // SEI; CLD; LDX #$FF; TXS
    wait(&mut c);
    wait(&mut c); // the PPU's warm-up
    c.extend([0xA9, 0x80, 0x8D, 0x00, 0x80]); // LDA #$80; STA $8000 (reset the serial port)
    c.extend([0xA9, 0x01, 0x8D, 0x15, 0x40]); // LDA #1; STA $4015 (pulse 1 on)
    c.extend([0xA9, 0xBF, 0x8D, 0x00, 0x40]); // LDA #$BF; STA $4000 (duty 2, constant volume 15)
    c.extend([0xA9, 0x00, 0x8D, 0x01, 0x40, 0x85, 0x00]); // LDA #0; STA $4001 (no sweep); STA $00 (v)
    let lp = ORG + c.len();
    wait(&mut c);
    c.extend([0xEE, 0xF6, 0xFF]); // INC $FFF6
    c.extend([0xA5, 0x00, 0x4A, 0x4A, 0x4A, 0x4A, 0x4A, 0x29, 0x03, 0x49, 0x03, 0x0A, 0x0A]); // (3 - (v >> 5) % 4) << 2
    serial(&mut c, 0x80);
    c.extend([0xA5, 0x00, 0x29, 0x10]); // v & $10
    serial(&mut c, 0xA0);
    c.extend([0xA5, 0x00, 0x29, 0x0F]); // v & $0F
    serial(&mut c, 0xE0);
    c.extend([0x20, 0x00, 0x80, 0x85, 0x01]); // JSR $8000; STA $01
    c.extend([0x20, 0xF6, 0xBF]); // JSR $BFF6
    c.extend([0xA2, 0x3F, 0x8E, 0x06, 0x20, 0xA2, 0x00, 0x8E, 0x06, 0x20]); // PPU address $3F00
    c.extend([0x8D, 0x07, 0x20]); // STA $2007: the backdrop
    c.extend([0x8E, 0x06, 0x20, 0x8E, 0x06, 0x20]); // PPU address $0000
    c.extend([0xA5, 0x01, 0x0A, 0x0A, 0x18, 0x69, 0x08, 0x8D, 0x02, 0x40]); // period 4 x first + 8
    c.extend([0xA9, 0x08, 0x8D, 0x03, 0x40]); // LDA #8; STA $4003 (period high 0, length, restart)
    c.extend([0xA5, 0x00, 0x18, 0x69, 0x0D, 0x85, 0x00]); // v += 13
    c.extend([0x4C, lp as u8, (lp >> 8) as u8]); // JMP back
    let mut rom = vec![0x4E, 0x45, 0x53, 0x1A, 32, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    for b in 0..32u8 {
        let mut bank = vec![0xEA; 0x4000];
        bank[..3].copy_from_slice(&[0xA9, b, 0x60]);
        bank[ORG - 0xC000..][..c.len()].copy_from_slice(&c);
        rom.extend(bank);
    }
    rom
}
