//! Runs an RV32IM+Zba ELF on the reference interpreter: console output to stdout/stderr, exit status = the
//! program's. `rv32-run prog.elf [--max-steps N] [--ram-base ADDR] [--ram-size BYTES] [--stdin FILE]`
//! (numbers in decimal or 0x-hex; defaults: 100000000 steps, 256 KiB at 0x10000, no standard input).

use std::io::Write;

use isa_rv32im::{Config, Stop, load_elf};

fn num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut path = None;
    let mut max_steps = 100_000_000u64;
    let mut config = Config::default();
    let mut stdin = None;
    while let Some(a) = args.next() {
        let mut val = |name: &str| {
            args.next().as_deref().and_then(num).unwrap_or_else(|| {
                eprintln!("{name} needs a number");
                std::process::exit(2)
            })
        };
        match a.as_str() {
            "--max-steps" => max_steps = val("--max-steps"),
            "--ram-base" => config.ram_base = val("--ram-base") as u32,
            "--ram-size" => config.ram_size = val("--ram-size") as u32,
            "--stdin" => stdin = args.next(),
            _ => path = Some(a),
        }
    }
    let Some(path) = path else {
        eprintln!("usage: rv32-run prog.elf [--max-steps N] [--ram-base ADDR] [--ram-size BYTES] [--stdin FILE]");
        std::process::exit(2)
    };
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    let mut cpu = load_elf(&bytes, config).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    if let Some(f) = stdin {
        let input = std::fs::read(&f).unwrap_or_else(|e| {
            eprintln!("--stdin {f}: {e}");
            std::process::exit(2)
        });
        cpu.push_input(&input);
    }
    let result = cpu.run_with(max_steps, |fd, data| {
        let _ = if fd == 2 {
            std::io::stderr().write_all(data)
        } else {
            std::io::stdout().write_all(data)
        };
    });
    let _ = std::io::stdout().flush();
    match result {
        Ok((Stop::Exit(code), steps)) => {
            eprintln!("[rv32-run: exit {code} after {steps} instructions]");
            std::process::exit(code & 0xff)
        }
        Ok((Stop::Breakpoint(pc), steps)) => {
            eprintln!("[rv32-run: ebreak at pc {pc:#010x} after {steps} instructions]");
            std::process::exit(133) // 128 + SIGTRAP, as qemu-riscv32 would report
        }
        Err(e) => {
            eprintln!("[rv32-run: {e}]");
            std::process::exit(134)
        }
    }
}
