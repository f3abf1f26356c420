//! `loom generate`: greedy decoding with the burn model.

use anyhow::{Context, Result};
use backends::model::{BackendKind, Qwen35Model};
use backends::Checkpoint;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Checkpoint directory (config.json + model.safetensors or sharded safetensors).
    #[arg(long)]
    pub model: PathBuf,
    /// Prompt token ids, comma-separated (e.g. 1,2,3).
    #[arg(long)]
    pub prompt_ids: String,
    /// Number of tokens to generate.
    #[arg(long, default_value_t = 16)]
    pub max_new_tokens: usize,
    /// burn backend: flex (default), ndarray or wgpu.
    #[arg(long, default_value = "flex")]
    pub backend: String,
    /// Write the logits of the generated positions ([N, vocab], f32, tensor `logits`) as safetensors.
    #[arg(long)]
    pub logits_out: Option<PathBuf>,
    /// Prefill the prompt in one call (chunked) or one token at a time (stepwise).
    #[arg(long, default_value = "chunked", value_parser = ["chunked", "stepwise"])]
    pub prefill: String,
}

/// Parse `1,2,3` into token ids.
pub fn parse_ids(s: &str) -> Result<Vec<u32>> {
    let ids: Vec<u32> = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| p.trim().parse::<u32>().with_context(|| format!("--prompt-ids: {p:?} is not a token id")))
        .collect::<Result<_>>()?;
    anyhow::ensure!(!ids.is_empty(), "--prompt-ids is empty");
    Ok(ids)
}

pub fn run(a: Args) -> Result<()> {
    let ids = parse_ids(&a.prompt_ids)?;
    let backend = BackendKind::parse(&a.backend)?;
    let device = backend.device()?;
    let ck = Checkpoint::open(&a.model)?;
    let model = Qwen35Model::load(&ck, &device)?;
    drop(ck);
    let (generated, logits) = model.generate(&ids, a.max_new_tokens, a.prefill == "stepwise")?;
    if let Some(path) = &a.logits_out {
        write_logits(path, &logits, model.config().vocab_size)?;
    }
    println!("{}", serde_json::json!({ "generated": generated }));
    Ok(())
}

/// Save `rows` (N rows of `vocab` f32) as safetensors with one tensor `logits` `[N, vocab]`.
pub fn write_logits(path: &std::path::Path, rows: &[Vec<f32>], vocab: usize) -> Result<()> {
    let mut flat = Vec::with_capacity(rows.len() * vocab);
    for r in rows {
        flat.extend_from_slice(r);
    }
    let t = backends::HostTensor::new(vec![rows.len(), vocab], flat);
    backends::checkpoint::write_tensors(path, &[("logits", &t)])
        .with_context(|| format!("writing {}", path.display()))
}
