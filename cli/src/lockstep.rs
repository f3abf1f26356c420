//! `loom lockstep CONFIG [PROGRAM ...]`: any machine on its executor, each trace replayed against the
//! machine's references.
//!
//! The machine is woven once; each program runs exactly as `loom run` runs it (load tokens, the circuit-free
//! decode loop, the machine's host devices). The finished trace is then replayed
//! - on the machine's reference evaluator ([`isa_api::lockstep::replay`]): every generated position must equal
//!   the token the circuit's reference computes (injected inputs applied alike), and
//! - where the machine has one, on its independent reference ([`isa_api::Machine::check_trace`]; RV32: the
//!   interpreter, after every retired instruction pc and x0..x31, console bytes, exit status and faults).
//! The references only check the finished trace; they never drive the model.
//!
//! Prints one line per program and the total; exits 3 ([`crate::DISAGREES`]) on any disagreement.

use crate::session::{open_config, run_program, weave_config};
use anyhow::{Context, Result};
use backends::ExecutorKind;
use isa_api::front::{Program, RunEnd};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// A machine config (configs/rv32im.toml, configs/acc8.toml, ...).
    pub config: PathBuf,
    /// Programs (default: the machine's built-in examples, or those `--examples` names).
    pub programs: Vec<PathBuf>,
    /// Built-in examples to run, comma-separated (rv32im: hello, sort, crc32, sha256, sieve, bignum, printf,
    /// zba, muldiv, isa_selftest, demo).
    #[arg(long, value_delimiter = ',')]
    pub examples: Vec<String>,
    /// Executor (default: the config's `[run] executor`).
    #[arg(long, value_parser = crate::executor_parser())]
    pub executor: Option<ExecutorKind>,
    /// Bound on machine steps per program (the comparison covers the steps run until then).
    #[arg(long, allow_negative_numbers = true)]
    pub max_steps: Option<usize>,
    /// Standard input for every program (RV32: what read(2) on fd 0 returns; default: none). The
    /// interpreter gets the bytes the trace shows the host delivering.
    #[arg(long, value_name = "FILE")]
    pub stdin: Option<PathBuf>,
    /// Run the machine of this checkpoint directory instead of weaving the config's: a woven checkpoint, or a
    /// grafted one (its machine route). Its trace protocol must be the one the config's machine weaves, whose
    /// reference evaluator checks it.
    #[arg(long, value_name = "DIR")]
    pub model: Option<PathBuf>,
    #[command(flatten)]
    pub keys: crate::run::KeyOverrides,
    /// Print one JSON object (every program's figures and the totals) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// No progress line on stderr.
    #[arg(long)]
    pub no_progress: bool,
}

