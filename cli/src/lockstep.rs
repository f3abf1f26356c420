//! `loom lockstep CONFIG [PROGRAM.elf ...]`: the woven RV32IM+Zba machine against the reference interpreter.
//!
//! The machine is woven once; each program runs on the sparse executor exactly as `loom run` runs it (load
//! tokens, then the circuit-free decode loop). Its generated trace is then replayed against the interpreter
//! ([`isa_rv32im::circuit_lockstep::trace_lockstep`]): after every retired instruction the trace's pc and
//! x0..x31 (rebuilt from its register-file writes) must equal the interpreter's, and console bytes, exit
//! status and faults must agree. The interpreter only checks the finished trace; it never drives the model.
//! (The interpreter itself is checked against qemu-riscv32 by `rv32-lockstep`.)
//!
//! Prints one line per program and the total; exits 1 on any disagreement.

use anyhow::{Context, Result};
use backends::sparse::SparseModel;
use indicatif::{ProgressBar, ProgressStyle};
use isa_rv32im::circuit_lockstep::{LockstepEnd, trace_lockstep};
use isa_rv32im::examples::EXAMPLES;
use isa_rv32im::program::ProgramImage;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use weaver::host;

#[derive(clap::Args)]
pub struct Args {
    /// A machine config (configs/rv32im.toml).
    pub config: PathBuf,
    /// ELF32 programs (default: the built-in examples, or those `--examples` names).
    pub programs: Vec<PathBuf>,
    /// Built-in examples to run, comma-separated (hello, sort, crc32, sha256, sieve, bignum, printf, zba,
    /// muldiv, isa_selftest, demo).
    #[arg(long, value_delimiter = ',')]
    pub examples: Vec<String>,
    /// Bound on machine steps per program (the comparison covers the instructions retired until then).
    #[arg(long)]
    pub max_steps: Option<usize>,
}

/// Run the lockstep; returns the exit status.
pub fn run(a: Args) -> Result<ExitCode> {
    let cfg = crate::rv32::sparse_config(&a.config)?;
    let opts = cfg.options();
    // (name, ELF bytes, expected console for built-in examples)
    let mut programs: Vec<(String, Vec<u8>, Option<&'static [u8]>)> = Vec::new();
    for p in &a.programs {
        programs.push((p.display().to_string(), std::fs::read(p).with_context(|| format!("reading {}", p.display()))?, None));
    }
    for n in &a.examples {
        let e = isa_rv32im::examples::example(n).with_context(|| {
            format!("no built-in example {n:?} (there are: {})", EXAMPLES.iter().map(|e| e.name).collect::<Vec<_>>().join(", "))
        })?;
        programs.push((e.name.to_string(), e.elf.to_vec(), Some(e.expected_stdout)));
    }
    if programs.is_empty() {
        programs = EXAMPLES.iter().map(|e| (e.name.to_string(), e.elf.to_vec(), Some(e.expected_stdout))).collect();
    }
    let images = programs
        .iter()
        .map(|(n, elf, _)| ProgramImage::from_elf(elf, &opts).with_context(|| n.clone()))
        .collect::<Result<Vec<_>>>()?;
    let desc = crate::rv32::machine(&cfg, &opts, &a.config)?;
    let t0 = Instant::now();
    let woven = weaver::weave(&desc, &crate::rv32::weave_options(&cfg, &desc, false)?)?;
    let model = SparseModel::new(&woven.config, &woven.weights).map_err(anyhow::Error::msg).context("building the sparse executor")?;
    drop(woven.weights);
    let proto = &woven.protocol;
    eprintln!("rv32im {} KiB woven and executor built in {:.1} s", opts.ram_size / 1024, t0.elapsed().as_secs_f64());
    let max_steps = a.max_steps.unwrap_or(cfg.run.max_steps.min(usize::MAX as u64) as usize);
    println!("{:<14} {:>12} {:>10} {:>12} {:>10} {:>9} {:>8} {:>9}", "program", "instructions", "steps", "tokens", "mismatches", "end", "console", "seconds");
    let (mut total, mut bad, mut total_tokens) = (0u64, 0usize, 0usize);
    let t_all = Instant::now();
    for ((name, elf, expected), image) in programs.iter().zip(&images) {
        let t1 = Instant::now();
        let mut st = model.new_state();
        let prompt = image.prompt(proto);
        let pb = if std::io::IsTerminal::is_terminal(&std::io::stderr()) { ProgressBar::new_spinner() } else { ProgressBar::hidden() };
        pb.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").unwrap());
        let out = host::run_observed(
            proto,
            &prompt,
            max_steps,
            |t| model.step_argmax(&mut st, t),
            |ev| {
                if let host::Event::Step { steps } = ev {
                    if steps % 64 == 0 {
                        pb.set_message(format!("{name}: {steps} steps"));
                        pb.tick();
                    }
                }
            },
        )
        .map_err(anyhow::Error::msg)?;
        pb.finish_and_clear();
        let secs = t1.elapsed().as_secs_f64();
        let tokens = out.trace.prompt.len() + out.trace.generated.len();
        total_tokens += tokens;
        let cpu = isa_rv32im::load_elf(elf, opts.interp_config()).with_context(|| name.clone())?;
        match trace_lockstep(proto, &out.trace.generated, cpu, &opts) {
            Ok(rep) => {
                total += rep.instructions;
                let console = match expected {
                    Some(e) if rep.end != LockstepEnd::Limit && *e != rep.output.as_slice() => {
                        bad += 1;
                        "DIFFERS"
                    }
                    Some(_) if rep.end != LockstepEnd::Limit => "expected",
                    _ => "-",
                };
                let end = match rep.end {
                    LockstepEnd::Exit(c) => format!("exit {c}"),
                    LockstepEnd::Fault(f) => format!("{f:?}"),
                    LockstepEnd::Limit => "limit".into(),
                };
                println!("{name:<14} {:>12} {:>10} {tokens:>12} {:>10} {end:>9} {console:>8} {secs:>9.1}", rep.instructions, rep.steps, 0);
            }
            Err(e) => {
                bad += 1;
                println!("{name:<14} MISMATCH: {e}");
            }
        }
        let _ = std::io::stdout().flush();
    }
    let secs = t_all.elapsed().as_secs_f64();
    println!(
        "total: {total} instructions compared (pc and x0..x31 after each), {bad} programs disagreeing; {total_tokens} tokens in {secs:.0} s ({:.0} tokens/s, {:.1} instructions/s)",
        total_tokens as f64 / secs,
        total as f64 / secs
    );
    Ok(if bad == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
