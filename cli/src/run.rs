//! `loom run CONFIG [PROGRAM]` weaves the machine a config names and runs a program on it (see [`crate::rv32`]);
//! `loom run --model DIR PROGRAM` runs a woven machine from its checkpoint directory. The decode loop knows
//! only the published manifest (token meanings) and the weights: it loads the program through load tokens,
//! feeds back every generated token and prints the output port. No circuit and no reference interpreter is
//! reachable from here.

use anyhow::Context;
use backends::sparse::SparseModel;
use std::path::PathBuf;
use weaver::export::load;
use weaver::host;

#[derive(clap::Args)]
pub struct Args {
    /// `CONFIG [PROGRAM.elf]`: a machine config (configs/rv32im.toml) and an ELF32 program (default: the
    /// built-in demo). With --model: `PROGRAM`, an ELF for an rv32im checkpoint, else a raw image
    /// (little-endian words of the program memory).
    #[arg(num_args = 0..=2, value_name = "CONFIG [PROGRAM] | PROGRAM")]
    pub inputs: Vec<PathBuf>,
    /// Woven checkpoint directory (from `loom weave`) to run instead of weaving a config.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Load address of the image.
    #[arg(long, default_value_t = 0)]
    pub base: u64,
    /// Stop after this many machine steps if the machine has not halted (default: the config's
    /// `max_steps`, or 1,000,000 with --model).
    #[arg(long)]
    pub max_steps: Option<usize>,
    /// Write {"prompt": [...], "generated": [...], "injected": [[i, id], ...]} here.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Print the output port's values (one per line; with --model).
    #[arg(long)]
    pub print_outputs: bool,
    /// No progress line on stderr.
    #[arg(long)]
    pub no_progress: bool,
}

/// `loom run`: dispatch on the form of the arguments; returns the process exit status.
pub fn run(a: Args, bench: bool) -> anyhow::Result<std::process::ExitCode> {
    if a.model.is_some() {
        return run_checkpoint(a, bench);
    }
    let Some(config) = a.inputs.first() else {
        anyhow::bail!("give a machine config (e.g. configs/rv32im.toml) and optionally a program, or --model DIR PROGRAM");
    };
    if a.print_outputs || a.base != 0 {
        anyhow::bail!("--print-outputs and --base apply to --model runs");
    }
    crate::rv32::run(crate::rv32::Rv32Run {
        config,
        program: a.inputs.get(1).map(|p| p.as_path()),
        max_steps: a.max_steps,
        trace: a.trace,
        progress: !a.no_progress,
        bench,
    })
}

fn run_checkpoint(a: Args, bench: bool) -> anyhow::Result<std::process::ExitCode> {
    let model_dir = a.model.clone().expect("checked by the caller");
    let [program] = &a.inputs[..] else {
        anyhow::bail!("--model DIR takes one PROGRAM (an ELF for rv32im checkpoints, else a raw image), got {} arguments", a.inputs.len());
    };
    // rv32im checkpoints run ELF programs with the console, exit and fault devices of `loom run CONFIG`.
    let mf = std::fs::read_to_string(model_dir.join(weaver::export::MANIFEST_FILE)).with_context(|| format!("{}: no machine manifest", model_dir.display()))?;
    if weaver::Manifest::from_json(&mf).map_err(anyhow::Error::msg)?.machine == "rv32im" {
        if a.print_outputs || a.base != 0 {
            anyhow::bail!("--print-outputs and --base apply to raw images; an rv32im checkpoint runs an ELF linked at its RAM base");
        }
        return crate::rv32::run_checkpoint(&model_dir, program, a.max_steps, a.trace.clone(), !a.no_progress, bench);
    }
    let max_steps = a.max_steps.unwrap_or(1_000_000);
    let t_load = std::time::Instant::now();
    let (config, weights, manifest) = load(&model_dir)?;
    let load_s = t_load.elapsed().as_secs_f64();
    let model = SparseModel::new(&config, &weights).map_err(anyhow::Error::msg).context("building the sparse executor")?;
    drop(weights);
    let build_s = t_load.elapsed().as_secs_f64() - load_s;
    let bytes = std::fs::read(program).with_context(|| format!("reading {}", program.display()))?;
    let mem = manifest.memories.get(manifest.program_memory as usize).context("the manifest names no program memory")?;
    let wb = mem.word_width.div_ceil(8) as usize;
    let words: Vec<u64> = bytes.chunks(wb).map(|c| c.iter().rev().fold(0u64, |acc, b| (acc << 8) | *b as u64)).collect();
    let prompt = host::program_prompt(&manifest.protocol, manifest.program_memory, a.base, &words);
    let mut st = model.new_state();
    let t0 = std::time::Instant::now();
    let out = host::run(&manifest.protocol, &prompt, max_steps, |t| model.step_argmax(&mut st, t)).map_err(anyhow::Error::msg)?;
    let dt = t0.elapsed().as_secs_f64();
    if a.print_outputs {
        for (port, v) in &out.outputs {
            let name = manifest.ports.get(*port as usize).map_or("?", |p| p.name.as_str());
            println!("{name} {v}");
        }
    }
    let n = out.trace.prompt.len() + out.trace.generated.len();
    if let Some(p) = &a.trace {
        std::fs::write(p, serde_json::to_string(&out.trace)?).with_context(|| format!("writing {}", p.display()))?;
    }
    if bench {
        let figures = serde_json::json!({
            "machine": manifest.machine,
            "layers": manifest.report.layers,
            "hidden_size": manifest.report.hidden_size,
            "parameters": manifest.report.parameters,
            "nonzero_weights": model.nonzero_weights(),
            "weave_ms": manifest.report.weave_ms,
            "load_s": load_s,
            "executor_build_s": build_s,
            "prompt_tokens": out.trace.prompt.len(),
            "generated_tokens": out.trace.generated.len(),
            "steps": out.steps,
            "halted": out.halted,
            "decode_s": dt,
            "tokens_per_s": n as f64 / dt,
            "peak_rss_bytes": crate::bench::proc_status_bytes("VmHWM:"),
        });
        println!("{}", serde_json::to_string_pretty(&figures)?);
        return Ok(std::process::ExitCode::SUCCESS);
    }
    eprintln!(
        "{}: {} steps, {} generated tokens ({} prompt), {}, {:.0} tokens/s (sparse executor)",
        manifest.machine,
        out.steps,
        out.trace.generated.len(),
        out.trace.prompt.len(),
        if out.halted { "halted" } else { "step limit" },
        n as f64 / dt
    );
    Ok(std::process::ExitCode::SUCCESS)
}