/// Run the lockstep; returns the exit status.
pub fn run(a: Args) -> Result<ExitCode> {
    let (cfg, machine) = open_config(&a.config, &a.keys)?;
    let mut programs: Vec<Program> = a.programs.iter().map(|p| Program::from_file(p)).collect::<Result<_, _>>()?;
    for n in &a.examples {
        let names: Vec<String> = machine.examples().into_iter().map(|p| p.name).collect();
        programs.push(machine.example(n).with_context(|| format!("no built-in example {n:?} (there are: {})", names.join(", ")))?);
    }
    if programs.is_empty() {
        programs = machine.examples();
    }
    anyhow::ensure!(!programs.is_empty(), "{}: the machine has no built-in programs: give a PROGRAM", cfg.origin);
    let images = programs.iter().map(|p| machine.load(p)).collect::<Result<Vec<_>, _>>()?;
    let stdin = match &a.stdin {
        Some(p) => std::fs::read(p).with_context(|| format!("--stdin {}", p.display()))?,
        None => Vec::new(),
    };
    let t0 = Instant::now();
    let show = !a.no_progress && !a.json;
    let mut l = weave_config(&cfg, machine, a.executor, show)?;
    if let Some(dir) = &a.model {
        let manifest = weaver::export::load_manifest(dir)?;
        anyhow::ensure!(
            manifest.protocol == l.protocol,
            "{}: its trace protocol is not the one {} weaves (another machine, or other settings)",
            dir.display(),
            cfg.origin
        );
        let kind = a.executor.unwrap_or(l.executor.kind());
        l.executor = if backends::graft::GraftManifest::load(dir)?.is_some() {
            backends::executor::open_route(kind, dir, backends::graft::Route::Machine)?
        } else {
            backends::executor::open(kind, dir)?
        };
        if show {
            eprintln!("running the machine of {} (the reference: {})", dir.display(), cfg.origin);
        }
    }
    if show {
        eprintln!("{} {} {} and {} executor built in {:.1} s", l.face.name, l.machine.about(), l.prepared(), l.executor.kind(), t0.elapsed().as_secs_f64());
    }
    let desc = l.desc.clone().expect("a config run has its description");
    let max_steps = a.max_steps.unwrap_or(l.max_steps);
    // One line per program as it finishes (or one JSON object at the end).
    let mut rows: Vec<serde_json::Value> = Vec::new();
    let mut line = |row: serde_json::Value, text: String| {
        if !a.json {
            println!("{text}");
            let _ = std::io::stdout().flush();
        }
        rows.push(row);
    };
    if !a.json {
        println!(
            "{:<14} {:>12} {:>10} {:>12} {:>10} {:>9} {:>8} {:>9} {:>12}",
            "program", "instructions", "steps", "tokens", "mismatches", "end", "console", "seconds", "positions"
        );
    }
    let (mut total, mut bad, mut total_tokens, mut total_positions) = (0u64, 0usize, 0usize, 0usize);
    let t_all = Instant::now();
    let progress = show && std::io::IsTerminal::is_terminal(&std::io::stderr());
    for (program, image) in programs.iter().zip(&images) {
        let r = run_program(&l, image, max_steps, false, progress, &format!("{}: ", program.name), crate::session::stdin_io(Box::new(std::io::Cursor::new(stdin.clone()))))?;
        total_tokens += r.tokens();
        let name = &program.name;
        // The circuit's reference: every generated position.
        let replay = isa_api::lockstep::replay(&desc, image, &r.out.trace);
        total_positions += replay.positions;
        if let Some(m) = &replay.mismatch {
            bad += 1;
            let why = format!("the reference evaluator at generated position {} (step {}): model {}, reference {}", m.position, m.step, m.model, m.reference);
            line(serde_json::json!({ "program": name, "agrees": false, "mismatch": why }), format!("{name:<14} MISMATCH with {why}"));
            continue;
        }
        // The machine's independent reference, where it has one.
        let (instructions, end, console) = match l.machine.check_trace(program, &l.protocol, &r.out.trace) {
            Some(Ok(c)) => (c.instructions, c.end, c.console),
            Some(Err(e)) => {
                bad += 1;
                line(serde_json::json!({ "program": name, "agrees": false, "mismatch": e.to_string() }), format!("{name:<14} MISMATCH: {e}"));
                continue;
            }
            None => (replay.instructions, if r.end != RunEnd::StepLimit { r.finish.summary.clone() } else { "limit".into() }, r.console.clone()),
        };
        total += instructions;
        let console_check = match &program.expected_console {
            Some(e) if r.end != RunEnd::StepLimit && *e != console => {
                bad += 1;
                "DIFFERS"
            }
            Some(_) if r.end != RunEnd::StepLimit => "expected",
            _ => "-",
        };
        let row = serde_json::json!({
            "program": name, "agrees": console_check != "DIFFERS", "instructions": instructions, "steps": r.out.steps, "tokens": r.tokens(),
            "end": end, "console": console_check, "seconds": r.secs, "positions": replay.positions,
        });
        line(
            row,
            format!("{name:<14} {instructions:>12} {:>10} {:>12} {:>10} {end:>9} {console_check:>8} {:>9.1} {:>12}", r.out.steps, r.tokens(), 0, r.secs, replay.positions),
        );
    }
    let secs = t_all.elapsed().as_secs_f64();
    if a.json {
        let out = serde_json::json!({
            "machine": l.face.name, "executor": l.executor.kind().name(), "programs": rows, "instructions": total, "positions": total_positions,
            "disagreeing": bad, "tokens": total_tokens, "seconds": secs,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "total: {total} instructions compared, {total_positions} trace positions equal to the reference evaluator, {bad} programs disagreeing; {total_tokens} tokens in {secs:.0} s ({:.0} tokens/s, {:.1} instructions/s)",
            total_tokens as f64 / secs,
            total as f64 / secs
        );
    }
    Ok(if bad == 0 { ExitCode::SUCCESS } else { ExitCode::from(crate::DISAGREES) })
}
