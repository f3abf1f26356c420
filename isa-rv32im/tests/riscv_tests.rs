//! The official riscv-tests ISA programs (rv32ui, rv32um, rv32uzba; all but fence_i), built by
//! `examples/rv32/riscv-tests/build.sh` with our user-mode `riscv_test.h`: each exits 0 when every test case
//! passed, else with the failing case's number. Every program must exit 0 on the interpreter, on the
//! circuit (the reference evaluator, in lockstep with the interpreter after every instruction) and under
//! qemu-riscv32 (in lockstep with the interpreter's registers; skipped without qemu, a failure under
//! `CI=true`). The woven network runs them in `cli/tests/rv32_programs.rs`.

use isa_rv32im::circuit::{MemoryLayout, Rv32MachineOptions};
mod common;
use isa_rv32im::lockstep::qemu::lockstep_elf;
use isa_rv32im::lockstep::{LockstepEnd, lockstep};
use isa_rv32im::{Config, Stop, load_elf};
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/rv32/riscv-tests")
}

/// `(name, ELF bytes)` of every program, in the order of `expected.txt` (which build.sh wrote from qemu).
fn programs() -> Vec<(String, Vec<u8>)> {
    let expected = std::fs::read_to_string(dir().join("expected.txt")).unwrap();
    expected
        .lines()
        .map(|l| {
            let (name, status) = l.split_once(' ').unwrap();
            assert_eq!(status, "0", "{name}: qemu-riscv32's exit status when it was built");
            (name.to_string(), std::fs::read(dir().join("bin").join(format!("{name}.elf"))).unwrap())
        })
        .collect()
}

#[test]
fn every_program_is_there() {
    let names: Vec<String> = programs().into_iter().map(|(n, _)| n).collect();
    let count = |suite: &str| names.iter().filter(|n| n.starts_with(&format!("{suite}-"))).count();
    // rv32ui: 42 sources less fence_i; rv32um: 8; rv32uzba: 3.
    assert_eq!((count("rv32ui"), count("rv32um"), count("rv32uzba")), (41, 8, 3));
    assert!(!names.iter().any(|n| n.contains("fence_i")));
    let files = std::fs::read_dir(dir().join("bin")).unwrap().count();
    assert_eq!(files, names.len(), "every ELF in bin/ is in expected.txt");
}

#[test]
fn every_program_passes_on_the_interpreter() {
    for (name, elf) in programs() {
        let mut cpu = load_elf(&elf, Config::default()).unwrap();
        let r = cpu.run(100_000).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.stop, Stop::Exit(0), "{name}: failing test case {:?}", r.stop);
    }
}

/// The environment reports a failure: rv32ui-add with one `add` turned into `sub` exits with that case's
/// number (the second `add` is test case 3, 1 + 1; case 2, 0 + 0, passes as a `sub` too).
#[test]
fn a_broken_instruction_fails_its_test_case() {
    let (_, mut elf) = programs().into_iter().find(|(n, _)| n == "rv32ui-add").unwrap();
    let img = isa_rv32im::parse_elf(&elf).unwrap();
    let text = &img.segments[0];
    // File offset of the second ADD (opcode 0x33, funct3 0, funct7 0) in the text segment (mapped from
    // offset 0 of the file by the default linker script).
    let at = (0..text.data.len() / 4)
        .map(|i| i * 4)
        .filter(|&o| {
            let w = u32::from_le_bytes(text.data[o..o + 4].try_into().unwrap());
            w & 0x7f == 0x33 && (w >> 12) & 7 == 0 && w >> 25 == 0
        })
        .nth(1)
        .expect("two adds");
    elf[at + 3] |= 0x40; // funct7 = 0x20: sub
    let mut cpu = load_elf(&elf, Config::default()).unwrap();
    assert_eq!(cpu.run(100_000).unwrap().stop, Stop::Exit(3));
}

#[test]
fn every_program_passes_on_the_circuit_in_lockstep() {
    for layout in [MemoryLayout::Words, MemoryLayout::ByteLanes] {
        let opts = Rv32MachineOptions { layout, ..Rv32MachineOptions::default() };
        let mut instructions = 0;
        for (name, elf) in programs() {
            let cpu = load_elf(&elf, opts.interp_config()).unwrap();
            let rep = lockstep(cpu, &opts, 100_000).unwrap_or_else(|e| panic!("{name} {layout:?}: {e}"));
            assert_eq!(rep.end, LockstepEnd::Exit(0), "{name} {layout:?}");
            instructions += rep.instructions;
        }
        eprintln!("{layout:?}: {instructions} instructions in lockstep");
        assert!(instructions > 15_000, "{instructions}");
    }
}

#[test]
fn every_program_passes_under_qemu_in_lockstep() {
    if !common::qemu_or_skip() {
        return;
    }
    for (name, elf) in programs() {
        let (qemu, rep) = lockstep_elf(&elf, Config::default(), 1000).unwrap();
        assert_eq!(qemu.status, Some(0), "{name}: qemu exit status");
        assert_eq!(rep.mismatch_count, 0, "{name}: {:?}", rep.mismatches);
        assert_eq!(rep.end, LockstepEnd::Exit(0), "{name}");
    }
}
