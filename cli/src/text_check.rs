//! `loom text-check --base DIR --model DIR`: how much a grafted checkpoint changes its base's text.
//!
//! Both models run over one text (default: a built-in passage of about 2,500 tokens, tokenized with the base's
//! `tokenizer.json`, else the Qwen3.5 tokenizer of `../shared/tokenizers/qwen3.5`) on one executor, one token at
//! a time, and their next-token logits over the base's vocabulary are compared at every position:
//!
//! - `routed`: the grafted model as loom's driver runs text (the base's layers only, `backends::graft`);
//! - `plain`: every layer on every token, as a `generate` that does not route would run it (`--no-plain` skips
//!   it), with the probability the grafted model's extra (trace) tokens would take were they not masked. On a
//!   dense executor the whole grafted model is held in f32; where that would not fit in the memory available
//!   (a widened graft of a full base, say) the plain run is skipped and the report says why (`plain_skipped`).
//!
//! Figures: positions, positions whose logits are bit-identical, max |delta logit|, mean and max
//! KL(base || grafted) (f64, over the base's vocabulary), greedy-token agreement, and for scale
//! `noise_floor_kl`: the KL of the base's own logits against the same logits rounded to bf16 (a lower bound of
//! a bf16 run's noise; `backends/tools/hf_text_check.py` measures a whole bf16 run in transformers).
//!
//! Exit status 1 when the routed text is not the base's: not bit-identical at every position, or for a graft
//! widened by `loom graft --widen` (whose RMSNorms average over a wider residual) a greedy token that differs
//! or a KL of [`WIDENED_KL_BOUND`] or more.

use anyhow::{bail, Context, Result};
use backends::graft::{GraftManifest, Route};
use backends::ExecutorKind;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The base checkpoint.
    #[arg(long)]
    pub base: PathBuf,
    /// The grafted checkpoint (written by `loom graft` from that base).
    #[arg(long)]
    pub model: PathBuf,
    /// A text file to run (default: the built-in passage).
    #[arg(long)]
    pub text: Option<PathBuf>,
    /// Only the first N tokens of the text.
    #[arg(long)]
    pub positions: Option<usize>,
    /// Executor for both models. The dense ones (flex, ndarray, wgpu) run the text in blocks of 128 tokens,
    /// much faster on a dense base.
    #[arg(long, default_value = "flex", value_parser = crate::executor_parser())]
    pub executor: ExecutorKind,
    /// Skip the plain (unrouted) run.
    #[arg(long)]
    pub no_plain: bool,
    /// No progress lines on stderr.
    #[arg(long)]
    pub no_progress: bool,
    /// Print the figures as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Also write the text's token ids (a JSON list) to this file: what `backends/tools/hf_text_check.py
    /// --tokens` takes, to measure the same positions in transformers.
    #[arg(long, value_name = "FILE")]
    pub tokens_out: Option<PathBuf>,
}

/// The comparison of one run of the grafted model with the base.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Figures {
    pub positions: usize,
    pub bit_identical: usize,
    pub max_abs_logit_diff: f64,
    pub kl_mean: f64,
    pub kl_max: f64,
    /// Fraction of positions whose greedy token (first maximum over the base's vocabulary) is the base's.
    pub argmax_agreement: f64,
    /// Probability of the grafted model's extra tokens (ids from the base's vocabulary size up) in a softmax
    /// over all its logits, mean and max over positions (what masking them removes); `None` for a run whose
    /// vocabulary is the base's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_token_mass_mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_token_mass_max: Option<f64>,
    pub seconds: f64,
}

/// Everything `text-check` prints with `--json`: the routed figures at the top level, the plain run and the
/// noise floor beside them.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    #[serde(flatten)]
    pub routed: Figures,
    pub noise_floor_kl: f64,
    pub noise_floor: &'static str,
    pub route: &'static str,
    pub plain: Option<Figures>,
    /// Why the plain run was not made, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plain_skipped: Option<String>,
    pub executor: String,
    pub base_seconds: f64,
    pub tokens_source: String,
}

