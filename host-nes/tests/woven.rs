//! The NES host around the WOVEN 2A03 (the NES-map machine woven into Qwen3.5 weights, decoded greedily on the
//! incremental executor): its frames and audio against the same host driven by the reference CPU. Every frame's
//! pixels and every audio sample must be equal. `NES_WOVEN_FRAMES` sets the frames (default 3; `loom nes --cpu
//! both` runs longer comparisons).

mod common;
use common::Hashes;

use host_nes::{Board, InputSchedule, NetworkDevices};
use isa_api::front::{Devices, Machine};
use isa_api::host;
use std::cell::RefCell;
use std::rc::Rc;


type WovenNes = (weaver::Woven, backends::incremental::IncrementalModel);

/// The NES map for `prg` woven once for every test of this file.
fn woven(prg: isa_6502::circuit::PrgRom) -> &'static WovenNes {
    static W: std::sync::Mutex<Vec<(isa_6502::circuit::PrgRom, &'static WovenNes)>> = std::sync::Mutex::new(Vec::new());
    let mut all = W.lock().unwrap();
    if let Some((_, w)) = all.iter().find(|(p, _)| *p == prg) {
        return w;
    }
    let mut m = host_nes::nes_machine();
    m.keys.prg = prg;
    let desc = m.describe().unwrap();
    let t = std::time::Instant::now();
    let woven = weaver::weave(&desc, &weaver::WeaveOptions::default()).expect("the NES map weaves");
    let model = backends::incremental::IncrementalModel::new(&woven.config, &woven.weights).expect("the executor builds");
    eprintln!("NES map ({prg:?}) woven and built in {:.1} s: {} layers", t.elapsed().as_secs_f64(), woven.config.num_hidden_layers);
    let w: &'static WovenNes = Box::leak(Box::new((woven, model)));
    all.push((prg, w));
    w
}

/// What a run of `rom` on the woven CPU gave.
struct WovenRun {
    got: Hashes,
    want: Hashes,
    status: u8,
    summary: String,
    instructions: u64,
    reference_instructions: u64,
    tokens: usize,
    seconds: f64,
}

/// `frames` frames of `rom` with `input` on the woven CPU and on the reference CPU.
fn run_both(rom: &[u8], input: &InputSchedule, frames: u64) -> WovenRun {
    let cart = host_nes::Cartridge::parse(rom).unwrap();
    run_both_on(rom, input, frames, host_nes::nes_machine_for(&cart))
}

/// [`run_both`] on the NES-map machine `m`.
fn run_both_on(rom: &[u8], input: &InputSchedule, frames: u64, m: isa_6502::front::Mos6502Machine) -> WovenRun {
    let (cart, image) = host_nes::load_rom("rom", rom).unwrap();
    let mut want = Hashes::default();
    let reference = host_nes::run_reference(cart.clone(), &image, input.clone(), frames, &mut want).unwrap();
    let (woven, model) = woven(m.keys.prg);
    let rec = Rc::new(RefCell::new(Hashes::default()));
    let mut devices = NetworkDevices::new(&m.options(), Board::new(cart, input.clone()), image.memory(), Some(frames), Box::new(rec.clone()));
    let proto = &woven.protocol;
    let prompt = image.load_image(&m.options()).prompt(proto);
    let mut st = model.new_state();
    let t = std::time::Instant::now();
    let run = host::run_devices(proto, &prompt, &mut devices, 10_000_000, |tok| model.step_argmax(&mut st, tok), |_, _, _| {}).expect("the woven machine runs");
    let (out, fin) = (run.out, run.finish);
    let instructions = devices.instructions();
    drop(devices);
    let got = Rc::try_unwrap(rec).ok().unwrap().into_inner();
    WovenRun {
        got,
        want,
        status: fin.status,
        summary: fin.summary,
        instructions,
        reference_instructions: reference.instructions,
        tokens: out.trace.prompt.len() + out.trace.generated.len(),
        seconds: t.elapsed().as_secs_f64(),
    }
}

