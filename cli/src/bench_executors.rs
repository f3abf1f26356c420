//! `loom bench-executors CONFIG [PROGRAM]`: the executors side by side in one run. The machine is woven once;
//! each executor is built from the same weights and runs the same program; every trace must equal the first
//! executor's, token for token; the table gives build time, memory, tokens/s and instructions/s, and each
//! executor's speed as a ratio to the first's (ratios in one run: these machines are noisy).

use crate::run::program_or_demo;
use crate::session::{open_config, run_program, Loaded};
use anyhow::{bail, Result};
use backends::ExecutorKind;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// `CONFIG [PROGRAM]`: a machine config and a program for it (default: the machine's built-in demo).
    #[arg(num_args = 1..=2, value_name = "CONFIG [PROGRAM]")]
    pub inputs: Vec<PathBuf>,
    /// Executors to compare, comma-separated; the first is the baseline of the ratios.
    #[arg(long, value_delimiter = ',', default_value = "sparse,incremental,jit", value_parser = crate::executor_parser())]
    pub executors: Vec<ExecutorKind>,
    /// Stop after this many machine steps (default: the config's `max_steps`).
    #[arg(long, allow_negative_numbers = true)]
    pub max_steps: Option<usize>,
    /// Print the figures as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One executor's figures.
struct Row {
    kind: ExecutorKind,
    build_s: f64,
    build_rss: i64,
    tokens: usize,
    instructions: u64,
    secs: f64,
    counters: Vec<(&'static str, u64)>,
}

fn rss() -> i64 {
    crate::bench::proc_status_bytes("VmRSS:").map_or(0, |b| b as i64)
}

pub fn run(a: Args) -> Result<std::process::ExitCode> {
    if a.executors.is_empty() {
        bail!("--executors names no executor");
    }
    let (cfg, machine) = open_config(&a.inputs[0], &Default::default())?;
    let program = program_or_demo(a.inputs.get(1), machine.as_ref(), &cfg.origin)?;
    let image = machine.load(&program)?;
    let desc = machine.describe()?;
    let t0 = Instant::now();
    let woven = weaver::weave(&desc, &weaver::WeaveOptions { fit: cfg.geometry.clone(), attention_layer: false })?;
    let weave_s = t0.elapsed().as_secs_f64();
    if let Some(k) = a.executors.iter().find(|k| k.is_dense()).filter(|_| woven.report.parameters > crate::session::DENSE_PARAMETER_LIMIT) {
        bail!("{}: executor {k} is dense and the machine has {:.2} G parameters; compare the sparse executors here", cfg.origin, woven.report.parameters as f64 / 1e9);
    }
    let mut built = Vec::new();
    for &kind in &a.executors {
        let (r0, t1) = (rss(), Instant::now());
        let ex = backends::executor::build(kind, &woven.config, &woven.weights)?;
        built.push((kind, ex, t1.elapsed().as_secs_f64(), rss() - r0));
    }
    drop(woven.weights);
    let mut rows: Vec<Row> = Vec::new();
    let mut first_trace: Option<(ExecutorKind, Vec<u32>)> = None;
    let max_steps = a.max_steps.unwrap_or(cfg.max_steps());
    let mut loaded = None::<Loaded>;
    for (kind, ex, build_s, build_rss) in built {
        let l = match loaded.take() {
            Some(mut l) => {
                l.executor = ex;
                l
            }
            None => Loaded {
                machine: cfg.machine(crate::registry::MACHINES)?,
                face: desc.face.clone(),
                desc: None,
                protocol: woven.protocol.clone(),
                report: woven.report.clone(),
                executor: ex,
                prepare_s: weave_s,
                build_s,
                from_checkpoint: false,
                cached: false,
                max_steps,
            },
        };
        let r = run_program(&l, &image, max_steps, false, false, "", isa_api::front::HostIo::default())?;
        let trace: Vec<u32> = r.out.trace.prompt.iter().chain(&r.out.trace.generated).copied().collect();
        match &first_trace {
            None => first_trace = Some((kind, trace)),
            Some((k0, t0)) => {
                if let Some(p) = t0.iter().zip(&trace).position(|(a, b)| a != b).or((t0.len() != trace.len()).then(|| t0.len().min(trace.len()))) {
                    eprintln!("error: the {kind} executor's trace differs from the {k0} executor's at position {p} ({} vs {} tokens)", trace.len(), t0.len());
                    return Ok(std::process::ExitCode::from(crate::DISAGREES));
                }
            }
        }
        rows.push(Row { kind, build_s, build_rss, tokens: r.tokens(), instructions: r.instructions, secs: r.secs, counters: r.counters });
        loaded = Some(l);
    }
    let base = rows[0].tokens as f64 / rows[0].secs;
    let rep = &woven.report;
    if a.json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "executor": r.kind.name(),
                    "build_s": r.build_s,
                    "build_rss_bytes": r.build_rss,
                    "tokens": r.tokens,
                    "instructions": r.instructions,
                    "decode_s": r.secs,
                    "tokens_per_s": r.tokens as f64 / r.secs,
                    "instructions_per_s": r.instructions as f64 / r.secs,
                    "ratio": r.tokens as f64 / r.secs / base,
                    "counters": r.counters.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
                })
            })
            .collect();
        let out = serde_json::json!({ "machine": rep.machine, "about": l_about(&cfg)?, "program": program.name, "weave_s": weave_s, "parameters": rep.parameters, "traces_equal": true, "executors": v, "peak_rss_bytes": crate::bench::proc_status_bytes("VmHWM:") });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(std::process::ExitCode::SUCCESS);
    }
    println!(
        "{} ({}), program {}: woven in {weave_s:.1} s, {:.3} G parameters; every trace equal to the {} executor's ({} tokens)",
        rep.machine,
        l_about(&cfg)?,
        program.name,
        rep.parameters as f64 / 1e9,
        rows[0].kind,
        rows[0].tokens
    );
    println!("{:<12} {:>9} {:>12} {:>10} {:>12} {:>14} {:>8}", "executor", "build s", "build MB", "decode s", "tokens/s", "instructions/s", "ratio");
    for r in &rows {
        let tps = r.tokens as f64 / r.secs;
        println!(
            "{:<12} {:>9.2} {:>12.0} {:>10.2} {:>12.0} {:>14.1} {:>7.1}x",
            r.kind.name(),
            r.build_s,
            r.build_rss as f64 / 1e6,
            r.secs,
            tps,
            r.instructions as f64 / r.secs,
            tps / base
        );
    }
    Ok(std::process::ExitCode::SUCCESS)
}

fn l_about(cfg: &weaver::config::Config) -> Result<String> {
    Ok(cfg.machine(crate::registry::MACHINES)?.about())
}
