//! `loom weave CONFIG --out DIR`: compile a machine into a Qwen3.5 checkpoint directory (`config.json`,
//! `model.safetensors`, `machine.json` = the trace protocol and the report) and print the report.
//!
//! CONFIG is a weaver machine config (`configs/acc8.toml`: `machine = "acc8"`, a description file or a
//! plugin) or an RV32IM config (`configs/rv32im.toml`: a `[machine]` table with `isa = "rv32im"`). Woven
//! checkpoints always include one inert full-attention layer, so transformers' `Qwen3_5ForCausalLM` runs them.

use anyhow::Context;
use std::path::PathBuf;
use weaver::export::{save, MachineConfig};

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

/// Does this TOML text look like an RV32IM config (a `[machine]` table; weaver configs say `machine = "..."`)?
fn is_rv32_config(text: &str) -> bool {
    text.lines().any(|l| l.split('#').next().unwrap_or("").trim() == "[machine]")
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&a.config).with_context(|| format!("reading {}", a.config.display()))?;
    let w = if is_rv32_config(&text) {
        let cfg = isa_rv32im::circuit_config::Rv32Config::parse(&text).with_context(|| format!("{}", a.config.display()))?;
        let desc = crate::rv32::machine(&cfg, &cfg.options(), &a.config)?;
        weaver::weave(&desc, &crate::rv32::weave_options(&cfg, &desc, true)?)?
    } else {
        let cfg = MachineConfig::from_file(&a.config)?;
        let base = a.config.parent().map(PathBuf::from).unwrap_or_default();
        let desc = cfg.machine(&base)?;
        cfg.weave(&desc)?
    };
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