/// log-softmax of `x` in f64.
fn log_softmax(x: &[f32]) -> Vec<f64> {
    let m = x.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v as f64));
    let s: f64 = x.iter().map(|&v| (v as f64 - m).exp()).sum();
    let l = m + s.ln();
    x.iter().map(|&v| v as f64 - l).collect()
}

/// KL(p || q) of two log-probability vectors, f64.
fn kl(lp: &[f64], lq: &[f64]) -> f64 {
    lp.iter().zip(lq).map(|(a, b)| if a.is_finite() { a.exp() * (a - b) } else { 0.0 }).sum::<f64>().max(0.0)
}

/// The first maximum's index (as `torch.argmax`).
fn argmax(x: &[f32]) -> usize {
    backends::cpu::argmax(x) as usize
}

/// Accumulates [`Figures`] position by position.
struct Compare {
    f: Figures,
    kl_sum: f64,
    agree: usize,
    mass_sum: f64,
    mass_max: f64,
    with_mass: bool,
}

impl Compare {
    fn new(with_mass: bool) -> Self {
        Self { f: Figures::default(), kl_sum: 0.0, agree: 0, mass_sum: 0.0, mass_max: 0.0, with_mass }
    }
    /// Compare one position: `base` logits `[V]`, `grafted` logits `[V']` with `V' >= V`.
    fn add(&mut self, base: &[f32], grafted: &[f32]) {
        let v = base.len();
        let g = &grafted[..v];
        self.f.positions += 1;
        if base.iter().zip(g).all(|(a, b)| a.to_bits() == b.to_bits()) {
            self.f.bit_identical += 1;
        }
        let d = base.iter().zip(g).map(|(a, b)| (*a as f64 - *b as f64).abs()).fold(0.0, f64::max);
        self.f.max_abs_logit_diff = self.f.max_abs_logit_diff.max(d);
        let k = kl(&log_softmax(base), &log_softmax(g));
        self.kl_sum += k;
        self.f.kl_max = self.f.kl_max.max(k);
        if argmax(base) == argmax(g) {
            self.agree += 1;
        }
        if self.with_mass {
            let all = log_softmax(grafted);
            let mass: f64 = all[v..].iter().map(|l| l.exp()).sum();
            self.mass_sum += mass;
            self.mass_max = self.mass_max.max(mass);
        }
    }
    fn finish(mut self, seconds: f64) -> Figures {
        let n = self.f.positions.max(1) as f64;
        self.f.kl_mean = self.kl_sum / n;
        self.f.argmax_agreement = self.agree as f64 / n;
        if self.with_mass {
            self.f.trace_token_mass_mean = Some(self.mass_sum / n);
            self.f.trace_token_mass_max = Some(self.mass_max);
        }
        self.f.seconds = seconds;
        self.f
    }
}

/// The text's token ids: the base's tokenizer.json if it has one, else the Qwen3.5 tokenizer source.
fn tokens(base: &Path, text: &str) -> Result<(Vec<u32>, String)> {
    if base.join("tokenizer.json").is_file() {
        let t = crate::tokenizer::Tokenizer::from_model_dir(base)?;
        return Ok((t.encode(text), format!("{}", base.join("tokenizer.json").display())));
    }
    let src = crate::tokenizer::default_source_dir().context(
        "the base has no tokenizer.json and the Qwen3.5 tokenizer source is missing (set LOOM_TOKENIZER_DIR, or keep ../shared/tokenizers/qwen3.5 beside the repository)",
    )?;
    let t = crate::tokenizer::Tokenizer::from_tiktoken(&src)?;
    Ok((t.encode(text), format!("{}", src.display())))
}

/// Tokens per block handed to [`backends::Session::step_block`] (dense executors run a block as one pass).
const BLOCK: usize = 128;

