//! `loom weave CONFIG --out DIR`: compile a machine into a Qwen3.5 checkpoint directory (`config.json`,
//! `model.safetensors`, `machine.json` = the machine's face, the trace protocol and the report) and print the
//! report.
//!
//! CONFIG is any machine config (`configs/*.toml`, see `weaver::config`). Exported checkpoints include one
//! inert full-attention layer unless `[geometry] hf_compatible = false`, so transformers' `Qwen3_5ForCausalLM`
//! runs them.

use anyhow::Context;
use std::path::PathBuf;
use weaver::export::save;

#[derive(clap::Args)]
pub struct Args {
    /// Machine config (TOML), e.g. configs/acc8.toml.
    pub config: PathBuf,
    /// Output checkpoint directory (created; a previous woven checkpoint there is replaced).
    #[arg(long)]
    pub out: PathBuf,
    /// Also write the allocation dump (slot -> name, units -> gate, head -> memory) to this file.
    #[arg(long)]
    pub dump: Option<PathBuf>,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let (cfg, machine) = crate::run::open_config(&a.config, &Default::default())?;
    // Refuse a destination that is not ours before the (long) weave.
    weaver::export::check_destination(&a.out)?;
    let desc = machine.describe()?;
    let attention_layer = cfg.geometry.as_ref().and_then(|g| g.hf_compatible).unwrap_or(true);
    let w = weaver::weave(&desc, &weaver::WeaveOptions { fit: cfg.geometry.clone(), attention_layer })?;
    eprintln!("writing {} parameters ({:.1} GB of f32) to {}", w.report.parameters, w.report.parameters as f64 * 4e-9, a.out.display());
    let t0 = std::time::Instant::now();
    save(&w, &a.out).with_context(|| format!("saving to {}", a.out.display()))?;
    println!("{}", w.report.render());
    println!("saved {} in {:.2} s", a.out.display(), t0.elapsed().as_secs_f64());
    if let Some(d) = &a.dump {
        std::fs::write(d, weaver::report::allocation_dump(&w.netlist, &w.allocation)).with_context(|| format!("writing {}", d.display()))?;
    }
    Ok(())
}
