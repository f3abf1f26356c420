//! Frame equality of the two CPUs: the host's network devices fed by the NES-map circuit (its reference
//! evaluator, which the woven network equals position for position: `loom lockstep`, `isa-6502/tests/woven.rs`)
//! against the host driven by the reference interpreter. Every frame's pixels and the audio must be equal.

mod common;
use common::{Hashes, testdata};

use host_nes::{Board, InputSchedule, NetworkDevices};
use isa_api::Reference;
use isa_api::front::{Devices, Machine};
use std::cell::RefCell;
use std::rc::Rc;



/// The reference CPU's frames and audio.
fn on_reference(rom: &[u8], input: &InputSchedule, frames: u64) -> (Hashes, u64) {
    let (h, n, fault) = on_reference_to_fault(rom, input, frames);
    assert_eq!(fault, None);
    (h, n)
}

/// The reference CPU's frames and audio up to a fault (an opcode the 2A03 refuses), and the fault.
fn on_reference_to_fault(rom: &[u8], input: &InputSchedule, frames: u64) -> (Hashes, u64, Option<String>) {
    let (cart, image) = host_nes::load_rom("rom", rom).unwrap();
    let mut h = Hashes::default();
    let (nes, fault) = host_nes::run_reference_to_fault(cart, &image, input.clone(), frames, &mut h);
    (h, nes.instructions, fault)
}

/// The network devices' frames and audio, the machine stepped by the circuit's reference evaluator.
fn on_circuit(rom: &[u8], input: &InputSchedule, frames: u64) -> (Hashes, u64, usize) {
    let (h, n, steps, summary) = on_circuit_to_fault(rom, input, frames);
    assert_eq!(summary, None);
    (h, n, steps)
}

/// [`on_circuit`] up to a machine fault, and the fault's summary.
fn on_circuit_to_fault(rom: &[u8], input: &InputSchedule, frames: u64) -> (Hashes, u64, usize, Option<String>) {
    let (cart, image) = host_nes::load_rom("rom", rom).unwrap();
    let m = host_nes::nes_machine();
    let mut r = Reference::new(m.describe().unwrap());
    image.load_image(&m.options()).load_into(&mut r);
    let rec = Rc::new(RefCell::new(Hashes::default()));
    let mut dev = NetworkDevices::new(&m.options(), Board::new(cart, input.clone()), image.memory(), Some(frames), Box::new(rec.clone()));
    let proto = r.protocol.clone();
    let mut dec = isa_api::StepDecoder::new(&proto);
    let mut steps = 0;
    while !dev.done() {
        for (port, v) in dev.inject(steps) {
            r.inject(port, v);
        }
        // An IO read's answer comes within its step (the board at the read's cycle).
        let (o, tokens) = r.step_answered(|port, request| dev.answer(port, request));
        if o.halted {
            break;
        }
        for (t, _) in tokens {
            if let isa_api::trace::Decoded::Step(ev) = dec.push(t).unwrap() {
                dev.step(&ev);
            }
        }
        steps += 1;
    }
    let fin = dev.finish(isa_api::front::RunEnd::Devices);
    let fault = (fin.status != 0).then(|| format!("status {}: {}", fin.status, fin.summary));
    let n = dev.instructions();
    drop(dev);
    (Rc::try_unwrap(rec).ok().unwrap().into_inner(), n, steps, fault)
}

fn assert_same(what: &str, a: &Hashes, b: &Hashes) {
    assert_eq!(a.frames.len(), b.frames.len(), "{what}: frame counts");
    if let Some(i) = a.frames.iter().zip(&b.frames).position(|(x, y)| x != y) {
        panic!("{what}: frame {i} differs between the reference CPU and the circuit");
    }
    assert_eq!(a.audio.len(), b.audio.len(), "{what}: audio sample counts");
    assert!(a.audio == b.audio, "{what}: the audio differs");
}

#[test]
fn nestest_runs_its_tests_frame_for_frame_the_same_on_both_cpus() {
    let Some(path) = testdata("nes/nestest.nes") else { return };
    let rom = std::fs::read(path).unwrap();
    // Start at frame 20 runs every official-opcode test; the screen then shows "OK" beside each.
    let input = InputSchedule::parse("input", "0 -\n20 Start\n24 -\n").unwrap();
    let frames = 40;
    let (r, ri) = on_reference(&rom, &input, frames);
    let (c, ci, steps) = on_circuit(&rom, &input, frames);
    println!("nestest, {frames} frames: {ri} instructions on the reference CPU, {ci} instructions ({steps} steps) on the circuit");
    assert_same("nestest", &r, &c);
    assert_eq!(ri, ci);
    // The menu is on screen (not a blank frame), and the run changed it.
    assert_ne!(r.frames[10], r.frames[0]);
    assert_ne!(r.frames[39], r.frames[10]);
}

