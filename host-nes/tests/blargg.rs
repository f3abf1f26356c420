//! blargg's NES test ROMs on the host with the reference CPU.

use host_nes::{Board, Cartridge, InputSchedule, ReferenceNes};
use isa_6502::front::{Mos6502Keys, Mos6502Machine, MemoryMap};
use isa_api::front::Program;

fn testdata(rel: &str) -> Option<std::path::PathBuf> {
    match std::env::var_os("WEAVER_TESTDATA") {
        Some(d) => Some(std::path::PathBuf::from(d).join(rel)),
        None => {
            assert!(std::env::var_os("CI").is_none(), "CI=true needs WEAVER_TESTDATA");
            println!("SKIPPED: WEAVER_TESTDATA is not set");
            None
        }
    }
}

/// Run a ROM on the reference CPU until blargg's $6000 status is final or `max_frames` frames pass.
fn run_rom(path: &std::path::Path, max_frames: u64) -> (Option<(u8, String)>, u64, ReferenceNes) {
    let bytes = std::fs::read(path).unwrap();
    let m = Mos6502Machine { keys: Mos6502Keys { map: MemoryMap::Nes, ..Default::default() } };
    let img = m.image(&Program { name: path.display().to_string(), bytes: bytes.clone(), expected_console: None }).unwrap();
    let board = Board::new(Cartridge::parse(&bytes).unwrap(), InputSchedule::default());
    let mut nes = ReferenceNes::new(&img, board);
    while nes.board.frames_finished() < max_frames {
        if let Err(f) = nes.step() {
            return (Some((255, format!("interpreter fault: {f}"))), nes.board.frames_finished(), nes);
        }
        if nes.instructions % 1024 == 0 {
            if let Some(r) = nes.test_result() {
                return (Some(r), nes.board.frames_finished(), nes);
            }
        }
    }
    (nes.test_result(), nes.board.frames_finished(), nes)
}

#[test]
fn probe_all() {
    let Some(dir) = testdata("nes") else { return };
    for sub in ["ppu_vbl_nmi/rom_singles", "cpu_interrupts_v2/rom_singles", "instr_timing/rom_singles"] {
        let mut roms: Vec<_> = std::fs::read_dir(dir.join(sub)).unwrap().map(|e| e.unwrap().path()).collect();
        roms.sort();
        for rom in roms {
            let (r, frames, _) = run_rom(&rom, 1200);
            println!("{}: {:?} after {frames} frames", rom.file_name().unwrap().to_string_lossy(), r.map(|(s, t)| (s, t.replace('\n', " | "))));
        }
    }
}
