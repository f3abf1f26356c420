//! `loom cuda [CONFIG] KERNEL [--grid X[,Y]] [--block X[,Y]] [--arg NAME=VALUE ...]`: a CUDA-subset kernel on the woven
//! SIMT4 GPU. The kernel (`X.cu`, with the launch file `X.toml` beside it as the default launch, or a launch
//! file naming its kernel) is compiled for the launch, loaded with its arrays as tokens, and run in the
//! network; the arrays are printed as JSON after the run. `--check` replays the trace against the reference
//! evaluator (every generated token) and the reference interpreter (the whole machine state after every step).
//! Nothing of the kernel runs on the host: blocks, warps and barriers are scheduled by the compiled program
//! inside the machine.

use crate::session::{open_config_or, run_program, weave_described};
use anyhow::{Context, Result, bail};
use isa_api::front::{Program, RunEnd};
use isa_simt4::launch::LaunchOverrides;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// `[CONFIG] KERNEL`: a simt4 config (default: the built-in configs/simt4.toml, 4 lanes;
    /// configs/simt4-8.toml: 8) and the kernel (`X.cu`; its launch defaults to `X.toml` beside it) or a launch
    /// file naming its kernel.
    #[arg(num_args = 1..=2, required = true, value_name = "[CONFIG] KERNEL")]
    pub inputs: Vec<PathBuf>,
    /// Blocks in the grid: `X` or `X,Y` (overrides the launch file).
    #[arg(long)]
    pub grid: Option<String>,
    /// Threads in a block: `X` or `X,Y` (overrides the launch file).
    #[arg(long)]
    pub block: Option<String>,
    /// A kernel argument `NAME=VALUE`: a number, a JSON array (`[1,2]`, `[[1,2],[3,4]]`), `zeros(N)`,
    /// `zeros(R,C)` or `@file.json` (overrides the launch file's argument of that name). Repeat per argument.
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    pub args: Vec<String>,
    /// A launch file (TOML: grid, block, [args]) instead of the one beside the kernel.
    #[arg(long)]
    pub launch: Option<PathBuf>,
    /// Also replay the trace against the reference evaluator and the reference interpreter; exit status 3 if
    /// they disagree.
    #[arg(long)]
    pub check: bool,
    /// Write the trace (prompt, generated tokens) as JSON.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    #[command(flatten)]
    pub run: crate::run::RunFlags,
}

impl Args {
    /// The kernel or launch file: the last positional argument.
    pub fn kernel(&self) -> &Path {
        self.inputs.last().expect("clap requires KERNEL")
    }

    /// The config, when given: the first of two positional arguments.
    pub fn config(&self) -> Option<&Path> {
        (self.inputs.len() == 2).then(|| self.inputs[0].as_path())
    }
}

/// The built-in config: 4 lanes.
const SIMT4_CONFIG: &str = include_str!("../../configs/simt4.toml");

/// The program of `a`'s launch ([`isa_simt4::launch::launch_program`]).
pub fn launch_program(a: &Args) -> Result<Program> {
    let overrides = LaunchOverrides { grid: a.grid.clone(), block: a.block.clone(), args: a.args.clone() };
    isa_simt4::launch::launch_program(a.kernel(), a.launch.as_deref(), &overrides).map_err(anyhow::Error::msg)
}

/// `loom cuda`; returns the exit status (0, 134 on a machine fault, 3 ([`crate::DISAGREES`]) when `--check` disagrees).
pub fn run(a: Args) -> Result<ExitCode> {
    let program = launch_program(&a)?;
    let (cfg, machine) = open_config_or(a.config(), SIMT4_CONFIG, "configs/simt4.toml (built in)")?;
    let desc = machine.describe()?;
    if desc.name != "simt4" {
        bail!("{}: loom cuda runs kernels on the simt4 machine; this config's machine is not simt4", cfg.origin);
    }
    // Compile first: a kernel error is reported before any weaving.
    let image = machine.load(&program)?;
    let progress = !a.run.no_progress;
    let l = weave_described(&cfg, machine, desc, a.run.executor, progress)?;
    if progress {
        eprintln!("{}", l.header());
    }
    let max_steps = a.run.max_steps.unwrap_or(l.max_steps);
    let r = run_program(&l, &image, max_steps, true, progress, "", Default::default())?;
    if let Some(p) = &a.trace {
        std::fs::write(p, serde_json::to_string(&r.out.trace)?).with_context(|| format!("writing {}", p.display()))?;
    }
    let summary = if r.end == RunEnd::StepLimit { format!("step limit ({max_steps} steps) reached") } else { r.finish.summary.clone() };
    if progress {
        eprintln!(
            "[loom cuda: {summary}; {} instructions, {} steps, {} tokens in {:.1} s: {:.0} tokens/s ({} layers, {} executor, {})]",
            r.instructions,
            r.out.steps,
            r.tokens(),
            r.secs,
            r.tokens() as f64 / r.secs,
            l.report.layers,
            l.executor.kind(),
            l.machine.about()
        );
    } else if r.finish.status != 0 {
        eprintln!("{summary}");
    }
    if a.check {
        let desc = l.desc.clone().expect("a config run has its description");
        let replay = isa_api::lockstep::replay(&desc, &image, &r.out.trace);
        if let Some(m) = &replay.mismatch {
            println!("check: MISMATCH with the reference evaluator at generated position {} (step {}): model {}, reference {}", m.position, m.step, m.model, m.reference);
            return Ok(ExitCode::from(crate::DISAGREES));
        }
        match l.machine.check_trace(&program, &l.protocol, &r.out.trace) {
            Some(Ok(c)) if c.console == r.console => {
                println!("check: agree: {} generated positions equal to the reference evaluator; {}: {}, the same arrays", replay.positions, c.against, c.end);
            }
            Some(Ok(c)) => {
                println!("check: the arrays differ: the network {}the interpreter {}", String::from_utf8_lossy(&r.console), String::from_utf8_lossy(&c.console));
                return Ok(ExitCode::from(crate::DISAGREES));
            }
            Some(Err(e)) => {
                println!("check: MISMATCH with the reference interpreter: {e}");
                return Ok(ExitCode::from(crate::DISAGREES));
            }
            None => bail!("the simt4 front has no reference interpreter check"),
        }
    }
    Ok(ExitCode::from(r.finish.status))
}
