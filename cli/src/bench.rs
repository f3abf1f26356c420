//! `loom bench-generate`: load time, prefill time, decode tokens/s and peak memory (VmHWM) of a checkpoint.
//! A measurement, not a test: figures vary with the machine and its load.

use crate::generate::{DecodeArgs, parse_ids};
use anyhow::Result;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub decode: DecodeArgs,
    /// Prompt token ids, comma-separated.
    #[arg(long, default_value = "1,2,3,4,5,6,7,8")]
    pub prompt_ids: String,
    /// Print the figures as JSON (always so: the verb's only format; accepted so that a script may pass it to
    /// every verb that prints figures).
    #[arg(long)]
    pub json: bool,
}

/// A `kB` field of /proc/self/status (`VmHWM`, `VmRSS`), in bytes; `None` where /proc is absent.
pub fn proc_status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

pub fn run(a: Args) -> Result<()> {
    let ids = parse_ids(&a.prompt_ids)?;
    anyhow::ensure!(a.decode.max_new_tokens > 0, "--max-new-tokens must be positive");
    let t0 = Instant::now();
    let ex = backends::executor::open(a.decode.executor, &a.decode.model)?;
    let params = ex.config().parameter_count();
    let load_s = t0.elapsed().as_secs_f64();

    let mut session = ex.session();
    let t1 = Instant::now();
    let mut next = backends::cpu::argmax(&session.prefill(&ids)?);
    let prefill_s = t1.elapsed().as_secs_f64();

    let t2 = Instant::now();
    let mut generated = vec![next];
    for _ in 1..a.decode.max_new_tokens {
        next = session.step_argmax(next)?;
        generated.push(next);
    }
    let decode_s = t2.elapsed().as_secs_f64();
    let decoded = a.decode.max_new_tokens - 1;
    let report = serde_json::json!({
        "model": a.decode.model.display().to_string(),
        "executor": a.decode.executor.name(),
        "parameters": params,
        "prompt_tokens": ids.len(),
        "load_s": load_s,
        "prefill_s": prefill_s,
        "decode_tokens": decoded,
        "decode_s": decode_s,
        "decode_tokens_per_s": if decode_s > 0.0 { decoded as f64 / decode_s } else { 0.0 },
        "peak_rss_bytes": proc_status_bytes("VmHWM:"),
        "generated": generated,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
