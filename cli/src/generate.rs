//! `loom generate`: greedy decoding with the burn model.

use anyhow::{Context, Result};
use backends::ExecutorKind;
use std::path::PathBuf;

/// The flags `generate` and `bench-generate` share: the checkpoint, how many tokens, the executor.
#[derive(clap::Args)]
pub struct DecodeArgs {
    /// Checkpoint directory (config.json + model.safetensors or sharded safetensors).
    #[arg(long)]
    pub model: PathBuf,
    /// Number of tokens to generate (`bench-generate` times them one by one after the prefill).
    #[arg(long, default_value_t = 16)]
    pub max_new_tokens: usize,
    /// Executor (the dense burn ones, flex, ndarray and wgpu, or the sparse ones).
    #[arg(long, alias = "backend", default_value = "flex", value_parser = crate::executor_parser())]
    pub executor: ExecutorKind,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub decode: DecodeArgs,
    /// Prompt token ids, comma-separated (e.g. 1,2,3).
    #[arg(long)]
    pub prompt_ids: String,
    /// Write the logits of the generated positions ([N, vocab], f32, tensor `logits`) as safetensors.
    #[arg(long)]
    pub logits_out: Option<PathBuf>,
    /// Prefill the prompt in one call (chunked) or one token at a time (stepwise).
    #[arg(long, default_value = "chunked", value_parser = ["chunked", "stepwise"])]
    pub prefill: String,
    /// A grafted checkpoint (with `graft.json`): `text` (default) runs the base's layers on text ids, `machine`
    /// the machine's layers on its own trace ids, `plain` every layer on every token (as a `generate` that
    /// does not route would). Ignored for other checkpoints.
    #[arg(long, default_value = "text", value_parser = ["text", "machine", "plain"])]
    pub route: String,
}

/// Open `dir` on `kind`: for a grafted checkpoint the route named (`text`, `machine` or `plain`), else the
/// whole model.
pub fn open_routed(kind: ExecutorKind, dir: &std::path::Path, route: &str) -> Result<Box<dyn backends::Executor>> {
    use backends::graft::{GraftManifest, Route};
    let grafted = GraftManifest::load(dir)?.is_some();
    Ok(match (grafted, route) {
        (true, "text") => backends::executor::open_route(kind, dir, Route::Text)?,
        (true, "machine") => backends::executor::open_route(kind, dir, Route::Machine)?,
        _ => backends::executor::open(kind, dir)?,
    })
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
    let ex = open_routed(a.decode.executor, &a.decode.model, &a.route)?;
    let vocab = ex.config().vocab_size;
    if let Some(bad) = ids.iter().find(|t| **t as usize >= vocab) {
        anyhow::bail!("--prompt-ids: token id {bad} is outside the vocabulary (size {vocab})");
    }
    let (generated, logits) = generate(ex.as_ref(), &ids, a.decode.max_new_tokens, a.prefill == "stepwise")?;
    if let Some(path) = &a.logits_out {
        write_logits(path, &logits, vocab)?;
    }
    println!("{}", serde_json::json!({ "generated": generated }));
    Ok(())
}

/// Greedy decoding on any executor: prefill `prompt` (in one block, or token by token when `stepwise`), then
/// `new_tokens` tokens; returns them and the logits each was chosen from.
pub fn generate(ex: &dyn backends::Executor, prompt: &[u32], new_tokens: usize, stepwise: bool) -> Result<(Vec<u32>, Vec<Vec<f32>>)> {
    let mut s = ex.session();
    let mut row = if stepwise {
        let mut last = None;
        for &t in prompt {
            last = Some(s.step(t)?);
        }
        last.context("empty prompt")?
    } else {
        s.prefill(prompt)?
    };
    let (mut out, mut logits) = (Vec::with_capacity(new_tokens), Vec::with_capacity(new_tokens));
    for i in 0..new_tokens {
        let next = backends::cpu::argmax(&row);
        out.push(next);
        logits.push(std::mem::take(&mut row));
        if i + 1 < new_tokens {
            row = s.step(next)?;
        }
    }
    Ok((out, logits))
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
