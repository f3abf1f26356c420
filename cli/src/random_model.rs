//! `loom random-model`: write a deterministic random Qwen3.5 checkpoint, in the text layout
//! (`Qwen3_5ForCausalLM.save_pretrained`'s) or in the layout of the released `Qwen/Qwen3.5-*` repositories.

use anyhow::{Context, Result};
use backends::random::{describe, save_random_checkpoint, save_random_released, Layout, Preset, PRESET_NAMES};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Shape preset: `tiny`, `qwen3.5-0.8b`, `qwen3.5-2b`, `qwen3.5-4b` (the released sizes' text shapes) or
    /// `qwen3.5-9b` (transformers' Qwen3_5TextConfig defaults).
    #[arg(long, default_value = "tiny")]
    pub preset: String,
    /// Override the number of decoder layers (one full-attention layer in four, as transformers' default).
    #[arg(long)]
    pub layers: Option<usize>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// File layout: `text` (a text config.json and one f32 model.safetensors) or `released` (what a Hugging
    /// Face download of Qwen/Qwen3.5-* looks like: Qwen3_5ForConditionalGeneration config, bf16 shards under
    /// model.language_model.* with small model.visual.* and mtp.* tensors, shard index, generation config and
    /// tokenizer files). Both layouts of one preset and seed hold the same model up to bf16 rounding.
    #[arg(long, default_value = "text", value_parser = ["text", "released"])]
    pub layout: String,
    /// Largest shard of the released layout, in MB (10^6 bytes) of tensor data.
    #[arg(long, default_value_t = 2000)]
    pub shard_size: usize,
    /// Output directory (created; an existing one must hold only a previous checkpoint).
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(a: Args) -> Result<()> {
    let preset = Preset::parse(&a.preset)
        .with_context(|| format!("unknown preset {:?}: expected one of {}", a.preset, PRESET_NAMES.join(", ")))?;
    let layout = Layout::parse(&a.layout).with_context(|| format!("unknown layout {:?}: expected text or released", a.layout))?;
    let cfg = preset.config(a.layers);
    cfg.validate().map_err(|m| anyhow::anyhow!("bad preset shape: {m}"))?;
    eprintln!("{}: {}", a.out.display(), describe(&cfg));
    match layout {
        Layout::Text => save_random_checkpoint(&a.out, &cfg, a.seed)?,
        Layout::Released => {
            anyhow::ensure!(a.shard_size > 0, "--shard-size must be positive (MB)");
            // Find the tokenizer before writing gigabytes of weights.
            let tok_src = tokenizer_source()?;
            let shards = save_random_released(&a.out, &cfg, a.seed, a.shard_size * 1_000_000)?;
            write_tokenizer(&tok_src, &a.out)?;
            eprintln!("{}: {} shard(s), released layout", a.out.display(), shards.len());
        }
    }
    Ok(())
}

/// The directory of the Qwen3.5 tokenizer sources the released layout's tokenizer files are made from.
fn tokenizer_source() -> Result<PathBuf> {
    crate::tokenizer::default_source_dir().context(NO_TOKENIZER)
}

/// Write `tokenizer.json` and `tokenizer_config.json` into `out` from the sources in `src`.
fn write_tokenizer(src: &std::path::Path, out: &std::path::Path) -> Result<()> {
    crate::tokenizer::write_hf_tokenizer_files(src, out)
        .with_context(|| format!("writing the tokenizer files into {} from {}", out.display(), src.display()))
}

const NO_TOKENIZER: &str = "the released layout needs the Qwen3.5 tokenizer sources (qwen3.5.tiktoken, specials.json): \
     set LOOM_TOKENIZER_DIR to their directory, or put them in ../shared/tokenizers/qwen3.5";
