//! Our host with the reference CPU against an independent NES emulator, `tetanes-core` (crates.io, MIT/Apache):
//! the same ROM and buttons, every frame's palette indices compared.

mod common;
use common::*;

use host_nes::{InputSchedule, Recorder};
use tetanes_core::input::JoypadBtnState;
use tetanes_core::prelude::*;


/// tetanes' frames: palette indices (its raw frame buffer, emphasis bits dropped).
fn tetanes_frames(rom: &[u8], input: &InputSchedule, frames: u64) -> Vec<Vec<u8>> {
    let cfg = Config::default().with_ram_state(RamState::AllZeros).with_sram_dir(None);
    let mut deck = ControlDeck::with_config(cfg);
    deck.load_rom("rom", &mut std::io::Cursor::new(rom)).expect("tetanes loads the ROM");
    let mut out = Vec::new();
    for f in 0..frames {
        let (p1, p2) = input.at(f);
        for (player, buttons) in [(Player::One, p1), (Player::Two, p2)] {
            let pad = deck.joypad_mut(player);
            for bit in 0..8 {
                pad.set_button(JoypadBtnState::from_bits_truncate(1 << bit), buttons & (1 << bit) != 0);
            }
        }
        let _ = deck.clock_frame().expect("tetanes runs the frame");
        out.push(deck.frame_buffer_raw().iter().map(|&p| (p & 0x3F) as u8).collect());
    }
    out
}

#[derive(Default)]
struct Keep(Vec<Vec<u8>>);

impl Recorder for Keep {
    fn frame(&mut self, f: &host_nes::Frame) {
        self.0.push(f.pixels.clone());
    }
    fn samples(&mut self, _: &[i16]) {}
}

fn ours(rom: &[u8], input: &InputSchedule, frames: u64) -> Vec<Vec<u8>> {
    let (cart, image) = host_nes::load_rom("rom", rom).unwrap();
    let mut k = Keep::default();
    host_nes::run_reference(cart, &image, input.clone(), frames, &mut k).unwrap();
    k.0
}

fn differing(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x != y).count()
}

#[test]
fn nestest_screens_equal_tetanes() {
    let Some(path) = testdata("nes/nestest.nes") else { return };
    let rom = std::fs::read(path).unwrap();
    let input = InputSchedule::parse("input", "0 -\n20 Start\n24 -\n").unwrap();
    let n = 60;
    let (a, b) = (ours(&rom, &input, n), tetanes_frames(&rom, &input, n));
    let mut compared = 0;
    for i in 0..n as usize {
        let rows: Vec<usize> = (0..240).filter(|r| a[i][r * 256..(r + 1) * 256] != b[i][r * 256..(r + 1) * 256]).collect();
        if i == 3 {
            // The frame in which nestest turns rendering on, mid-frame: the two emulators start the PPU at a
            // different dot relative to the CPU's reset (power-on alignment, which varies on hardware too),
            // so the first rendered rows (22-26) start a few dots apart. Only those rows differ.
            assert!(rows.len() <= 5 && rows.windows(2).all(|w| w[1] == w[0] + 1), "frame 3 differs in rows {rows:?}");
            continue;
        }
        assert!(rows.is_empty(), "frame {i}: {} pixels differ from tetanes, rows {rows:?}", differing(&a[i], &b[i]));
        compared += 1;
    }
    println!("nestest: {compared} of {n} frames identical to tetanes-core's (frame 3 explained)");
    // The run reached the results screen: its frames changed after Start.
    assert_ne!(a[10], a[59]);
}

#[test]
fn the_demos_frames_equal_tetanes() {
    let input = InputSchedule::parse("host-nes/demo/input.txt", host_nes::DEMO_INPUT).unwrap();
    let n = 300;
    let (a, b) = (ours(host_nes::DEMO_ROM, &input, n), tetanes_frames(host_nes::DEMO_ROM, &input, n));
    let mut differ = Vec::new();
    for i in 0..n as usize {
        let rows: Vec<usize> = (0..240).filter(|r| a[i][r * 256..(r + 1) * 256] != b[i][r * 256..(r + 1) * 256]).collect();
        if !rows.is_empty() {
            differ.push((i, differing(&a[i], &b[i]), rows.first().copied(), rows.last().copied()));
        }
    }
    println!("demo: {} of {n} frames identical to tetanes-core's; differing (frame, pixels, first row, last row): {differ:?}", n as usize - differ.len());
    assert!(differ.is_empty());
}

