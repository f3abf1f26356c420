//! `loom run CONFIG [PROGRAM]` weaves the machine a config names and runs a program on it (or the machine's
//! built-in demo); `loom run --model DIR [PROGRAM]` runs a woven checkpoint directory. `loom bench-run` is the
//! same run as a benchmark (JSON figures, no console).
//!
//! The verb's flags are here (the program's, the devices', the machine keys'); the machine session they run on
//! is [`crate::session`].

use crate::profile::stage_profile_json;
use crate::session::{open_checkpoint, open_config, run_program, weave_described};
use anyhow::{Context, Result, bail};
use backends::ExecutorKind;
use isa_api::front::{EXIT_STEP_LIMIT, Machine, Program, RunEnd};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// `CONFIG [PROGRAM]`: a machine config (configs/rv32im.toml, configs/acc8.toml, ...) and a program for it
    /// (an ELF for rv32im, a raw memory image for the test machines; default: the machine's built-in demo).
    /// With --model: `[PROGRAM]`.
    #[arg(num_args = 0..=2, value_name = "CONFIG [PROGRAM] | [PROGRAM]")]
    pub inputs: Vec<PathBuf>,
    /// Woven checkpoint directory (from `loom weave`) to run instead of weaving a config.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Executor (default: the config's `[run] executor`; incremental with --model).
    #[arg(long, value_parser = crate::executor_parser())]
    pub executor: Option<ExecutorKind>,
    #[command(flatten)]
    pub program: ProgramFlags,
    #[command(flatten)]
    pub devices: DeviceFlags,
    #[command(flatten)]
    pub keys: KeyOverrides,
}

/// The flags of one program's run (`run`, `bench-run`, `eval`): its step limit, its trace, the progress line.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ProgramFlags {
    /// Stop after this many machine steps if the machine has not halted (default: the config's
    /// `max_steps`, or 100,000,000 with --model).
    #[arg(long, allow_negative_numbers = true)]
    pub max_steps: Option<usize>,
    /// Write {"prompt": [...], "generated": [...], "injected": [[i, id], ...]} here.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// No progress line on stderr.
    #[arg(long)]
    pub no_progress: bool,
}

/// The host devices' flags of the verbs that run one program with them (`run`, `bench-run`, `eval`).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct DeviceFlags {
    /// The program's standard input (RV32: what read(2) on fd 0 returns), read as the machine asks for it
    /// (default: this process's standard input; `bench-run`: none).
    #[arg(long, value_name = "FILE")]
    pub stdin: Option<PathBuf>,
    /// Machines that declare a clock: stop after N frames (ticks).
    #[arg(long, value_name = "N")]
    pub frames: Option<u64>,
    /// Machines that declare a display: the frames as an animated GIF.
    #[arg(long, value_name = "FILE")]
    pub gif: Option<PathBuf>,
    /// Machines that declare a display: a PNG per frame in DIR (frame-00000.png, ...).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
    /// Pixels per display pixel in the GIF and PNGs.
    #[arg(long, default_value_t = 8)]
    pub scale: u32,
    /// Machines that declare a keypad: the keys pressed by frame (`FRAME KEYS` lines: hex key numbers joined
    /// by `+`, or `-` for none).
    #[arg(long = "input", value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// Replace existing frame files.
    #[arg(long)]
    pub force: bool,
}

/// `loom bench-run`: `run`'s arguments; the figures are JSON (the verb's only format: `--json` is accepted so
/// that a script may pass it to every verb that prints figures).
#[derive(clap::Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub run: Args,
    /// Print the figures as JSON (always so).
    #[arg(long)]
    pub json: bool,
}

/// The standard input of a run: the file `path`, else `default`.
pub(crate) fn open_stdin(path: Option<&Path>, default: impl FnOnce() -> Box<dyn std::io::Read>) -> Result<Box<dyn std::io::Read>> {
    Ok(match path {
        Some(p) => Box::new(std::io::BufReader::new(std::fs::File::open(p).with_context(|| format!("--stdin {}", p.display()))?)),
        None => default(),
    })
}

/// Machine keys given on the command line, which override the config's `[machine]` table (a machine that
/// does not take a key refuses it by name).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct KeyOverrides {
    /// Where a raw program is loaded (the machine key `load_at`; 6502: e.g. 0x0400).
    #[arg(long, value_parser = parse_address)]
    pub load_at: Option<u64>,
    /// The first program counter (the machine key `entry`; 6502: default the reset vector or load_at).
    #[arg(long, value_parser = parse_address)]
    pub pc: Option<u64>,
}

/// An address: decimal, or hexadecimal with `0x` or `$`.
fn parse_address(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, radix) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).or_else(|| t.strip_prefix('$')) {
        Some(h) => (h, 16),
        None => (t, 10),
    };
    u64::from_str_radix(&digits.replace('_', ""), radix).map_err(|e| format!("{s:?} is not an address ({e})"))
}

