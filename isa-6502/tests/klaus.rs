//! Klaus Dormann's 6502 functional test (`$WEAVER_TESTDATA/6502/6502_functional_test.bin`, a 64 KiB image loaded
//! at $0000, started at $0400) up to $336D, where its decimal-mode tests begin: a 2A03 (no BCD) that gets there
//! has passed every binary-mode test. Each failed check of the test is a trap, a branch or jump to itself: a PC
//! that stays the same across a step before $336D is a failure at that PC (`6502_functional_test.lst` names
//! the test there).

mod common;

use isa_6502::{Cpu, FlatRam};

/// Where the decimal-mode tests start (`sed` at $336D in the listing).
const DECIMAL_TESTS: u16 = 0x336D;
/// Steps allowed; the binary-mode tests take 26,764,007 instructions (84,024,390 cycles) on this interpreter.
const STEP_BUDGET: u64 = 100_000_000;

#[test]
fn klaus_dormann_functional_test_reaches_the_decimal_tests() {
    let Some(path) = common::testdata_file("6502/6502_functional_test.bin") else { return };
    let image = std::fs::read(path).expect("read the functional test image");
    let mut ram = FlatRam::new();
    ram.load(0x0000, &image).expect("a 64 KiB image fits at $0000");
    let mut cpu = Cpu::new();
    cpu.pc = 0x0400;
    let mut steps = 0u64;
    while cpu.pc != DECIMAL_TESTS {
        assert!(steps < STEP_BUDGET, "no $336D after {steps} steps (PC ${:04X})", cpu.pc);
        let pc = cpu.pc;
        if let Err(fault) = cpu.step(&mut ram) {
            panic!("step {steps}: {fault}");
        }
        steps += 1;
        assert_ne!(cpu.pc, pc, "trapped at ${pc:04X} after {steps} steps (see 6502_functional_test.lst)");
    }
    println!(
        "Klaus Dormann's functional test: reached ${DECIMAL_TESTS:04X} after {steps} instructions, {} cycles",
        cpu.cycles
    );
}