#[test]
fn the_demo_on_the_woven_cpu_gives_the_reference_cpus_frames_and_audio() {
    let frames: u64 = std::env::var("NES_WOVEN_FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let input = InputSchedule::parse("demo input", host_nes::DEMO_INPUT).unwrap();
    let r = run_both(host_nes::DEMO_ROM, &input, frames);
    assert_eq!(r.status, 0, "{}", r.summary);
    println!(
        "{frames} frames of the demo on the woven CPU: {} instructions ({} on the reference CPU), {} tokens, {:.1} s ({:.2} s per frame)",
        r.instructions,
        r.reference_instructions,
        r.tokens,
        r.seconds,
        r.seconds / frames as f64
    );
    assert_eq!(r.got.frames.len() as u64, frames);
    assert_eq!(r.got.frames, r.want.frames, "frame hashes, woven CPU against the reference CPU");
    assert!(r.got.audio == r.want.audio, "the audio differs ({} and {} samples)", r.got.audio.len(), r.want.audio.len());
}

/// A 512 KiB MMC1 board (SUROM, built by `common::surom_test_rom`): both 256 KiB halves, every PRG mode, a
/// fetch across $BFFF into the $C000 window and a read-modify-write to the serial port, on the woven CPU
/// against the reference CPU.
#[test]
fn a_512_kib_mmc1_board_on_the_woven_cpu() {
    let rom = common::surom_test_rom();
    let m = host_nes::nes_machine_for(&host_nes::Cartridge::parse(&rom).unwrap());
    assert_eq!(m.keys.prg, isa_6502::circuit::PrgRom { kib: 512, banking: isa_6502::circuit::PrgBanking::Mmc1 });
    let frames = 16;
    let r = run_both(&rom, &InputSchedule::default(), frames);
    assert_eq!(r.status, 0, "{}", r.summary);
    println!("SUROM test: {frames} frames, {} instructions, {:.1} s on the woven CPU", r.instructions, r.seconds);
    assert_eq!(r.got.frames.len() as u64, frames);
    assert_eq!(r.got.frames, r.want.frames, "frame hashes, woven CPU against the reference CPU");
    assert!(r.got.audio == r.want.audio, "the audio differs");
    let distinct: std::collections::HashSet<_> = r.got.frames.iter().collect();
    assert!(distinct.len() >= 8, "the backdrop follows the banks: {} distinct frames", distinct.len());
}

/// One game per mapper (`nes/games`), two frames on the woven CPU against the reference CPU: the mapper's CHR
/// side in the host, its PRG banking in the circuit (the whole ROM in memory); games that switch banks at once or
/// later; and a machine without the banking stopping at the first switch with the error naming it.
#[test]
fn a_game_per_mapper_on_the_woven_cpu() {
    let Some(dir) = common::testdata("nes/games") else { return };
    let input = InputSchedule::default();
    for (name, mapper) in [("CMC80s.NES", 3), ("PCM.demo.wgraphics.nes", 2), ("8bitpeoples_-_deadline_console_invitro.nes", 1), ("smwstomp.nes", 4)] {
        let rom = std::fs::read(dir.join(name)).unwrap();
        assert_eq!(host_nes::Cartridge::parse(&rom).unwrap().mapper.number(), mapper);
        let r = run_both(&rom, &input, 2);
        assert_eq!(r.status, 0, "{name}: {}", r.summary);
        println!("{name} (mapper {mapper}): 2 frames, {} instructions, {:.1} s on the woven CPU", r.instructions, r.seconds);
        assert_eq!(r.got.frames.len(), 2, "{name}");
        assert_eq!(r.got.frames, r.want.frames, "{name}: frame hashes, woven CPU against the reference CPU");
        assert!(r.got.audio == r.want.audio, "{name}: the audio differs");
    }
    // 240pee switches its UxROM bank at its fourth instruction, in the circuit: its frames and sound are the
    // reference CPU's.
    let rom = std::fs::read(dir.join("240pee.nes")).unwrap();
    let r = run_both(&rom, &input, 2);
    assert_eq!(r.status, 0, "240pee: {}", r.summary);
    assert_eq!(r.got.frames.len(), 2);
    assert_eq!(r.got.frames, r.want.frames, "240pee: frame hashes, woven CPU against the reference CPU");
    assert!(r.got.audio == r.want.audio, "240pee: the audio differs");
    // max-300 (512 KiB) switches its MMC3 banks at its second instruction, in the circuit.
    let rom = std::fs::read(dir.join("max-300.nes")).unwrap();
    let r = run_both(&rom, &input, 2);
    assert_eq!(r.status, 0, "max-300: {}", r.summary);
    assert_eq!(r.got.frames.len(), 2);
    assert_eq!(r.got.frames, r.want.frames, "max-300: frame hashes, woven CPU against the reference CPU");
    assert!(r.got.audio == r.want.audio, "max-300: the audio differs");
    // pulsar (MMC1, 128 KiB) switches its PRG banks in its thirteenth frame, in the circuit.
    let rom = std::fs::read(dir.join("pulsar.nes")).unwrap();
    let r = run_both(&rom, &input, 14);
    assert_eq!(r.status, 0, "pulsar: {}", r.summary);
    assert_eq!(r.got.frames.len(), 14);
    assert_eq!(r.got.frames, r.want.frames, "pulsar: frame hashes, woven CPU against the reference CPU");
    assert!(r.got.audio == r.want.audio, "pulsar: the audio differs");
    // A machine whose memory holds only the 32 KiB of power-on stops at the first PRG switch with the error
    // naming it.
    let r = run_both_on(&rom, &input, 14, host_nes::nes_machine());
    assert_eq!(r.status, isa_api::front::EXIT_FAULT);
    assert!(r.summary.contains("instructions the program switched PRG banks (MMC1 write"), "{}", r.summary);
    assert!(r.got.frames.len() < 14);
    assert_eq!(r.got.frames[..], r.want.frames[..r.got.frames.len()], "pulsar: the frames before the switch");
}
