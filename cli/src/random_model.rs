//! `loom random-model`: write a deterministic random Qwen3.5 checkpoint.

use anyhow::{Context, Result};
use backends::random::{describe, save_random_checkpoint, Preset};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Shape preset: `tiny` or `qwen3.5-9b` (transformers' Qwen3_5TextConfig defaults).
    #[arg(long, default_value = "tiny")]
    pub preset: String,
    /// Override the number of decoder layers (one full-attention layer in four, as transformers' default).
    #[arg(long)]
    pub layers: Option<usize>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output directory (created; an existing one must hold only a previous checkpoint).
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(a: Args) -> Result<()> {
    let preset = Preset::parse(&a.preset)
        .with_context(|| format!("unknown preset {:?}: expected tiny or qwen3.5-9b", a.preset))?;
    let cfg = preset.config(a.layers);
    cfg.validate().map_err(|m| anyhow::anyhow!("bad preset shape: {m}"))?;
    eprintln!("{}: {}", a.out.display(), describe(&cfg));
    save_random_checkpoint(&a.out, &cfg, a.seed)?;
    Ok(())
}
