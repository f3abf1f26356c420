//! Lockstep of the reference interpreter against qemu-riscv32 over the example programs (or the ELF files given as
//! arguments): pc and x0..x31 compared after every instruction. Prints one line per program and the total;
//! exits 1 on any mismatch, 2 when qemu-riscv32 is missing.
//!
//! `cargo run --release -p isa-rv32im --bin rv32-lockstep [prog.elf ...]`

use isa_rv32im::examples::EXAMPLES;
use isa_rv32im::qemu_trace::{lockstep_elf, qemu_available};
use isa_rv32im::Config;

fn main() {
    if !qemu_available() {
        eprintln!("qemu-riscv32 not found (apt-get install -y qemu-user)");
        std::process::exit(2);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let programs: Vec<(String, Vec<u8>)> = if args.is_empty() {
        EXAMPLES.iter().map(|e| (e.name.to_string(), e.elf.to_vec())).collect()
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
    println!("{:<12} {:>10} {:>10} {:>6} {:>6}", "program", "compared", "mismatches", "exit", "output");
    for (name, elf) in &programs {
        let (qemu, rep) = match lockstep_elf(elf, Config::default(), 1000) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{name}: {e}");
                bad += 1;
                continue;
            }
        };
        let exit_ok = rep.exit_code.map(|c| c & 0xff) == qemu.status;
        let out_ok = rep.output == qemu.stdout;
        println!(
            "{:<12} {:>10} {:>10} {:>6} {:>6}",
            name,
            rep.compared,
            rep.mismatch_count,
            if exit_ok { "same" } else { "DIFF" },
            if out_ok { "same" } else { "DIFF" }
        );
        for m in &rep.mismatches {
            println!("  {m}");
        }
        if let Some(e) = &rep.error {
            println!("  interpreter stopped: {e}");
        }
        total += rep.compared;
        bad += rep.mismatch_count + (!exit_ok) as u64 + (!out_ok) as u64;
    }
    println!("{:<12} {:>10} {:>10}", "total", total, bad);
    std::process::exit(if bad == 0 { 0 } else { 1 });
}
