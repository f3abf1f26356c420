//! blargg's NES test ROMs on the host with the reference CPU: the PPU's vertical blank and NMI timing, sprite 0
//! hit, the CPU's interrupt and instruction timing as the board sees them, MMC3's scanline counter. The ROMs report through PRG RAM
//! ($6000 status, text from $6004) or, the older ones, on screen (their text in the nametable).

mod common;
use common::*;

use host_nes::{Board, InputSchedule, ReferenceNes};


/// How a ROM's run ended: its status (0 = passed) and text.
#[derive(Debug)]
struct Outcome {
    status: u8,
    text: String,
    frames: u64,
}

/// Run a ROM on the reference CPU until it reports or `max_frames` pass: through $6000, or on screen
/// (`PASSED` / `FAILED` in nametable 0).
fn run_rom(path: &std::path::Path, max_frames: u64) -> Outcome {
    let bytes = std::fs::read(path).unwrap();
    let (cart, image) = host_nes::load_rom(&path.display().to_string(), &bytes).unwrap();
    let mut nes = ReferenceNes::new(&image, Board::new(cart, InputSchedule::default()));
    while nes.board.frames_finished() < max_frames {
        if let Err(f) = nes.step() {
            return Outcome { status: 255, text: format!("interpreter fault: {f}"), frames: nes.board.frames_finished() };
        }
        if nes.instructions % 1024 == 0 {
            if let Some((status, text)) = nes.test_result() {
                return Outcome { status, text, frames: nes.board.frames_finished() };
            }
            let screen = nes.board.ppu.nametable_text(0);
            if screen.contains("PASSED") {
                return Outcome { status: 0, text: screen, frames: nes.board.frames_finished() };
            }
            if screen.contains("FAILED") {
                return Outcome { status: 1, text: screen, frames: nes.board.frames_finished() };
            }
        }
    }
    Outcome { status: 254, text: format!("no result after {max_frames} frames"), frames: max_frames }
}

fn roms(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "nes")).collect();
    v.sort();
    v
}

/// Runs every ROM of `sub`; those named in `pass` must pass, the others are reported (and must not pass
/// silently: a newly passing ROM goes into the list).
fn suite(sub: &str, pass: &[&str]) {
    let Some(dir) = testdata(sub) else { return };
    let mut passed = Vec::new();
    for rom in roms(&dir) {
        let name = rom.file_name().unwrap().to_string_lossy().to_string();
        let o = run_rom(&rom, 1500);
        println!("{name}: status {} after {} frames: {}", o.status, o.frames, o.text.replace('\n', " | "));
        if o.status == 0 {
            passed.push(name);
        }
    }
    let want: Vec<String> = pass.iter().map(|s| s.to_string()).collect();
    assert_eq!(passed, want, "{sub}: the ROMs that pass");
}

#[test]
fn ppu_vbl_nmi() {
    let all: Vec<String> = [
        "01-vbl_basics",
        "02-vbl_set_time",
        "03-vbl_clear_time",
        "04-nmi_control",
        "05-nmi_timing",
        "06-suppression",
        "07-nmi_on_timing",
        "08-nmi_off_timing",
        "09-even_odd_frames",
        "10-even_odd_timing",
    ]
    .iter()
    .map(|n| format!("{n}.nes"))
    .collect();
    suite("nes/ppu_vbl_nmi/rom_singles", &all.iter().map(String::as_str).collect::<Vec<_>>());
}

#[test]
fn sprite_hit_tests() {
    suite(
        "nes/sprite_hit_tests_2005.10.05",
        &[
            "01.basics.nes",
            "02.alignment.nes",
            "03.corners.nes",
            "04.flip.nes",
            "05.left_clip.nes",
            "06.right_edge.nes",
            "07.screen_bottom.nes",
            "08.double_height.nes",
            "09.timing_basics.nes",
            "10.timing_order.nes",
            "11.edge_timing.nes",
        ],
    );
}

#[test]
fn vbl_nmi_timing() {
    suite(
        "nes/vbl_nmi_timing",
        &["1.frame_basics.nes", "2.vbl_timing.nes", "3.even_odd_frames.nes", "4.vbl_clear_timing.nes", "5.nmi_suppression.nes", "6.nmi_disable.nes", "7.nmi_timing.nes"],
    );
}

#[test]
fn cpu_interrupts_v2() {
    suite(
        "nes/cpu_interrupts_v2/rom_singles",
        &["1-cli_latency.nes", "2-nmi_and_brk.nes", "3-nmi_and_irq.nes", "4-irq_and_dma.nes", "5-branch_delays_irq.nes"],
    );
}

#[test]
fn instr_timing() {
    suite("nes/instr_timing/rom_singles", &["2-branch_timing.nes"]);
}

/// MMC3's scanline counter (the reference CPU on our board). Of the two revision tests only revision B's passes:
/// the host models the newer MMC3 (`host_nes::mapper`), as every other emulator's default.
#[test]
fn mmc3_test() {
    suite("nes/mmc3_test_2/rom_singles", &["1-clocking.nes", "2-details.nes", "3-A12_clocking.nes", "4-scanline_timing.nes", "5-MMC3.nes"]);
}

/// The older build of the same tests; its sixth is MMC6's.
#[test]
fn mmc3_test_older() {
    suite("nes/mmc3_test", &["1-clocking.nes", "2-details.nes", "3-A12_clocking.nes", "4-scanline_timing.nes", "5-MMC3.nes"]);
}

#[test]
fn mmc3_irq_tests() {
    suite("nes/mmc3_irq_tests", &["1.Clocking.nes", "2.Details.nes", "3.A12_clocking.nes", "4.Scanline_timing.nes", "6.MMC3_rev_B.nes"]);
}
