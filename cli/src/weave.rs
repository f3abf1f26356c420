//! `loom weave CONFIG --out DIR`: compile a machine into a Qwen3.5 checkpoint directory (`config.json`,
//! `model.safetensors`, `machine.json` = the trace protocol and the report) and print the report.

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

pub fn run(a: Args) -> anyhow::Result<()> {
    let cfg = MachineConfig::from_file(&a.config)?;
    let base = a.config.parent().map(PathBuf::from).unwrap_or_default();
    let desc = cfg.machine(&base)?;
    let w = cfg.weave(&desc)?;
    let t0 = std::time::Instant::now();
    save(&w, &a.out).with_context(|| format!("saving to {}", a.out.display()))?;
    println!("{}", w.report.render());
    println!("saved {} in {:.2} s", a.out.display(), t0.elapsed().as_secs_f64());
    if let Some(d) = &a.dump {
        std::fs::write(d, weaver::report::allocation_dump(&w.netlist, &w.allocation)).with_context(|| format!("writing {}", d.display()))?;
    }
    Ok(())
}
