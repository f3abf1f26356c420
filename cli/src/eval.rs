//! `loom eval CONFIG [PROGRAM]`: a program on the machine's exact reference evaluator, with its host devices and
//! nothing woven, as transformer-vm's `wasm-eval` runs a program on its reference: for plugin authors debugging a
//! circuit. The circuit is evaluated node by node at every step ([`isa_api::Predictor`] over
//! [`isa_api::Reference`]); the host loop, the devices and the trace are `loom run`'s, so the trace is the one the
//! woven network writes (`loom lockstep` checks that equality) and the console, frames and exit status are the
//! program's. No network runs: this checks a circuit, not its weights.

use crate::run::{DeviceFlags, KeyOverrides, ProgramFlags, device_options, open_stdin, program_or_demo};
use crate::session::{Driven, drive_devices, open_config};
use anyhow::{Context, Result};
use isa_api::front::RunEnd;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// `CONFIG [PROGRAM]`: a machine config and a program for it, as `loom run` takes them (default: the
    /// machine's built-in demo).
    #[arg(num_args = 1..=2, required = true, value_name = "CONFIG [PROGRAM]")]
    pub inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub program: ProgramFlags,
    /// Print the run's figures as JSON on stdout (instead of the summary line on stderr).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub devices: DeviceFlags,
    #[command(flatten)]
    pub keys: KeyOverrides,
}

/// `loom eval`; returns the program's exit status (or 0 with `--json`, whose figures carry it).
pub fn run(a: Args) -> Result<ExitCode> {
    let (cfg, machine) = open_config(&a.inputs[0], &a.keys)?;
    let program = program_or_demo(a.inputs.get(1), machine.as_ref(), &cfg.origin)?;
    let image = machine.load(&program)?;
    let desc = machine.describe()?;
    let (frame_out, keys) = device_options(&a.devices, &desc.face)?;
    let stdin = open_stdin(a.devices.stdin.as_deref(), || Box::new(std::io::stdin()))?;
    let io = isa_api::front::HostIo { stdin, frames: a.devices.frames, keys };
    let console: Box<dyn std::io::Write> = if a.json { Box::new(std::io::sink()) } else { Box::new(std::io::stdout()) };
    let devices = machine.devices_with(&desc.face, &image, console, io)?;
    let protocol = isa_api::Protocol::of(&desc);
    let prompt = image.prompt(&protocol);
    let max_steps = a.program.max_steps.unwrap_or(cfg.run.max_steps as usize);
    let mut predictor = isa_api::Predictor::new(desc.clone(), &image, prompt.len());
    let mut position = 0;
    let next = |t| {
        position += 1;
        predictor.next(position - 1, t)
    };
    let t0 = Instant::now();
    let Driven { out, end, finish, mut devices, secs } = drive_devices(&protocol, &prompt, devices, max_steps, !a.program.no_progress && !a.json, "", next)?;
    let frames = devices.take_frames();
    if frame_out.any() {
        frame_out.write(&frames)?;
    }
    if let Some(p) = &a.program.trace {
        std::fs::write(p, serde_json::to_string(&out.trace)?).with_context(|| format!("writing {}", p.display()))?;
    }
    let tokens = out.trace.prompt.len() + out.trace.generated.len();
    let instructions = devices.instructions();
    if a.json {
        let figures = serde_json::json!({
            "machine": desc.name,
            "program": program.name,
            "evaluator": "reference",
            "steps": out.steps,
            "halted": out.halted,
            "ended": match end { RunEnd::Halted => "halted", RunEnd::Devices => "devices", RunEnd::StepLimit => "step limit" },
            "instructions": instructions,
            "prompt_tokens": out.trace.prompt.len(),
            "generated_tokens": out.trace.generated.len(),
            "seconds": secs,
            "exit_status": finish.status,
            "summary": finish.summary,
            "console": String::from_utf8_lossy(devices.console()),
        });
        println!("{}", serde_json::to_string_pretty(&figures)?);
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "[loom eval: {}; {instructions} instructions, {} steps, {tokens} tokens ({} prompt) in {:.1} s on the reference evaluator (nothing woven)]",
        finish.summary,
        out.steps,
        out.trace.prompt.len(),
        t0.elapsed().as_secs_f64()
    );
    Ok(ExitCode::from(finish.status))
}
