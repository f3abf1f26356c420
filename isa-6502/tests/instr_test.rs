//! blargg's `instr_test-v5` (`$WEAVER_TESTDATA/nes/instr_test-v5/rom_singles`, 16 ROMs, mapper 0) on the
//! interpreter in the NES memory map: 2 KiB of RAM mirrored through $1FFF, 8 KiB of PRG RAM at $6000-$7FFF, the
//! PRG ROM at $8000 (16 KiB mirrored at $C000). The test protocol (the data's README): while a test runs,
//! $6001-$6003 hold DE B0 61 and $6000 is $80; a final $6000 below $80 is the result (0 = passed) and the text
//! at $6004 says why.
//!
//! The ROMs touch the PPU only to wait for vertical blank at start-up, so the bus answers $2002 with the
//! vblank bit set (no PPU is emulated here; host-nes has one) and ignores the other PPU/APU registers.

mod common;

use isa_6502::front::ines_prg;
use isa_6502::{Bus, Cpu};

struct NesBus {
    ram: [u8; 0x800],
    prg_ram: Vec<u8>,
    prg: Vec<u8>,
}

impl Bus for NesBus {
    fn read(&mut self, addr: u16) -> u8 {
        match addr {
            0x0000..=0x1FFF => self.ram[usize::from(addr & 0x07FF)],
            0x2000..=0x3FFF if addr & 7 == 2 => 0x80,
            0x6000..=0x7FFF => self.prg_ram[usize::from(addr - 0x6000)],
            0x8000..=0xFFFF => self.prg[usize::from(addr - 0x8000) % self.prg.len()],
            _ => 0,
        }
    }

    fn write(&mut self, addr: u16, value: u8) {
        match addr {
            0x0000..=0x1FFF => self.ram[usize::from(addr & 0x07FF)] = value,
            0x6000..=0x7FFF => self.prg_ram[usize::from(addr - 0x6000)] = value,
            _ => {}
        }
    }
}

/// Runs one ROM until it reports; returns ($6000, the text at $6004, instructions run).
fn run_rom(file: &[u8]) -> (u8, String, u64) {
    let prg = ines_prg(file).expect("an NROM image");
    let mut bus = NesBus { ram: [0; 0x800], prg_ram: vec![0; 0x2000], prg };
    let mut cpu = Cpu::power_on(&mut bus);
    let mut started = false;
    for n in 0..200_000_000u64 {
        cpu.step(&mut bus).unwrap_or_else(|f| panic!("fault after {n} instructions: {f}"));
        if n % 1024 != 0 {
            continue;
        }
        let signed = bus.prg_ram[1..4] == [0xDE, 0xB0, 0x61];
        let status = bus.prg_ram[0];
        if signed && status == 0x80 {
            started = true;
        }
        if signed && started && status < 0x80 {
            let text: Vec<u8> = bus.prg_ram[4..].iter().take_while(|&&b| b != 0).copied().collect();
            return (status, String::from_utf8_lossy(&text).trim().to_string(), n);
        }
    }
    panic!("no result within 200,000,000 instructions");
}

#[test]
fn blargg_instr_test_v5_all_16_pass_on_the_interpreter() {
    let Some(dir) = common::testdata_file("nes/instr_test-v5/rom_singles") else { return };
    let mut roms: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "nes")).collect();
    roms.sort();
    assert_eq!(roms.len(), 16);
    let mut total = 0;
    for rom in &roms {
        let (status, text, n) = run_rom(&std::fs::read(rom).unwrap());
        let name = rom.file_name().unwrap().to_string_lossy();
        println!("{name}: status {status}, {n} instructions: {}", text.replace('\n', " | "));
        assert_eq!(status, 0, "{name}: {text}");
        total += n;
    }
    println!("instr_test-v5: 16/16 passed on the interpreter ({total} instructions)");
}