#[test]
fn the_demo_runs_300_frames_the_same_on_both_cpus() {
    let input = InputSchedule::parse("host-nes/demo/input.txt", host_nes::DEMO_INPUT).unwrap();
    let frames = 300;
    let (r, ri) = on_reference(host_nes::DEMO_ROM, &input, frames);
    let (c, ci, steps) = on_circuit(host_nes::DEMO_ROM, &input, frames);
    println!("demo, {frames} frames: {ri} instructions on the reference CPU, {ci} instructions ({steps} steps) on the circuit, {} audio samples", r.audio.len());
    assert_same("demo", &r, &c);
    assert_eq!(ri, ci);
    // It scrolls: consecutive frames differ from frame 5 on; and it plays: the audio is not silent.
    assert!((5..299).all(|i| r.frames[i] != r.frames[i + 1]));
    assert!(r.audio.iter().map(|s| i32::from(*s).abs()).max().unwrap() > 4000);
    // Under 4,000 instructions a frame (the network runs about 1,000 a second).
    assert!(ri < 4_000 * frames, "{ri} instructions");
}

/// The frames a ROM needs: until it reports (blargg's $6000 status, or PASSED/FAILED on screen) on the reference
/// CPU, plus two.
fn frames_needed(rom: &[u8]) -> u64 {
    let (cart, image) = host_nes::load_rom("rom", rom).unwrap();
    let mut nes = host_nes::ReferenceNes::new(&image, Board::new(cart, InputSchedule::default()));
    while nes.board.frames_finished() < 1500 {
        if nes.step().is_err() {
            break;
        }
        if nes.instructions % 1024 == 0 {
            let screen = nes.board.ppu.nametable_text(0);
            if nes.test_result().is_some() || screen.contains("PASSED") || screen.contains("FAILED") {
                break;
            }
        }
    }
    nes.board.frames_finished() + 2
}

/// Every mapper-0 test ROM of the shared test data, on both CPUs, over the frames it needs: equal frames and
/// audio (a ROM the reference CPU faults on: equal up to the fault, which the circuit makes at the same
/// instruction). CI runs a few (one of each suite that reports on screen, and the shortest $6000 ones);
/// `NES_ALL=1` runs all of them (tens of minutes), `NES_ROMS=part,part` those whose path contains a part.
#[test]
fn test_roms_give_the_same_frames_on_both_cpus() {
    let Some(dir) = testdata("nes") else { return };
    let all = std::env::var_os("NES_ALL").is_some();
    let mut roms = Vec::new();
    for sub in ["ppu_vbl_nmi/rom_singles", "sprite_hit_tests_2005.10.05", "vbl_nmi_timing", "cpu_interrupts_v2/rom_singles", "instr_timing/rom_singles", "instr_test-v5/rom_singles"] {
        let mut v: Vec<_> = std::fs::read_dir(dir.join(sub)).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "nes")).collect();
        v.sort();
        roms.extend(v);
    }
    roms.push(dir.join("nestest.nes"));
    if let Ok(only) = std::env::var("NES_ROMS") {
        // A subset by name: comma-separated parts of the paths (e.g. `instr_timing,instr_test`).
        roms.retain(|p| only.split(',').any(|part| p.to_string_lossy().contains(part)));
    } else if !all {
        roms.retain(|p| ["01.basics.nes", "04-nmi_control.nes", "1-cli_latency.nes", "4-irq_and_dma.nes", "nestest.nes"].iter().any(|n| p.ends_with(n)));
    }
    let mut total = (0u64, 0u64);
    for rom in &roms {
        let bytes = std::fs::read(rom).unwrap();
        let frames = if rom.ends_with("nestest.nes") { 12 } else { frames_needed(&bytes) };
        let none = InputSchedule::default();
        let (r, ri, rfault) = on_reference_to_fault(&bytes, &none, frames);
        let (c, ci, _, cfault) = on_circuit_to_fault(&bytes, &none, frames);
        let name = rom.file_name().unwrap().to_string_lossy().to_string();
        assert_same(&name, &r, &c);
        assert_eq!(ri, ci, "{name}");
        match (&rfault, &cfault) {
            (None, None) => println!("{name}: {frames} frames, {ri} instructions: frames and audio equal"),
            (Some(rf), Some(cf)) => println!("{name}: {} frames, {ri} instructions: frames and audio equal up to the same fault ({rf}; the circuit: {cf})", r.frames.len()),
            _ => panic!("{name}: the reference CPU ended with {rfault:?}, the circuit with {cfault:?}"),
        }
        total.0 += frames;
        total.1 += ri;
    }
    println!("{} ROMs, {} frames, {} instructions: every frame and sample equal on both CPUs", roms.len(), total.0, total.1);
}
