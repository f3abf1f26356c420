//! The circuit (run by isa-api's reference evaluator, fed by isa-api's generic device host exactly as loom
//! feeds a woven network) in lockstep with the reference interpreter: after every retired instruction PC, I,
//! SP, the timers, V0..VF and the whole screen must be equal; RAM at the end. Timendus' CHIP-8 test suite
//! (`$WEAVER_TESTDATA/chip8/timendus`, GPLv3, read from there, never copied) and our own ROM.

use isa_api::devices::{DeviceHost, KeySchedule};
use isa_api::front::{GenericMachine, Machine, Program};
use isa_api::trace::Decoded;
use loom_chip8::circuit::{chip8_machine, mem, reg};
use loom_chip8::interp::Chip8;

/// What a lockstep run saw.
struct Run {
    instructions: u64,
    steps: u64,
    screen: [u64; 32],
    halted: bool,
}

fn lockstep(rom: &[u8], keys: &str, max_instructions: u64) -> Run {
    let desc = chip8_machine();
    desc.validate().unwrap();
    let m = GenericMachine::new(desc.clone(), None);
    let image = m.load(&Program { name: "rom".into(), bytes: rom.to_vec(), expected_console: None }).unwrap();
    let mut r = isa_api::Reference::new(desc.clone());
    image.load_into(&mut r);
    let proto = r.protocol.clone();
    let mut dec = isa_api::StepDecoder::new(&proto);
    for t in image.prompt(&proto) {
        dec.push(t).unwrap();
    }
    let sched = KeySchedule::parse(keys, 16).unwrap();
    let mut host = DeviceHost::new(&desc.face, &image, sched, None);
    let mut cpu = Chip8::new(rom).unwrap();
    let (mut n, mut steps) = (0u64, 0u64);
    let mut tick = false;
    let tick_port = desc.face.input("TICK").unwrap();
    let keys_port = desc.face.input("KEYS").unwrap();
    while n < max_instructions {
        for (port, v) in host.inject() {
            r.inject(port, v);
            tick |= port == tick_port;
            if port == keys_port {
                cpu.keys = v as u16;
            }
        }
        let o = r.step();
        steps += 1;
        let mut ev = None;
        for t in r.step_tokens(&o) {
            if let Decoded::Step(s) = dec.push(t).unwrap() {
                ev = Some(s);
            }
        }
        let ev = ev.unwrap();
        host.step(&ev);
        if ev.halted {
            return Run { instructions: n, steps, screen: cpu.screen, halted: true };
        }
        if ev.reg(reg::BUSY) != 0 {
            continue;
        }
        if ev.output(0).is_some() {
            // The circuit reports a fault: the interpreter must refuse the same instruction.
            assert!(cpu.step(tick).is_err(), "circuit FAULT at instruction {n}, interpreter ran it");
            continue;
        }
        cpu.step(tick).unwrap_or_else(|f| panic!("interpreter {f:?} at instruction {n}, circuit ran it"));
        tick = false;
        n += 1;
        let st = &r.state;
        let regs = [(reg::PC, cpu.pc as u64), (reg::I, cpu.i as u64), (reg::SP, cpu.sp as u64), (reg::DT, cpu.dt as u64), (reg::ST, cpu.st as u64), (reg::VF, cpu.v[15] as u64), (reg::LFSR, cpu.lfsr as u64)];
        for (k, want) in regs {
            assert_eq!(st.regs[k as usize], want, "register {} after instruction {n} (pc {:#05x})", desc.registers[k as usize].name, cpu.pc);
        }
        for x in 0..15 {
            assert_eq!(st.mems[mem::V as usize][x], cpu.v[x] as u64, "V{x:X} after instruction {n}");
        }
        for y in 0..32 {
            assert_eq!(st.mems[mem::SCREEN as usize][y], cpu.screen[y], "screen row {y} after instruction {n}");
        }
    }
    let ram: Vec<u8> = r.state.mems[mem::RAM as usize].iter().map(|b| *b as u8).collect();
    assert_eq!(ram, cpu.ram, "RAM at the end");
    Run { instructions: n, steps, screen: cpu.screen, halted: false }
}

