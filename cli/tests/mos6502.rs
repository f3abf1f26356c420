//! The 2A03 through the `loom` verbs: `loom run configs/6502-flat.toml` (the demo, woven and decoded on the
//! incremental executor), a raw binary with `--load-at` / `--pc`, `loom lockstep` (the reference evaluator and the
//! interpreter), and clear errors for bad programs and flags.

mod common;
use common::*;

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = loom().current_dir(repo()).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string())
}

#[test]
fn the_demo_runs_and_locksteps() {
    let (code, stdout, stderr) = run(&["run", "configs/6502-flat.toml", "--no-progress"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.as_bytes(), isa_6502::front::DEMO_OUTPUT, "{stderr}");
    let (code, stdout, stderr) = run(&["lockstep", "configs/6502-flat.toml"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("3099 instructions compared") && stdout.contains(", 0 programs disagreeing"), "{stdout}");
}

#[test]
fn a_raw_binary_at_load_at_and_pc() {
    // At $0300, entered at $0302: LDX #$05; (entry) LDA #'A'; STA $F001; INX; TXA; ... then STA $F002 (exit 7).
    // $0300: A2 05          LDX #5 (skipped: entry is $0302)
    // $0302: A9 48 8D 01 F0 LDA #'H'; STA $F001
    // $0307: A9 69 8D 01 F0 LDA #'i'; STA $F001
    // $030C: A9 07 8D 02 F0 LDA #7;   STA $F002
    let prog = [0xA2, 0x05, 0xA9, 0x48, 0x8D, 0x01, 0xF0, 0xA9, 0x69, 0x8D, 0x01, 0xF0, 0xA9, 0x07, 0x8D, 0x02, 0xF0];
    let dir = scratch("mos6502-raw");
    let bin = dir.join("hi.bin");
    std::fs::write(&bin, prog).unwrap();
    let (code, stdout, stderr) = run(&["run", "configs/6502-flat.toml", bin.to_str().unwrap(), "--load-at", "0x0300", "--pc", "$0302", "--no-progress"]);
    assert_eq!((code, stdout.as_str()), (Some(7), "Hi"), "{stderr}");
    let (code, stdout, _) = run(&["lockstep", "configs/6502-flat.toml", bin.to_str().unwrap(), "--load-at", "768", "--pc", "770"]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("total: 6 instructions compared"), "{stdout}");
}

#[test]
fn bad_programs_and_flags_are_named() {
    let dir = scratch("mos6502-bad");
    let mut mmc1 = b"NES\x1a\x02\x01\x10\x00".to_vec();
    mmc1.resize(16 + 0x8000, 0);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("mmc1.nes", mmc1, "mapper 1 is not supported"),
        ("short.nes", b"NES\x1a\x02\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00abc".to_vec(), "the file ends before its 32 KiB of PRG ROM"),
        ("big.bin", vec![0xEA; 0x1000], "run past the end of the 64 KiB address space"),
    ];
    for (name, bytes, needle) in cases {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        let extra: &[&str] = if name == "big.bin" { &["--load-at", "0xF800"] } else { &[] };
        let mut args = vec!["run", "configs/6502-flat.toml", p.to_str().unwrap()];
        args.extend_from_slice(extra);
        let (code, _, stderr) = run(&args);
        assert_eq!(code, Some(1), "{name}: {stderr}");
        assert!(stderr.contains(needle), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // A machine key another machine does not take is refused by name.
    let (code, _, stderr) = run(&["run", "configs/acc8.toml", "--load-at", "0x10"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("load_at"), "{stderr}");
    let (code, _, stderr) = run(&["run", "configs/6502-flat.toml", "--pc", "0x1_0000_0000_0000_0000"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is not an address"), "{stderr}");
}

/// A 16 KiB NROM image of `code` at $8000 (also at $C000), its reset vector at $8000.
fn nrom(code: &[u8]) -> Vec<u8> {
    let mut f = b"NES\x1a\x01\x01\x00\x00".to_vec();
    f.resize(16, 0);
    let mut prg = vec![0u8; 0x4000];
    prg[..code.len()].copy_from_slice(code);
    prg[0x3FFC] = 0x00;
    prg[0x3FFD] = 0x80;
    f.extend(prg);
    f.extend(vec![0u8; 0x2000]); // CHR
    f
}

#[test]
fn the_nes_map_mirrors_ram_keeps_rom_and_asks_the_host_for_io() {
    // LDA $2002 (an IO read: the stub host answers $80); STA $10; LDA #$42; STA $0805 (mirror of $0005);
    // LDA $05; STA $8000 (ROM: ignored); LDA $8000; STA $11; LDA #1; STA $2000 (an IO write); then blargg's
    // protocol: "ok" at $6004, DE B0 61 at $6001, and $6000 = 0 when $10 = $80, $11 = $AD and $05 = $42, else 1.
    let code = [
        0xAD, 0x02, 0x20, 0x85, 0x10, 0xA9, 0x42, 0x8D, 0x05, 0x08, 0xA5, 0x05, 0x8D, 0x00, 0x80, 0xAD, 0x00, 0x80, 0x85, 0x11, 0xA9,
        0x01, 0x8D, 0x00, 0x20, 0xA9, 0x6F, 0x8D, 0x04, 0x60, 0xA9, 0x6B, 0x8D, 0x05, 0x60, 0xA9, 0x00, 0x8D, 0x06, 0x60, 0xA9, 0xDE,
        0x8D, 0x01, 0x60, 0xA9, 0xB0, 0x8D, 0x02, 0x60, 0xA9, 0x61, 0x8D, 0x03, 0x60, 0xA5, 0x10, 0xC9, 0x80, 0xD0, 0x10, 0xA5, 0x11,
        0xC9, 0xAD, 0xD0, 0x0A, 0xA5, 0x05, 0xC9, 0x42, 0xD0, 0x04, 0xA9, 0x00, 0xF0, 0x02, 0xA9, 0x01, 0x8D, 0x00, 0x60, 0x4C, 0x52,
        0x80,
    ];
    let dir = scratch("mos6502-nes");
    let rom = dir.join("map.nes");
    std::fs::write(&rom, nrom(&code)).unwrap();
    let (code, stdout, stderr) = run(&["run", "configs/nes.toml", rom.to_str().unwrap(), "--max-steps", "60", "--no-progress"]);
    assert_eq!((code, stdout.as_str()), (Some(0), "ok"), "{stderr}");
    assert!(stderr.contains("test status $00 at $6000 (passed)"), "{stderr}");
    let (code, stdout, stderr) = run(&["lockstep", "configs/nes.toml", rom.to_str().unwrap(), "--max-steps", "60"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains(", 0 programs disagreeing"), "{stdout}");
    // A raw binary is not a NES program.
    let raw = dir.join("raw.bin");
    std::fs::write(&raw, [0xEA]).unwrap();
    let (code, _, stderr) = run(&["run", "configs/nes.toml", raw.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("the NES map runs iNES files"), "{stderr}");
}

#[test]
fn the_nes_demo_ends_when_the_host_sees_its_result() {
    // A NES program never halts: the host's devices end the run once blargg's status at $6000 is final.
    let (code, stdout, stderr) = run(&["run", "configs/nes.toml", "--no-progress"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.as_bytes(), isa_6502::front::DEMO_OUTPUT, "{stderr}");
    assert!(stderr.contains("test status $00 at $6000 (passed)"), "{stderr}");
    let (code, stdout, stderr) = run(&["lockstep", "configs/nes.toml"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("expected") && stdout.contains(", 0 programs disagreeing"), "{stdout}");
}

#[test]
fn an_illegal_opcode_is_a_fault_naming_opcode_and_pc() {
    // At $0400: INX; INX; JAM ($02).
    let dir = scratch("mos6502-jam");
    let bin = dir.join("jam.bin");
    std::fs::write(&bin, [0xE8, 0xE8, 0x02]).unwrap();
    let (code, _, stderr) = run(&["run", "configs/6502-flat.toml", bin.to_str().unwrap(), "--no-progress"]);
    assert_eq!(code, Some(134), "{stderr}");
    assert!(stderr.contains("machine fault: JAM $02 (JAM) at $0402"), "{stderr}");
}
