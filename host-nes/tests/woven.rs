//! The NES host around the WOVEN 2A03 (the NES-map machine woven into Qwen3.5 weights, decoded greedily on the
//! incremental executor): its frames and audio against the same host driven by the reference CPU. Every frame's
//! pixels and every audio sample must be equal. `NES_WOVEN_FRAMES` sets the frames (default 3; `loom nes --cpu
//! both` runs longer comparisons).

mod common;
use common::Hashes;

use host_nes::{Board, InputSchedule, NetworkDevices};
use isa_api::front::{Devices, Machine, RunEnd};
use isa_api::host;
use std::cell::RefCell;
use std::rc::Rc;


#[test]
fn the_demo_on_the_woven_cpu_gives_the_reference_cpus_frames_and_audio() {
    let frames: u64 = std::env::var("NES_WOVEN_FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let input = InputSchedule::parse("demo input", host_nes::DEMO_INPUT).unwrap();
    let (cart, image) = host_nes::load_rom("demo", host_nes::DEMO_ROM).unwrap();
    let mut want = Hashes::default();
    let reference = host_nes::run_reference(cart.clone(), &image, input.clone(), frames, &mut want).unwrap();

    let m = host_nes::nes_machine();
    let desc = m.describe().unwrap();
    let t = std::time::Instant::now();
    let woven = weaver::weave(&desc, &weaver::WeaveOptions::default()).expect("the NES map weaves");
    let model = backends::incremental::IncrementalModel::new(&woven.config, &woven.weights).expect("the executor builds");
    eprintln!("NES map woven and built in {:.1} s: {} layers", t.elapsed().as_secs_f64(), woven.config.num_hidden_layers);
    let rec = Rc::new(RefCell::new(Hashes::default()));
    let devices = RefCell::new(NetworkDevices::new(&m.options(), Board::new(cart, input), image.memory(), Some(frames), Box::new(rec.clone())));
    let proto = &woven.protocol;
    let prompt = image.load_image().prompt(proto);
    let mut st = model.new_state();
    let t = std::time::Instant::now();
    let out = host::run_io_until(
        proto,
        &prompt,
        10_000_000,
        |tok| model.step_argmax(&mut st, tok),
        |ev| {
            if let host::Event::Step { step, .. } = ev {
                devices.borrow_mut().step(step);
            }
        },
        |s| devices.borrow_mut().inject(s).into_iter().flat_map(|(p, v)| proto.input_tokens(p, v)).collect(),
        || devices.borrow().done(),
    )
    .expect("the woven machine runs");
    let mut d = devices.into_inner();
    let fin = d.finish(RunEnd::Devices);
    assert_eq!(fin.status, 0, "{}", fin.summary);
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{frames} frames of the demo on the woven CPU: {} instructions ({} on the reference CPU), {} tokens, {secs:.1} s ({:.2} s per frame)",
        d.instructions(),
        reference.instructions,
        out.trace.prompt.len() + out.trace.generated.len(),
        secs / frames as f64
    );
    drop(d);
    let got = Rc::try_unwrap(rec).ok().unwrap().into_inner();
    assert_eq!(got.frames.len() as u64, frames);
    assert_eq!(got.frames, want.frames, "frame hashes, woven CPU against the reference CPU");
    assert!(got.audio == want.audio, "the audio differs ({} and {} samples)", got.audio.len(), want.audio.len());
}
