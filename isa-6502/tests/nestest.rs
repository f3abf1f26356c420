//! kevtris' nestest (`$WEAVER_TESTDATA/nes/nestest.nes`) in automation mode against its golden log
//! (`nes/nestest.log`, 8,991 lines): before each instruction, PC, the opcode bytes, A, X, Y, P, SP and CYC must
//! equal the log's line. Automation mode: PC = $C000 after the reset sequence (A = X = Y = 0, P = $24, SP = $FD,
//! CYC = 7). The log's PPU column is not compared (no PPU here). Pass protocol: $02 and $03 are 00 at the end.

mod common;

use isa_6502::{Bus, Cpu, decode};

/// NROM (mapper 0) with a 16 KiB PRG: 2 KiB of RAM mirrored through $1FFF, PRG at $8000 and mirrored at $C000.
/// The PPU and APU/IO registers ($2000-$401F) read 0 and ignore writes; nestest needs neither.
struct NromBus {
    ram: [u8; 0x800],
    prg: Vec<u8>,
}

impl Bus for NromBus {
    fn read(&mut self, addr: u16) -> u8 {
        match addr {
            0x0000..=0x1FFF => self.ram[usize::from(addr & 0x07FF)],
            0x8000..=0xFFFF => self.prg[usize::from(addr - 0x8000) % self.prg.len()],
            _ => 0,
        }
    }

    fn write(&mut self, addr: u16, value: u8) {
        if addr < 0x2000 {
            self.ram[usize::from(addr & 0x07FF)] = value;
        }
    }
}

/// The PRG ROM of an iNES file: 16-byte header ("NES" $1A, PRG size in 16 KiB units), optional 512-byte trainer.
fn ines_prg(file: &[u8]) -> Vec<u8> {
    assert!(file.len() >= 16 && &file[..4] == b"NES\x1A", "not an iNES file");
    let banks = usize::from(file[4]);
    let start = 16 + if file[6] & 0x04 != 0 { 512 } else { 0 };
    let prg = file.get(start..start + banks * 0x4000).expect("the PRG ROM fits in the file");
    assert!(banks == 1 || banks == 2, "NROM has 16 or 32 KiB of PRG, not {banks} banks");
    prg.to_vec()
}

/// One line of the log: the state before its instruction.
#[derive(Debug, PartialEq, Eq)]
struct LogLine {
    pc: u16,
    bytes: Vec<u8>,
    a: u8,
    x: u8,
    y: u8,
    p: u8,
    sp: u8,
    cyc: u64,
}

fn parse_line(line: &str) -> LogLine {
    let hex8 = |s: &str| u8::from_str_radix(s, 16).unwrap_or_else(|_| panic!("hex byte '{s}' in: {line}"));
    let field = |key: &str| {
        line.split_whitespace()
            .find_map(|token| token.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in: {line}"))
    };
    LogLine {
        pc: u16::from_str_radix(&line[..4], 16).unwrap_or_else(|_| panic!("PC in: {line}")),
        bytes: line[6..15].split_whitespace().map(hex8).collect(),
        a: hex8(field("A:")),
        x: hex8(field("X:")),
        y: hex8(field("Y:")),
        p: hex8(field("P:")),
        sp: hex8(field("SP:")),
        cyc: field("CYC:").parse().unwrap_or_else(|_| panic!("CYC in: {line}")),
    }
}

#[test]
fn nestest_automation_mode_matches_the_golden_log() {
    let (Some(rom), Some(log)) = (common::testdata_file("nes/nestest.nes"), common::testdata_file("nes/nestest.log"))
    else {
        return;
    };
    let prg = ines_prg(&std::fs::read(rom).expect("read nestest.nes"));
    let log = std::fs::read_to_string(log).expect("read nestest.log");
    let expected: Vec<LogLine> = log.lines().filter(|l| !l.trim().is_empty()).map(parse_line).collect();

    let mut bus = NromBus { ram: [0; 0x800], prg };
    let mut cpu = Cpu::power_on(&mut bus);
    cpu.pc = 0xC000;
    for (n, want) in expected.iter().enumerate() {
        let len = decode(bus.read(cpu.pc)).byte_len();
        let bytes: Vec<u8> = (0..len).map(|i| bus.read(cpu.pc.wrapping_add(i))).collect();
        let got = LogLine { pc: cpu.pc, bytes, a: cpu.a, x: cpu.x, y: cpu.y, p: cpu.p, sp: cpu.s, cyc: cpu.cycles };
        assert_eq!(got, *want, "nestest.log line {} differs", n + 1);
        if let Err(fault) = cpu.step(&mut bus) {
            panic!("nestest.log line {}: {fault}", n + 1);
        }
    }
    let (official, unofficial) = (bus.read(0x02), bus.read(0x03));
    println!(
        "nestest: {} log lines compared, 0 mismatches; {} cycles; result bytes $02 = {official:02X}, $03 = {unofficial:02X}",
        expected.len(),
        cpu.cycles
    );
    assert_eq!((official, unofficial), (0, 0), "nestest's error codes ($02 official, $03 unofficial opcodes)");
    assert_eq!(expected.len(), 8_991, "log lines");
}
