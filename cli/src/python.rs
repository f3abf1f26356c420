//! `loom python [CONFIG] (-c CODE | SCRIPT | - | -i)`: MicroPython in the woven RV32IM machine. The firmware
//! (`isa_rv32im::examples::MICROPYTHON_ELF`) is the program; the script is its standard input, which the host
//! feeds as the machine's read(2) asks for it; the console is the script's output. Nothing of Python runs on
//! the host: it weaves the machine, loads the firmware, delivers bytes and prints bytes.

use crate::session::{run_program, weave_config};
use anyhow::{Context, Result, bail};
use isa_api::front::{Program, RunEnd};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// `[CONFIG] [SCRIPT]`: an rv32im config (a `.toml`) with at least 512 KiB of RAM from 0x10000 (default:
    /// the built-in configs/rv32im-512k.toml) and a Python script file, `-` for standard input (or `-c CODE`).
    #[arg(num_args = 0..=2, value_name = "[CONFIG] [SCRIPT]")]
    pub inputs: Vec<PathBuf>,
    /// The program as a string, like `python -c`.
    #[arg(short = 'c', value_name = "CODE")]
    pub code: Option<String>,
    /// A line-by-line session (a REPL in the network) even when standard input is not a terminal. Without a
    /// script, `loom python` starts one on a terminal and runs standard input as the script otherwise.
    #[arg(short = 'i', conflicts_with = "code")]
    pub interactive: bool,
    #[command(flatten)]
    pub run: crate::run::RunFlags,
}

/// The built-in config: 512 KiB of RAM at 0x10000 (MicroPython needs more than 256 KiB).
const PYTHON_CONFIG: &str = include_str!("../../configs/rv32im-512k.toml");

/// `loom python`; returns the script's exit status (0; 1 when it raised an exception).
pub fn run(a: Args) -> Result<ExitCode> {
    let is_config = |p: &PathBuf| p.extension().is_some_and(|e| e == "toml");
    let (config, script) = match (a.inputs.as_slice(), &a.code) {
        ([], Some(_)) => (None, None),
        ([], None) => (None, None),
        ([one], None) if is_config(one) => (Some(one.clone()), None),
        ([one], Some(_)) if is_config(one) => (Some(one.clone()), None),
        ([one], Some(_)) => bail!("give a script or -c CODE, not both ({} is not a config: a config ends in .toml)", one.display()),
        ([one], None) => (None, Some(one.clone())),
        ([c, s], None) if is_config(c) && !is_config(s) => (Some(c.clone()), Some(s.clone())),
        ([c, s], None) if is_config(s) => bail!("the config goes first: loom python {} {}", s.display(), c.display()),
        ([c, _], None) => bail!("one script at a time ({} is not a config: a config ends in .toml)", c.display()),
        ([_, _], Some(_)) => bail!("give a script or -c CODE, not both"),
        _ => bail!("give a script or -c CODE (loom python [CONFIG] SCRIPT, loom python [CONFIG] -c 'print(2**100)', loom python - < SCRIPT)"),
    };
    if a.interactive && script.is_some() {
        bail!("-i starts a session and takes no script (loom python [CONFIG] -i)");
    }
    // No script: a session on a terminal (or with -i), else standard input is the script, as for CPython.
    let session = a.code.is_none() && script.is_none() && (a.interactive || std::io::IsTerminal::is_terminal(&std::io::stdin()));
    let script = if a.code.is_none() && script.is_none() && !session { Some(PathBuf::from("-")) } else { script };
    let source: Vec<u8> = match (&a.code, &script) {
        (None, None) => Vec::new(),
        (Some(c), _) => c.clone().into_bytes(),
        (None, Some(p)) if p.as_os_str() == "-" => {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut v).context("reading the script from standard input")?;
            v
        }
        (None, Some(p)) => std::fs::read(p).with_context(|| format!("reading {}", p.display()))?,
    };
    let (cfg, machine) = crate::session::open_config_or(config.as_deref(), PYTHON_CONFIG, "configs/rv32im-512k.toml (built in)")?;
    if machine.describe()?.name != "rv32im" {
        bail!("{}: loom python runs MicroPython on the rv32im machine; this config's machine is not rv32im", cfg.origin);
    }
    let program = Program { name: "micropython".into(), bytes: isa_rv32im::examples::MICROPYTHON_ELF.to_vec(), expected_console: None };
    let image = machine.load(&program).with_context(|| {
        format!("{}: MicroPython needs {} KiB of RAM from 0x10000", cfg.origin, isa_rv32im::examples::MICROPYTHON_RAM / 1024)
    })?;
    let progress = !a.run.no_progress;
    let l = weave_config(&cfg, machine, a.run.executor, progress)?;
    if progress {
        eprintln!("{}", l.header());
    }
    let max_steps = a.run.max_steps.unwrap_or(l.max_steps);
    // The firmware takes a first byte Ctrl-B (0x02) as the start of a session (examples/rv32/micropython/main.c),
    // whose lines come from standard input as the machine reads them.
    let stdin: Box<dyn std::io::Read> = if session {
        if progress {
            eprintln!("MicroPython in the network: each statement is compiled and run by the woven machine (seconds each). Ctrl-D ends.");
        }
        Box::new(std::io::Read::chain(std::io::Cursor::new(vec![0x02u8]), std::io::stdin()))
    } else {
        Box::new(std::io::Cursor::new(source))
    };
    // No progress line during a session: it would write over the prompt.
    let r = run_program(&l, &image, max_steps, true, progress && !session, "", crate::session::stdin_io(stdin))?;
    let tokens = r.tokens();
    let summary = if r.end == RunEnd::StepLimit { format!("step limit ({max_steps} steps) reached: {}", r.finish.summary) } else { r.finish.summary.clone() };
    if progress {
        eprintln!(
            "[loom python: {summary}; {} instructions, {} steps, {tokens} tokens in {:.1} s: {:.0} tokens/s, {:.1} instructions/s ({} executor, {})]",
            r.instructions,
            r.out.steps,
            r.secs,
            tokens as f64 / r.secs,
            r.instructions as f64 / r.secs,
            l.executor.kind(),
            l.machine.about()
        );
    }
    Ok(ExitCode::from(r.finish.status))
}