/// Run `ex` over `ids` in blocks of [`BLOCK`] tokens (one cache, so every position sees the whole prefix),
/// handing each position's logits to `f`.
fn run_over(ex: &dyn backends::Executor, ids: &[u32], mut f: impl FnMut(usize, &[f32])) -> Result<f64> {
    let t0 = Instant::now();
    let v = ex.config().vocab_size;
    let mut s = ex.session();
    for (b, block) in ids.chunks(BLOCK).enumerate() {
        let rows = s.step_block(block)?;
        if rows.len() != block.len() * v {
            bail!("the executor returned {} logits for {} tokens of vocabulary {v}", rows.len(), block.len());
        }
        for (j, row) in rows.chunks(v).enumerate() {
            f(b * BLOCK + j, row);
        }
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// The largest KL(base || grafted) at a routed text position that `text-check` accepts from a widened graft
/// (`loom graft --widen`), whose logits differ from the base's by float rounding only (its residual scale
/// `sqrt(hw / h)` is not exact in f32, and each RMSNorm sums over more dims). Measured (docs/results/graft.md,
/// 2026-12-04): a 1-layer 0.8B-shaped base, KL max below 1e-9; the full 24 layers of 0.8B's shape (hidden 1,024
/// -> 2,368), KL max 1.6e-7 and mean 5e-9 over 256 positions, greedy agreement 1. The bound is 600 times below
/// Qwenputer's text KL (6e-4) and about 800 times below that base's bf16 noise floor (8.3e-4). A graft in the
/// base's own shape must be bit-identical.
pub const WIDENED_KL_BOUND: f64 = 1e-6;

/// Why a plain run of `model` on `kind` cannot be made here, or `None` when it can: a dense executor holds
/// every parameter in f32, so one whose parameters (counted from the checkpoint's tensor shapes) take more
/// than the memory available (`MemAvailable` of `/proc/meminfo`, less 2 GiB for activations and logits) is
/// skipped. The sparse executors hold only nonzero blocks and are not checked.
fn plain_does_not_fit(kind: ExecutorKind, model: &Path) -> Result<Option<String>> {
    if !matches!(kind, ExecutorKind::Flex | ExecutorKind::Ndarray | ExecutorKind::Wgpu) {
        return Ok(None);
    }
    let ck = backends::checkpoint::Checkpoint::open(model)?;
    let mut params = 0u64;
    for name in ck.names() {
        params += ck.shape(name)?.iter().product::<usize>() as u64;
    }
    let need = params * 4;
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().find(|l| l.starts_with("MemAvailable:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()))
        .map(|kib| (kib * 1024).saturating_sub(2 << 30));
    Ok(match available {
        Some(av) if need > av => Some(format!(
            "on the {} executor the whole grafted model takes {:.1} GB of f32 ({} parameters), more than the {:.1} GB available; --executor sparse holds only its nonzeros",
            kind.name(),
            need as f64 / 1e9,
            params,
            av as f64 / 1e9
        )),
        _ => None,
    })
}

pub fn run(a: Args) -> Result<std::process::ExitCode> {
    let kind = a.executor;
    let g = GraftManifest::load(&a.model)?
        .with_context(|| format!("{} has no graft.json: not a grafted checkpoint (write one with `loom graft`)", a.model.display()))?;
    let text = match &a.text {
        Some(p) => std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
        None => crate::tokenizer::DEFAULT_PASSAGE.to_string(),
    };
    let (mut ids, tokens_source) = tokens(&a.base, &text)?;
    if let Some(n) = a.positions {
        ids.truncate(n);
    }
    if ids.is_empty() {
        bail!("the text has no tokens");
    }
    if let Some(p) = &a.tokens_out {
        std::fs::write(p, serde_json::to_string(&ids)?).with_context(|| format!("writing {}", p.display()))?;
    }
    let base = backends::executor::open(kind, &a.base).with_context(|| format!("opening the base {}", a.base.display()))?;
    let v = base.config().vocab_size;
    if v != g.base_vocab {
        bail!("{} was grafted onto a base with vocabulary {}, but {} has {v}", a.model.display(), g.base_vocab, a.base.display());
    }
    if let Some(bad) = ids.iter().find(|t| **t as usize >= v) {
        bail!("token id {bad} is outside the base's vocabulary ({v})");
    }
    let progress = !a.json && !a.no_progress;
    if progress {
        eprintln!("{} positions; running the base {} on {kind}", ids.len(), a.base.display());
    }
    let mut base_logits: Vec<f32> = Vec::with_capacity(ids.len() * v);
    let mut floor_sum = 0.0;
    let base_seconds = run_over(base.as_ref(), &ids, |_, row| {
        let rounded: Vec<f32> = row.iter().map(|x| half::bf16::from_f32(*x).to_f32()).collect();
        floor_sum += kl(&log_softmax(row), &log_softmax(&rounded));
        base_logits.extend_from_slice(row);
    })?;
    drop(base);
    let noise_floor_kl = floor_sum / ids.len() as f64;

    if progress {
        eprintln!("running the grafted model's text route (base layers {}..{})", g.base_layers[0], g.base_layers[1]);
    }
    let routed_ex = backends::executor::open_route(kind, &a.model, Route::Text)?;
    let mut c = Compare::new(false);
    let secs = run_over(routed_ex.as_ref(), &ids, |i, row| c.add(&base_logits[i * v..(i + 1) * v], row))?;
    drop(routed_ex);
    let routed = c.finish(secs);

    let plain_skipped = if a.no_plain { Some("--no-plain".to_string()) } else { plain_does_not_fit(kind, &a.model)? };
    if let (Some(why), true) = (&plain_skipped, progress) {
        eprintln!("the plain run is skipped: {why}");
    }
    let plain = if plain_skipped.is_some() {
        None
    } else {
        if progress {
            eprintln!("running the grafted model plainly (all {} layers on every token)", g.base_layers[1]);
        }
        let ex = backends::executor::open(kind, &a.model)?;
        let mut c = Compare::new(true);
        let secs = run_over(ex.as_ref(), &ids, |i, row| c.add(&base_logits[i * v..(i + 1) * v], row))?;
        Some(c.finish(secs))
    };
    let report = Report {
        routed,
        noise_floor_kl,
        noise_floor: "the base's logits against the same logits rounded to bf16",
        route: "text positions run the base's layers only (loom's driver)",
        plain,
        plain_skipped,
        executor: kind.name().to_string(),
        base_seconds,
        tokens_source,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "routed (the driver: base layers only at text positions): {} positions, {} bit-identical, max |delta logit| {:.3e}, KL mean {:.3e} max {:.3e}, greedy agreement {:.4}",
            report.routed.positions,
            report.routed.bit_identical,
            report.routed.max_abs_logit_diff,
            report.routed.kl_mean,
            report.routed.kl_max,
            report.routed.argmax_agreement
        );
        if let Some(p) = &report.plain {
            println!(
                "plain (every layer on every token, unmasked): {} bit-identical, max |delta logit| {:.3e}, KL mean {:.3e} max {:.3e}, greedy agreement {:.4}, trace tokens' probability mean {:.3e} max {:.3e}",
                p.bit_identical,
                p.max_abs_logit_diff,
                p.kl_mean,
                p.kl_max,
                p.argmax_agreement,
                p.trace_token_mass_mean.unwrap_or(0.0),
                p.trace_token_mass_max.unwrap_or(0.0)
            );
        }
        println!("noise floor (logits rounded to bf16): KL mean {:.3e}; Qwenputer's text KL: 6e-4", report.noise_floor_kl);
    }
    let r = &report.routed;
    match &g.widened {
        // A widened graft's norms average over the wider residual: float rounding, not bit-identity.
        Some(_) if r.argmax_agreement < 1.0 || r.kl_max >= WIDENED_KL_BOUND => {
            eprintln!(
                "error: the widened graft's routed text is not the base's to float rounding: greedy agreement {}, KL max {:.3e} (bound {WIDENED_KL_BOUND:e})",
                r.argmax_agreement, r.kl_max
            );
            return Ok(std::process::ExitCode::from(crate::DISAGREES));
        }
        Some(_) => {}
        None if r.bit_identical != r.positions => {
            eprintln!("error: {} of {} positions differ from the base on the routed text", r.positions - r.bit_identical, r.positions);
            return Ok(std::process::ExitCode::from(crate::DISAGREES));
        }
        None => {}
    }
    Ok(std::process::ExitCode::SUCCESS)
}
