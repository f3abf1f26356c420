//! Where a NES program's trace tokens go: tokens per field and per machine step, the machine stepped by the
//! NES-map circuit's reference evaluator (which the woven network equals position for position: `loom
//! lockstep`, `isa-6502/tests/woven.rs`), its IO served by the network CPU's host devices.
//!
//! ```sh
//! cargo run --release -p host-nes --example trace_profile -- ROM.nes [FRAMES]   # default 10 frames
//! ```

use host_nes::{Board, InputSchedule, NetworkDevices};
use isa_api::front::{Devices, Machine};
use isa_api::protocol::Token;
use isa_api::Reference;
use std::collections::BTreeMap;

struct Nothing;
impl host_nes::Recorder for Nothing {
    fn frame(&mut self, _f: &host_nes::Frame) {}
    fn samples(&mut self, _s: &[i16]) {}
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: trace_profile ROM.nes [FRAMES]")?;
    let rom = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let frames: u64 = match args.get(2) {
        Some(s) => s.parse().map_err(|_| format!("FRAMES: not a number: {s}"))?,
        None => 10,
    };
    let (cart, image) = host_nes::load_rom(path, &rom).map_err(|e| e.to_string())?;
    let m = host_nes::nes_machine();
    let mut r = Reference::new(m.describe().map_err(|e| e.to_string())?);
    image.load_image(&m.options()).load_into(&mut r);
    let mut dev = NetworkDevices::new(&m.options(), Board::new(cart, InputSchedule::default()), image.memory(), Some(frames), Box::new(Nothing));
    let proto = r.protocol.clone();
    let mut dec = isa_api::StepDecoder::new(&proto);
    let (mut steps, mut tokens, mut injected) = (0u64, 0u64, 0u64);
    let mut per_field: BTreeMap<String, u64> = BTreeMap::new();
    let mut per_step: BTreeMap<usize, u64> = BTreeMap::new();
    let name = |t: u32| match proto.decode(t) {
        Some(Token::Value { field, .. }) => proto.fields[field as usize].name.clone(),
        Some(Token::Step) => "STEP".into(),
        _ => "HALT".into(),
    };
    while !dev.done() {
        for (port, v) in dev.inject(steps as usize) {
            for t in proto.input_tokens(port, v) {
                injected += 1;
                *per_field.entry(name(t)).or_default() += 1;
            }
            r.inject(port, v);
        }
        // An IO read's answer comes within its step.
        let (o, toks) = r.step_answered(|port, request| dev.answer(port, request));
        if o.halted {
            break;
        }
        *per_step.entry(toks.len()).or_default() += 1;
        for (t, host) in toks {
            if host {
                injected += 1;
            } else {
                tokens += 1;
            }
            *per_field.entry(name(t)).or_default() += 1;
            if let isa_api::trace::Decoded::Step(ev) = dec.push(t).map_err(|e| e.to_string())? {
                dev.step(&ev);
            }
        }
        steps += 1;
    }
    let n = dev.instructions().max(1);
    println!(
        "{path}, {frames} frames: {n} instructions, {steps} steps ({:.3} per instruction), {tokens} generated + {injected} injected tokens ({:.2} per instruction)",
        steps as f64 / n as f64,
        (tokens + injected) as f64 / n as f64
    );
    let mut v: Vec<_> = per_field.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    println!("{:>14} {:>10} {:>10}", "field", "tokens", "per instr");
    for (f, c) in v {
        println!("{f:>14} {c:>10} {:>10.3}", c as f64 / n as f64);
    }
    println!("steps by tokens per step: {per_step:?}");
    Ok(())
}