/// The games of `nes/games` (no input, 120 frames) with our host and the reference CPU against tetanes-core:
/// `(ROM, frames identical)`, pinned so that a change shows (`survey_games_against_tetanes` prints where each
/// differs). Where they differ, the two CPUs' instruction traces (ours and tetanes' `clock_instr`, compared
/// register by register) say why:
/// - `8bitpeoples_-_deadline_console_invitro.nes` (instruction 58,497), `apocalypse.nes` (25,628), `pulsar.nes`
///   (122,252), `ny2011.nes` (7,827): tetanes enters the vertical-blank NMI one instruction earlier, in a wait
///   loop. Both emulators pass blargg's NMI timing ROMs (ppu_vbl_nmi 10/10 and cpu_interrupts_v2 5/5, tetanes
///   checked too), which synchronise to the PPU before they measure; what differs is the CPU/PPU alignment
///   within a CPU cycle at power-on, which varies between consoles. From there the NMI handler runs 3-4 cycles
///   apart: ny2011's writes land a few dots apart (single pixels at column 255, a palette split), the others'
///   frame counters and sprites diverge.
/// - `max-300.nes` frame 1: one pixel where a palette write in forced blank changes the colour mid-line.
/// - `BLOCKS.NES` frame 4: three sprite pixels on row 169, not fully explained. The CPUs first differ at
///   instruction 48,118, `LDA $2002` in a wait loop: ours returns the low five bits of the last value written to
///   a PPU register ($1E, to $2001), as the wiki's open-bus latch holds them; tetanes returns 0, its latch being
///   refilled by its own PPU-memory reads and cleared every frame (clearing ours every frame alike does not
///   change this read or frame 4). The loop's branch is the same either way; the pixels come later.
const GAMES: [(&str, usize); 15] = [
    ("240pee.nes", 120),
    ("8bitpeoples_-_deadline_console_invitro.nes", 9),
    ("BLOCKS.NES", 119),
    ("CMC80s.NES", 120),
    ("DROPOFF7.NES", 120),
    ("FLAME.NES", 120),
    ("PCM.demo.wgraphics.nes", 120),
    ("SimpleParallaxDemo.nes", 120),
    ("StarsSE.NES", 120),
    ("TANESPOT.NES", 120),
    ("apocalypse.nes", 15),
    ("max-300.nes", 119),
    ("ny2011.nes", 97),
    ("pulsar.nes", 68),
    ("smwstomp.nes", 120),
];

/// The 512 KiB MMC1 board of `common::surom_test_rom` (both halves, every PRG mode): every frame equal to
/// tetanes-core's, and the banks it reads differ from frame to frame.
#[test]
fn a_512_kib_mmc1_board_equals_tetanes() {
    let rom = surom_test_rom();
    let n = 48;
    let input = InputSchedule::default();
    let (a, b) = (ours(&rom, &input, n), tetanes_frames(&rom, &input, n));
    for i in 0..n as usize {
        assert_eq!(differing(&a[i], &b[i]), 0, "frame {i}: backdrop {} here, {} in tetanes-core", a[i][0], b[i][0]);
    }
    let backdrops: std::collections::BTreeSet<u8> = a.iter().map(|f| f[0]).collect();
    assert!(backdrops.len() >= 16, "the $C000 window's bank numbers seen: {backdrops:?}");
}

#[test]
fn games_against_tetanes() {
    let Some(dir) = testdata("nes/games") else { return };
    let n = 120;
    let input = InputSchedule::default();
    let mut got = Vec::new();
    for (name, _) in GAMES {
        let rom = std::fs::read(dir.join(name)).unwrap();
        let (a, b) = (ours(&rom, &input, n), tetanes_frames(&rom, &input, n));
        got.push((name, (0..n as usize).filter(|&i| a[i] == b[i]).count()));
    }
    println!("frames identical to tetanes-core's, of {n}: {got:?}");
    assert_eq!(got, GAMES.to_vec());
}

/// Per game of `nes/games` (no input): frames identical to tetanes-core's out of `n`, and the first differing.
/// A survey, printed; `games_against_tetanes` asserts what is settled.
#[test]
#[ignore = "a survey: cargo test -p host-nes --test tetanes -- --ignored --nocapture"]
fn survey_games_against_tetanes() {
    let Some(dir) = testdata("nes/games") else { return };
    let n = 120;
    let input = InputSchedule::default();
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("nes"))).collect();
    names.sort();
    for p in names {
        let rom = std::fs::read(&p).unwrap();
        let (a, b) = (ours(&rom, &input, n), tetanes_frames(&rom, &input, n));
        let same: Vec<bool> = (0..n as usize).map(|i| a[i] == b[i]).collect();
        let first = same.iter().position(|s| !s);
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let shifted = |d: usize| (d..n as usize).filter(|&i| a[i - d] == b[i]).count();
        let shifted_back = |d: usize| (d..n as usize).filter(|&i| a[i] == b[i - d]).count();
        println!("{name}: {} of {n} identical, first differing {first:?}; ours a frame later {}, ours a frame earlier {}", same.iter().filter(|s| **s).count(), shifted_back(1), shifted(1));
        for i in (0..n as usize).filter(|&i| !same[i]).take(6) {
            let rows: Vec<usize> = (0..240).filter(|r| a[i][r * 256..(r + 1) * 256] != b[i][r * 256..(r + 1) * 256]).collect();
            let cols: Vec<usize> = (0..256).filter(|c| (0..240).any(|r| a[i][r * 256 + c] != b[i][r * 256 + c])).collect();
            println!("  frame {i}: {} pixels, rows {:?}..{:?} ({}), columns {:?}..{:?}", differing(&a[i], &b[i]), rows.first(), rows.last(), rows.len(), cols.first(), cols.last());
        }
        if let Ok(dir) = std::env::var("SURVEY_PNG") {
            for i in (0..n as usize).filter(|&i| !same[i]).take(3) {
                for (who, f) in [("ours", &a[i]), ("tetanes", &b[i])] {
                    let path = format!("{dir}/{name}-{i}-{who}.png");
                    host_nes::output::write_png(std::path::Path::new(&path), f).unwrap();
                }
            }
        }
    }
}