/// The flags of the verbs that run one program on a built-in config (`python`, `cuda`): executor, step limit,
/// progress line.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RunFlags {
    /// Executor (default: the config's `[run] executor`).
    #[arg(long, value_parser = crate::executor_parser())]
    pub executor: Option<ExecutorKind>,
    /// Stop after this many machine steps (default: the config's `max_steps`).
    #[arg(long, allow_negative_numbers = true)]
    pub max_steps: Option<usize>,
    /// No progress line on stderr.
    #[arg(long)]
    pub no_progress: bool,
}

/// The frame outputs and keys of `--gif`, `--png`, `--frames`, `--input`, checked against the devices the
/// machine declares.
pub(crate) fn device_options(a: &DeviceFlags, face: &isa_api::MachineFace) -> Result<(crate::display::FrameOutput, isa_api::devices::KeySchedule)> {
    use isa_api::DeviceDesc;
    let has = |f: fn(&DeviceDesc) -> bool| face.devices.iter().any(f);
    let out = crate::display::FrameOutput { gif: a.gif.clone(), png_dir: a.png.clone(), scale: a.scale, force: a.force };
    if out.any() && !has(|d| matches!(d, DeviceDesc::Display { .. })) {
        bail!("--gif/--png: machine {} declares no display", face.name);
    }
    if a.frames == Some(0) {
        bail!("--frames must be at least 1");
    }
    if (out.any() || a.frames.is_some()) && !has(|d| matches!(d, DeviceDesc::Ticks { .. })) {
        bail!("--frames/--gif/--png: machine {} declares no clock (frames are its ticks)", face.name);
    }
    out.check()?;
    let keys = match &a.key_file {
        None => Default::default(),
        Some(p) => {
            let n = face.devices.iter().find_map(|d| if let DeviceDesc::Keypad { keys, .. } = d { Some(*keys) } else { None });
            let n = n.with_context(|| format!("--input: machine {} declares no keypad", face.name))?;
            let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            isa_api::devices::KeySchedule::parse(&text, n).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?
        }
    };
    Ok((out, keys))
}

/// The program argument, or the machine's demo.
pub(crate) fn program_or_demo(path: Option<&PathBuf>, machine: &dyn Machine, what: &str) -> Result<Program> {
    match path {
        Some(p) => Ok(Program::from_file(p)?),
        None => machine.demo().with_context(|| format!("{what} has no built-in demo program: give a PROGRAM")),
    }
}


/// Is `p` a machine config (a TOML file with a `[machine]` table), not a program such as a SIMT4 launch file?
fn is_machine_config(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "toml")
        && std::fs::read_to_string(p).ok().and_then(|t| t.parse::<toml::Table>().ok()).is_some_and(|t| t.contains_key("machine"))
}