fn screen_text(s: &[u64; 32]) -> String {
    s.iter().map(|r| (0..64).map(|x| if r >> x & 1 == 1 { '#' } else { '.' }).collect::<String>() + "\n").collect()
}

fn timendus(name: &str) -> Option<Vec<u8>> {
    let Ok(dir) = std::env::var("WEAVER_TESTDATA") else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but WEAVER_TESTDATA is not set");
        }
        eprintln!("SKIPPED: WEAVER_TESTDATA is not set");
        return None;
    };
    Some(std::fs::read(std::path::Path::new(&dir).join("chip8/timendus").join(name)).unwrap())
}

#[test]
fn timendus_logo_ibm_corax_and_flags_in_lockstep() {
    for (name, n) in [("1-chip8-logo.ch8", 200), ("2-ibm-logo.ch8", 200), ("3-corax+.ch8", 2_000), ("4-flags.ch8", 5_000)] {
        let Some(rom) = timendus(name) else { return };
        let run = lockstep(&rom, "", n);
        eprintln!("{name}: {} instructions, {} steps\n{}", run.instructions, run.steps, screen_text(&run.screen));
        assert!(!run.halted, "{name} faulted");
        assert!(run.screen.iter().any(|r| *r != 0), "{name} drew nothing");
    }
}

/// What loom receives through the C ABI is this machine: the JSON round trip keeps everything.
#[test]
fn the_description_round_trips_through_json() {
    let bytes = loom_chip8::describe().unwrap();
    let d = isa_api::MachineDesc::from_json(&bytes).unwrap();
    assert_eq!(d, chip8_machine());
}

/// Our ROM (roms/bounce.ch8): the circuit and the interpreter in lockstep over 120,000 instructions, key 5
/// held now and then (the beeper, the freeze); the bounce counter is drawn at the top left.
#[test]
fn our_rom_in_lockstep_for_120000_instructions() {
    let rom = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/roms/bounce.ch8")).unwrap();
    let keys = "100 5\n140 -\n900 5\n905 -\n";
    let run = lockstep(&rom, keys, 120_000);
    eprintln!("bounce: {} instructions, {} steps\n{}", run.instructions, run.steps, screen_text(&run.screen));
    assert_eq!(run.instructions, 120_000);
    assert!(!run.halted);
}

/// The IBM logo's lit pixels, for loom's test of the plugin through the binary (cli/tests/chip8_plugin.rs).
#[test]
fn ibm_logo_pixels() {
    let Some(rom) = timendus("2-ibm-logo.ch8") else { return };
    let run = lockstep(&rom, "", 100);
    let lit: u32 = run.screen.iter().map(|r| r.count_ones()).sum();
    eprintln!("IBM logo: {lit} pixels lit");
    assert_eq!(lit, 230);
}

/// The COSMAC's display wait: a DXYN runs only in a step a tick came before, so one sprite per frame.
#[test]
fn dxyn_waits_for_the_display() {
    // I = 0 (the glyph 0); draw it at (0, 0) twice; loop.
    let mut cpu = Chip8::new(&[0xA0, 0x00, 0xD0, 0x05, 0xD0, 0x05, 0x12, 0x06]).unwrap();
    cpu.step(false).unwrap();
    cpu.step(false).unwrap();
    assert_eq!((cpu.pc, cpu.screen[0]), (0x202, 0), "no tick: the DXYN waits");
    cpu.step(false).unwrap();
    assert_eq!(cpu.pc, 0x202);
    cpu.step(true).unwrap();
    assert_eq!((cpu.pc, cpu.screen[0].count_ones(), cpu.v[15]), (0x204, 4, 0), "the tick: drawn");
    cpu.step(false).unwrap();
    assert_eq!((cpu.pc, cpu.screen[0].count_ones()), (0x204, 4), "the second waits for the next frame");
    cpu.step(true).unwrap();
    assert_eq!((cpu.pc, cpu.screen[0], cpu.v[15]), (0x206, 0, 1), "drawn again: erased, collision");
    // The circuit does the same (ticks from the device host every 10 instructions): PC and the screen equal
    // the interpreter's after every step of the loop, waits included.
    let run = lockstep(&[0xA0, 0x00, 0xD0, 0x05, 0xD0, 0x05, 0x12, 0x02], "", 200);
    assert_eq!(run.instructions, 200);
}
