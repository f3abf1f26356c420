//! Lockstep of the reference interpreter against qemu-riscv32 over the example programs (or the ELF files given as
//! arguments): pc and x0..x31 compared after every instruction. Prints one line per program and the total;
//! exits 1 on any mismatch, 2 when qemu-riscv32 is missing.
//!
//! `cargo run --release -p isa-rv32im --bin rv32-lockstep [prog.elf ...]`

use isa_rv32im::Config;
use isa_rv32im::examples::EXAMPLES;
use isa_rv32im::lockstep::qemu::{lockstep_elf, qemu_available};

fn main() {
    if !qemu_available() {
        eprintln!("qemu-riscv32 not found (apt-get install -y qemu-user)");
        std::process::exit(2);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let programs: Vec<(String, Vec<u8>)> = if args.is_empty() {
        EXAMPLES
            .iter()
            .map(|e| (e.name.to_string(), e.elf.to_vec()))
            .collect()
    } else {
        args.iter()
            .map(|p| match std::fs::read(p) {
                Ok(b) => (p.clone(), b),
                Err(e) => {
                    eprintln!("{p}: {e}");
                    std::process::exit(2);
                }
            })
            .collect()
    };
    let (mut total, mut bad) = (0u64, 0u64);
    println!(
        "{:<12} {:>10} {:>10} {:>6} {:>6}",
        "program", "compared", "mismatches", "exit", "output"
    );
    for (name, elf) in &programs {
        let (qemu, rep) = match lockstep_elf(elf, Config::default(), 1000) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{name}: {e}");
                bad += 1;
                continue;
            }
        };
        let exit_ok = rep.exit_code().map(i32::from) == qemu.status;
        let out_ok = rep.output == qemu.stdout;
        println!(
            "{:<12} {:>10} {:>10} {:>6} {:>6}",
            name,
            rep.instructions,
            rep.mismatch_count,
            if exit_ok { "same" } else { "DIFF" },
            if out_ok { "same" } else { "DIFF" }
        );
        for m in &rep.mismatches {
            println!("  {m}");
        }
        if let isa_rv32im::lockstep::LockstepEnd::Error(e) = &rep.end {
            println!("  interpreter stopped: {e}");
        }
        total += rep.instructions;
        bad += rep.mismatch_count + (!exit_ok) as u64 + (!out_ok) as u64;
    }
    println!("{:<12} {:>10} {:>10}", "total", total, bad);
    // Instruction coverage of the compared programs (counted on a second interpreter run).
    let mut counts = std::collections::BTreeMap::<&str, u64>::new();
    for (_, elf) in &programs {
        if let Ok(mut cpu) = isa_rv32im::load_elf(elf, Config::default()) {
            while let Ok(w) = cpu.fetch() {
                if let Some(i) = isa_rv32im::decode::decode(w) {
                    *counts.entry(i.mnemonic()).or_default() += 1;
                }
                match cpu.step() {
                    Ok(isa_rv32im::StepEvent::Exit { .. }) | Err(_) => break,
                    _ => {}
                }
            }
        }
    }
    let all = isa_rv32im::decode::MNEMONICS
        .iter()
        .chain(isa_rv32im::decode::ZBA_MNEMONICS.iter());
    let missing: Vec<&str> = all.filter(|m| !counts.contains_key(*m)).copied().collect();
    println!(
        "executed mnemonics: {} of 51; never executed: {:?}",
        counts.len(),
        missing
    );
    let mut mix: Vec<_> = counts.into_iter().collect();
    mix.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    let line: Vec<String> = mix.iter().map(|(m, n)| format!("{m} {n}")).collect();
    println!("mix: {}", line.join(", "));
    std::process::exit(if bad == 0 { 0 } else { 1 });
}