/// `loom run` / `loom bench-run`; returns the process exit status.
pub fn run(a: Args, bench: bool) -> Result<ExitCode> {
    let progress = !a.program.no_progress && !bench;
    // The circuit is built once and the program loaded once (a SIMT4 kernel compiled once), before the weave.
    let (l, program, image, (frame_out, keys)) = match &a.model {
        Some(dir) => {
            if a.inputs.len() > 1 {
                bail!("--model DIR takes at most one PROGRAM, got {} arguments", a.inputs.len());
            }
            if let Some(p) = a.inputs.first().filter(|p| is_machine_config(p)) {
                bail!("--model DIR runs the checkpoint's machine: {} looks like a config, not a program (give either a config or --model DIR)", p.display());
            }
            let keys: Vec<&str> = [(a.keys.load_at.is_some(), "--load-at"), (a.keys.pc.is_some(), "--pc")].into_iter().filter_map(|(on, f)| on.then_some(f)).collect();
            if !keys.is_empty() {
                bail!("{} with --model DIR: a checkpoint's machine keeps the keys it was woven with (run the config with them instead)", keys.join(" and "));
            }
            let given = a.inputs.first().map(|p| Program::from_file(p)).transpose()?;
            let l = open_checkpoint(dir, given.as_ref(), a.executor)?;
            let program = match given {
                Some(p) => p,
                None => program_or_demo(None, l.machine.as_ref(), &format!("machine {}", l.face.name))?,
            };
            let image = l.machine.load(&program)?;
            let devices = device_options(&a.devices, &l.face)?;
            (l, program, image, devices)
        }
        None => {
            let Some(config) = a.inputs.first() else {
                bail!("give a machine config (e.g. configs/rv32im.toml) and optionally a program, or --model DIR [PROGRAM]");
            };
            let (cfg, machine) = open_config(config, &a.keys)?;
            let program = program_or_demo(a.inputs.get(1), machine.as_ref(), &cfg.origin)?;
            // Check the program, the device options and --stdin before the (long) weave.
            let image = machine.load(&program)?;
            let desc = machine.describe()?;
            let devices = device_options(&a.devices, &desc.face)?;
            if let Some(p) = &a.devices.stdin {
                std::fs::File::open(p).with_context(|| format!("--stdin {}", p.display()))?;
            }
            (weave_described(&cfg, machine, desc, a.executor, progress)?, program, image, devices)
        }
    };
    let max_steps = a.program.max_steps.unwrap_or(l.max_steps);
    let rep = &l.report;
    let nonzero = l.executor.nonzero_weights().map_or(String::new(), |n| format!(" ({n} nonzero in the projections)"));
    let kind = l.executor.kind();
    if !bench {
        let about = l.machine.about();
        eprintln!(
            "{}{}: {} layers, hidden {}, {:.3} G parameters{nonzero}, at most {} tokens per step{}; {} in {:.1} s, {kind} executor ready in {:.1} s",
            rep.machine,
            a.model.as_ref().map_or(String::new(), |d| format!(" from {}", d.display())),
            rep.layers,
            rep.hidden_size,
            rep.parameters as f64 / 1e9,
            rep.tokens_per_step,
            if about.is_empty() { String::new() } else { format!(", {about}") },
            l.prepared(),
            l.prepare_s,
            l.build_s
        );
    }
    let input = open_stdin(a.devices.stdin.as_deref(), || if bench { Box::new(std::io::empty()) } else { Box::new(std::io::stdin()) })?;
    let r = run_program(&l, &image, max_steps, !bench, progress, "", isa_api::front::HostIo { stdin: input, frames: a.devices.frames, keys })?;
    if frame_out.any() {
        frame_out.write(&r.frames)?;
    }
    if let Some(p) = &a.program.trace {
        std::fs::write(p, serde_json::to_string(&r.out.trace)?).with_context(|| format!("writing {}", p.display()))?;
    }
    let tokens = r.tokens();
    if bench {
        let figures = serde_json::json!({
            "machine": rep.machine,
            "about": l.machine.about(),
            "program": program.name,
            "executor": kind.name(),
            "layers": rep.layers,
            "hidden_size": rep.hidden_size,
            "parameters": rep.parameters,
            "nonzero_weights": l.executor.nonzero_weights(),
            "tokens_per_step": rep.tokens_per_step,
            "weave_ms": rep.weave_ms,
            "executor_build_s": l.build_s,
            "prompt_tokens": r.out.trace.prompt.len(),
            "generated_tokens": r.out.trace.generated.len(),
            "steps": r.out.steps,
            "halted": r.out.halted,
            "instructions": r.instructions,
            "decode_s": r.secs,
            "tokens_per_s": tokens as f64 / r.secs,
            "instructions_per_s": r.instructions as f64 / r.secs,
            "tokens_per_instruction": r.out.trace.generated.len() as f64 / r.instructions.max(1) as f64,
            "exit_status": r.finish.status,
            "console_bytes": r.console.len(),
            "peak_rss_bytes": crate::bench::proc_status_bytes("VmHWM:"),
        });
        let mut figures = figures;
        figures["token_times"] = r.token_times.json();
        if let Some(t) = &r.stage_times {
            figures["stage_times"] = stage_profile_json(t, r.commit_stage_times.as_ref());
        }
        if let Some(f) = &r.field_times {
            figures["field_times"] = f.json();
        }
        if let Some(s) = &r.step_times {
            figures["step_times"] = s.json();
        }
        if !r.counters.is_empty() {
            figures["executor_counters"] = r.counters.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>().into();
        }
        figures[if l.from_checkpoint { "load_s" } else if l.cached { "weave_cache_load_s" } else { "weave_s" }] = serde_json::json!(l.prepare_s);
        println!("{}", serde_json::to_string_pretty(&figures)?);
        // A measurement: the program's status is a figure (`exit_status`), not the process's.
        return Ok(ExitCode::SUCCESS);
    }
    let summary = if r.end == RunEnd::StepLimit && r.finish.status == EXIT_STEP_LIMIT {
        format!("step limit ({max_steps} steps) reached: {}", r.finish.summary)
    } else {
        r.finish.summary.clone()
    };
    eprintln!(
        "[loom: {summary}; {} instructions, {} steps, {tokens} tokens ({} prompt) in {:.1} s: {:.0} tokens/s, {:.1} instructions/s ({kind} executor)]",
        r.instructions,
        r.out.steps,
        r.out.trace.prompt.len(),
        r.secs,
        tokens as f64 / r.secs,
        r.instructions as f64 / r.secs
    );
    Ok(ExitCode::from(r.finish.status))
}

#[cfg(test)]
mod tests {
    use super::is_machine_config;
    use std::path::Path;

    /// `run --model DIR PROGRAM` refuses a machine config as the program, but takes a SIMT4 launch file (TOML
    /// without a `[machine]` table) and any other file.
    #[test]
    fn a_launch_file_is_a_program_and_a_config_is_not() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        assert!(is_machine_config(&root.join("configs/simt4.toml")));
        assert!(is_machine_config(&root.join("configs/acc8.toml")));
        assert!(!is_machine_config(&root.join("examples/cuda/demo.toml")));
        assert!(!is_machine_config(&root.join("examples/cuda/demo.cu")));
        assert!(!is_machine_config(&root.join("no/such/file.toml")));
    }
}
