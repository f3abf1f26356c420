//! The graft pass: a woven machine placed in front of a base Qwen3.5 language model, in one checkpoint.
//!
//! The machine is woven into the base's own layer shape ([`base_fit`]: hidden size, MLP width, DeltaNet heads
//! and head dims, the base's full-attention interval; unused width is zero), so one config serves every layer.
//! [`write`] then writes a checkpoint whose layers are the machine's followed by the base's, whose vocabulary
//! is the base's followed by the machine's trace tokens, and whose `graft.json` (`backends::graft`) says which
//! is which. The layout, the routing that keeps the base's text bit-identical and the machine's trace exact,
//! and the readout through the base's final norm are described in `backends::graft`.
//!
//! Everything is checked before anything is written: a base of another architecture, a malformed or partial
//! base, a machine that does not fit the base's shape are errors naming the problem; the base directory is
//! only read.

use crate::error::WeaveError;
use crate::export::MANIFEST_FILE;
use crate::geometry::GeometryConfig;
use crate::manifest::Manifest;
use backends::names::{LayerTensor, EMBED_TOKENS, FINAL_NORM, LAYERS_PREFIX, LM_HEAD};
use backends::checkpoint::{dtype_width, write_tensors_typed, TensorBytes};
use backends::graft::{BaseInfo, GraftManifest, Widening, GRAFT_FILE, GRAFT_FORMAT, GRAFT_VERSION};
use backends::{Checkpoint, LayerType, Qwen35Config, WeightMap};
use safetensors::Dtype;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// Tokenizer and generation files of a base that a grafted checkpoint keeps (copied when present).
pub const BASE_FILES: &[&str] = &[
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "merges.txt",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template.jinja",
    "generation_config.json",
];

/// What a graft added, in the base's layer shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraftReport {
    pub machine: String,
    pub base: BaseInfo,
    /// Decoder layers added in front of the base's.
    pub machine_layers: usize,
    /// Full-attention layers among them (inert: all-zero weights, as the base's layer pattern places them).
    pub machine_attention_layers: usize,
    /// Parameters of the added layers at the base's shape (dense: zeros counted).
    pub layer_parameters: usize,
    /// Nonzero weights of the added layers.
    pub layer_nonzeros: usize,
    /// Rows added to the vocabulary (the machine's trace tokens: once with an untied lm_head, twice, input and
    /// output, with a tied one).
    pub vocab_rows: usize,
    /// Parameters of the added embedding and lm_head rows.
    pub vocab_parameters: usize,
    /// Nonzero weights of those rows.
    pub vocab_nonzeros: usize,
    /// The wider layer shape of `loom graft --widen` (absent: the base's own), and the parameters the
    /// widening adds to the base's layers, embedding and lm_head (all zero).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub widened: Option<Widening>,
    #[serde(default)]
    pub widening_parameters: usize,
    /// All parameters added (layers, vocabulary rows and widening), and their nonzeros.
    pub added_parameters: usize,
    pub added_nonzeros: usize,
    /// The grafted model's text-model parameters.
    pub total_parameters: usize,
    /// Bytes of `model.safetensors` (its logical length; zero pages are holes of a sparse file).
    pub file_bytes: u64,
    pub seconds: f64,
}

impl GraftReport {
    /// A short human-readable summary.
    pub fn render(&self) -> String {
        format!(
            "grafted {} onto a {}-layer base (hidden {}, vocabulary {}): {} layers added in front ({} inert full attention), \
             {} parameters added ({:.3} G: layers {:.3} G, vocabulary rows {} = {:.3} G), {} of them nonzero; \
             the grafted model has {} layers and {:.3} G parameters; model.safetensors {:.2} GB; {:.1} s",
            self.machine,
            self.base.num_hidden_layers,
            self.base.hidden_size,
            self.base.vocab_size,
            self.machine_layers,
            self.machine_attention_layers,
            self.added_parameters,
            self.added_parameters as f64 * 1e-9,
            self.layer_parameters as f64 * 1e-9,
            self.vocab_rows,
            self.vocab_parameters as f64 * 1e-9,
            self.added_nonzeros,
            self.machine_layers + self.base.num_hidden_layers,
            self.total_parameters as f64 * 1e-9,
            self.file_bytes as f64 * 1e-9,
            self.seconds
        ) + &self.widened.as_ref().map_or(String::new(), |w| {
            format!(
                "; widened from the base's hidden {} to {}, intermediate to {}, DeltaNet heads to {} key / {} value ({:.3} G zero parameters)",
                self.base.hidden_size,
                w.hidden_size,
                w.intermediate_size,
                w.linear_num_key_heads,
                w.linear_num_value_heads,
                self.widening_parameters as f64 * 1e-9
            )
        })
    }
}

fn other(msg: String) -> WeaveError {
    WeaveError::Other(msg)
}

/// The `model_type` of a base's `config.json`, refusing what is not Qwen3.5: `qwen3_5` (the released
/// multimodal layout, whose `text_config` must be `qwen3_5_text`) or `qwen3_5_text`.
pub fn base_model_type(dir: &Path) -> Result<String, WeaveError> {
    let path = dir.join("config.json");
    let text = std::fs::read_to_string(&path).map_err(|e| other(format!("base {}: cannot read {}: {e}", dir.display(), path.display())))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| other(format!("base {}: {} is not valid JSON: {e}", dir.display(), path.display())))?;
    let mt = v.get("model_type").and_then(|m| m.as_str()).unwrap_or("").to_string();
    let text_mt = v.get("text_config").and_then(|t| t.get("model_type")).and_then(|m| m.as_str());
    let ok = match mt.as_str() {
        "qwen3_5" => text_mt.is_none_or(|t| t == "qwen3_5_text"),
        "qwen3_5_text" => true,
        _ => false,
    };
    if !ok {
        let shown = if mt.is_empty() { "no model_type".to_string() } else { format!("model_type {mt:?}") };
        return Err(other(format!(
            "base {}: {} has {shown}{}; loom grafts onto Qwen3.5 checkpoints (model_type \"qwen3_5\" or \"qwen3_5_text\")",
            dir.display(),
            path.display(),
            text_mt.map(|t| format!(" (text_config: {t:?})")).unwrap_or_default()
        )));
    }
    Ok(mt)
}

/// Open a base checkpoint for grafting: a Qwen3.5 config ([`base_model_type`]) and every tensor its config
/// requires, present with its shape and a supported dtype (a missing shard or tensor is named).
pub fn open_base(dir: &Path) -> Result<Checkpoint, WeaveError> {
    base_model_type(dir)?;
    Checkpoint::open(dir).map_err(|e| other(format!("base {}: {e}", dir.display())))
}

/// The full-attention interval of a layer pattern: `k` when layer `i` is full attention exactly when
/// `(i + 1) % k == 0` (transformers' `full_attention_interval`), `None` for another pattern.
pub fn attention_interval(types: &[LayerType]) -> Option<usize> {
    let first = types.iter().position(|t| *t == LayerType::FullAttention)?;
    let k = first + 1;
    let regular = types.iter().enumerate().all(|(i, t)| (*t == LayerType::FullAttention) == ((i + 1) % k == 0));
    regular.then_some(k)
}

/// The geometry a machine is woven into to be grafted onto `base`: the base's widths, head counts and dims,
/// and its full-attention interval (4 for the released Qwen3.5 models; layers as many as the machine needs).
pub fn base_fit(base: &Qwen35Config) -> GeometryConfig {
    GeometryConfig {
        layers: None,
        hidden: Some(base.hidden_size),
        intermediate: Some(base.intermediate_size),
        key_heads: Some(base.linear_num_key_heads),
        value_heads: Some(base.linear_num_value_heads),
        dk: Some(base.linear_key_head_dim),
        dv: Some(base.linear_value_head_dim),
        vocab: None,
        attention_interval: Some(attention_interval(&base.layer_types).unwrap_or(4)),
        hf_compatible: Some(true),
        sink: Some(true),
    }
}

/// The geometry of a widened graft (`loom graft --widen`): the base's head dims, conv kernel, full-attention
/// interval and key/value head ratio, with `head_factor` times its DeltaNet heads, and the hidden and MLP
/// widths the machine needs (the caller raises them to at least the base's; see [`widen`]).
pub fn widened_fit(base: &Qwen35Config, head_factor: usize) -> GeometryConfig {
    GeometryConfig {
        hidden: None,
        intermediate: None,
        key_heads: Some(base.linear_num_key_heads * head_factor),
        value_heads: Some(base.linear_num_value_heads * head_factor),
        ..base_fit(base)
    }
}

/// The narrowest widening of `base`'s layer shape that holds `desc`: the fewest DeltaNet heads (the base's
/// times 1, 2, 4 or 8, keeping its key/value ratio), then the hidden and MLP widths the machine needs at
/// that head count, each at least the base's and rounded up to a multiple of 64. Cheap
/// (plans, weaves nothing). Errors: the last overflow when even 8 times the heads do not hold the machine.
pub fn widen(desc: &isa_api::MachineDesc, base: &Qwen35Config) -> Result<GeometryConfig, WeaveError> {
    let mut last = None;
    for factor in [1, 2, 4, 8] {
        let mut fit = widened_fit(base, factor);
        match crate::plan(desc, &crate::WeaveOptions { fit: Some(fit.clone()), attention_layer: true }) {
            Ok((_, _, _, alloc)) => {
                fit.hidden = Some(alloc.geometry.hidden.max(base.hidden_size).next_multiple_of(64));
                fit.intermediate = Some(alloc.geometry.intermediate.max(base.intermediate_size).next_multiple_of(64));
                return Ok(fit);
            }
            Err(e @ WeaveError::Overflow(_)) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.expect("four tries"))
}

/// Can a grafted checkpoint be written to `out`? It must not exist, be empty, or hold a previous graft (its
/// `graft.json`), and it must not be, or lie inside, the base directory. Cheap: callers check before weaving.
pub fn check_destination(base: &Path, out: &Path) -> Result<(), WeaveError> {
    let refuse = |msg: String| other(format!("refusing to write a grafted checkpoint to {}: {msg}", out.display()));
    if let (Ok(b), Ok(o)) = (std::fs::canonicalize(base), std::fs::canonicalize(out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")))) {
        let o = o.join(out.file_name().unwrap_or_default());
        if o.starts_with(&b) {
            return Err(refuse(format!("it is, or lies inside, the base directory {} (the base is never modified)", base.display())));
        }
    }
    if !out.exists() {
        return Ok(());
    }
    if !out.is_dir() {
        return Err(refuse("it is not a directory".into()));
    }
    let empty = std::fs::read_dir(out).map_err(|e| refuse(e.to_string()))?.next().is_none();
    if !empty && !out.join(GRAFT_FILE).exists() {
        return Err(refuse(format!("it is not empty and holds no {GRAFT_FILE} (not a grafted checkpoint)")));
    }
    Ok(())
}

/// The parts of a woven machine a graft needs (a `Woven`, or one loaded from the weave cache).
pub struct WovenMachine<'a> {
    pub config: &'a Qwen35Config,
    pub weights: &'a WeightMap,
    pub manifest: &'a Manifest,
}

/// Check a machine woven with [`base_fit`] (or [`widen`]) against the base: the same head dims, conv kernel
/// and norm epsilon; widths and head counts the base's, or wider with the base's key/value head ratio; and
/// full-attention layers that are all zero (they take the base's attention shape).
fn check_woven(base: &Qwen35Config, m: &WovenMachine) -> Result<(), WeaveError> {
    let c = m.config;
    let pairs = [
        ("linear_key_head_dim", c.linear_key_head_dim, base.linear_key_head_dim),
        ("linear_value_head_dim", c.linear_value_head_dim, base.linear_value_head_dim),
        ("linear_conv_kernel_dim", c.linear_conv_kernel_dim, base.linear_conv_kernel_dim),
    ];
    for (name, mine, theirs) in pairs {
        if mine != theirs {
            return Err(other(format!("the woven machine's {name} is {mine} but the base's is {theirs} (it must be woven with graft::base_fit)")));
        }
    }
    let wider = [
        ("hidden_size", c.hidden_size, base.hidden_size),
        ("intermediate_size", c.intermediate_size, base.intermediate_size),
        ("linear_num_key_heads", c.linear_num_key_heads, base.linear_num_key_heads),
        ("linear_num_value_heads", c.linear_num_value_heads, base.linear_num_value_heads),
    ];
    for (name, mine, theirs) in wider {
        if mine < theirs {
            return Err(other(format!("the woven machine's {name} is {mine}, narrower than the base's {theirs} (it must be woven with graft::base_fit)")));
        }
    }
    if c.linear_num_value_heads * base.linear_num_key_heads != base.linear_num_value_heads * c.linear_num_key_heads {
        return Err(other(format!(
            "the woven machine has {} key / {} value DeltaNet heads, not the base's ratio ({} / {})",
            c.linear_num_key_heads, c.linear_num_value_heads, base.linear_num_key_heads, base.linear_num_value_heads
        )));
    }
    if c.rms_norm_eps != base.rms_norm_eps {
        return Err(other(format!(
            "the base's rms_norm_eps is {} but the woven machine's exact norms are computed for {}",
            base.rms_norm_eps, c.rms_norm_eps
        )));
    }
    for (l, t) in c.layer_types.iter().enumerate() {
        if *t != LayerType::FullAttention {
            continue;
        }
        let p = format!("{LAYERS_PREFIX}{l}.self_attn.");
        if let Some((name, _)) = m.weights.iter().find(|(n, t)| n.starts_with(&p) && t.nonzeros() > 0) {
            return Err(other(format!("the woven machine's attention layer {l} is not inert ({name} has nonzeros)")));
        }
    }
    Ok(())
}

/// The grafted model's config: the base's, with the machine's layers in front, its token rows after the
/// base's vocabulary (`extra_vocab` rows), and the machine's widths and DeltaNet head counts (the base's,
/// or wider after [`widen`]).
pub fn grafted_config(base: &Qwen35Config, machine: &Qwen35Config, extra_vocab: usize) -> Qwen35Config {
    let mut c = base.clone();
    c.hidden_size = machine.hidden_size;
    c.intermediate_size = machine.intermediate_size;
    c.linear_num_key_heads = machine.linear_num_key_heads;
    c.linear_num_value_heads = machine.linear_num_value_heads;
    c.num_hidden_layers = machine.num_hidden_layers + base.num_hidden_layers;
    c.layer_types = machine.layer_types.iter().chain(base.layer_types.iter()).copied().collect();
    c.vocab_size = base.vocab_size + extra_vocab;
    c
}

/// Write the grafted checkpoint of `machine` (woven with [`base_fit`] of `base`) and `base` (opened with
/// [`open_base`] from `base_dir`) to `out` ([`check_destination`] first). Writes `config.json`,
/// `model.safetensors`, `graft.json`, `machine.json`, `README.md` and the base's tokenizer files; the files
/// go to a temporary directory beside `out` that replaces it at the end, so a failure leaves what was there.
pub fn write(base: &Checkpoint, base_dir: &Path, machine: &WovenMachine, out: &Path, readme_extra: &str) -> Result<GraftReport, WeaveError> {
    let t0 = std::time::Instant::now();
    check_destination(base_dir, out)?;
    let bc = base.config();
    check_woven(bc, machine)?;
    let ck_err = |e: backends::CheckpointError| other(format!("base {}: {e}", base_dir.display()));
    let (h, v, t) = (bc.hidden_size, bc.vocab_size, machine.config.vocab_size);
    let m = machine.config.num_hidden_layers;
    let tied = bc.tie_word_embeddings;
    let extra = if tied { 2 * t } else { t };
    let cfg = grafted_config(bc, machine.config, extra);
    cfg.validate().map_err(|e| other(format!("the grafted config is invalid: {e}")))?;
    let (input, output) = if tied { ([v, v + t], [v + t, v + 2 * t]) } else { ([v, v + t], [v, v + t]) };
    // The grafted layer shape: the base's, or wider (`widen`): then every base tensor is laid out anew.
    let hw = cfg.hidden_size;
    let widened = (hw, cfg.intermediate_size, cfg.linear_num_key_heads, cfg.linear_num_value_heads)
        != (h, bc.intermediate_size, bc.linear_num_key_heads, bc.linear_num_value_heads);
    let widening = widened.then(|| Widening {
        hidden_size: hw,
        intermediate_size: cfg.intermediate_size,
        linear_num_key_heads: cfg.linear_num_key_heads,
        linear_num_value_heads: cfg.linear_num_value_heads,
    });
    let own_norm = &machine.weights[FINAL_NORM];
    // A widened residual's mean square runs over hw dims where the base's ran over h. So the base's text
    // residual is carried scaled by alpha = sqrt(hw / h) (its embedding rows and every projection that writes
    // the residual are scaled by alpha): its mean square over hw dims is then the base's over h, epsilon
    // included, and each RMSNorm gain (1 + w) is divided by alpha to give the base's normed values; the final
    // norm's by alpha once more with a tied lm_head (whose rows are the scaled embedding). Exact when hw / h is
    // a power of 4, float rounding otherwise. The final norm's added dims take the machine's own weights (its
    // readout passes them unscaled).
    let alpha = (hw as f64 / h as f64).sqrt();
    let widen_norm = |w: &[f32], divide: f64, fill: Option<&[f32]>| -> Vec<f32> {
        (0..hw)
            .map(|d| if d < h { ((1.0 + w[d] as f64) / divide - 1.0) as f32 } else { fill.map_or(0.0, |f| f[d]) })
            .collect()
    };
    let base_norm = {
        let n = base.tensor(FINAL_NORM).map_err(ck_err)?.data;
        if widened { widen_norm(&n, if tied { alpha * alpha } else { alpha }, Some(&own_norm.data)) } else { n }
    };

    // The machine's readout through the base's final norm: the stand-alone machine's normed residual is
    // x·r·(1 + g) with its own gain g; the grafted one is x·r·(1 + w_d) with the base's weights, so each lm_head
    // column d is scaled by (1 + g_d) / (1 + w_d).
    let lm = &machine.weights[LM_HEAD];
    let mut readout = vec![0f32; t * hw];
    for d in 0..hw {
        let gain = 1.0 + base_norm[d] as f64;
        let col_used = (0..t).any(|r| lm.data[r * hw + d] != 0.0);
        if col_used && gain.abs() < 1e-3 {
            return Err(other(format!(
                "the base's final norm weight at dim {d} is {} (gain {gain:.2e}): the machine's readout, which needs that dim, cannot pass it",
                base_norm[d]
            )));
        }
        let scale = (1.0 + own_norm.data[d] as f64) / gain;
        for r in 0..t {
            readout[r * hw + d] = (lm.data[r * hw + d] as f64 * scale) as f32;
        }
    }
    let base_shapes: std::collections::HashMap<String, Vec<usize>> = bc.expected_tensors().into_iter().collect();
    let is_norm = |name: &str| name == FINAL_NORM || [LayerTensor::InputNorm, LayerTensor::PostNorm].iter().any(|n| name.ends_with(n.suffix()));
    // The projections that add to the residual (scaled by alpha in a widened graft).
    let writes_residual =
        |name: &str| [LayerTensor::OutProj, LayerTensor::OProj, LayerTensor::DownProj].iter().any(|n| name.ends_with(n.suffix()));
    let embed_m = &machine.weights[EMBED_TOKENS];
    let bf16_exact = |x: &[f32]| x.iter().all(|v| half::bf16::from_f32(*v).to_f32() == *v);

    // The tensors, in the order they are written, with their dtypes: base tensors keep theirs (raw copies).
    let base_dtype = |name: &str| base.raw(name).map(|(d, _)| d).map_err(ck_err);
    let embed_dtype = {
        let bd = base_dtype(EMBED_TOKENS)?;
        if bd == Dtype::F32 || tied || widened || !bf16_exact(&embed_m.data) { Dtype::F32 } else { bd }
    };
    let mut specs: Vec<(String, Vec<usize>, Dtype)> = Vec::new();
    for (name, shape) in cfg.expected_tensors() {
        let dtype = if name == EMBED_TOKENS {
            embed_dtype
        } else if name == LM_HEAD || (widened && (is_norm(&name) || writes_residual(&name))) {
            Dtype::F32
        } else if let Some(l) = layer_of(&name) {
            if l < m { Dtype::F32 } else { base_dtype(&rename_layer(&name, l - m))? }
        } else {
            base_dtype(&name)?
        };
        if dtype_width(dtype).is_none() {
            return Err(other(format!("base tensor {name} has dtype {dtype:?}, which loom does not write")));
        }
        specs.push((name, shape, dtype));
    }

    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| other(format!("cannot create {}: {e}", parent.display())))?;
    let tmp: PathBuf = parent.join(format!(".{}.graft-tmp", out.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| other(format!("cannot clear {}: {e}", tmp.display())))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| other(format!("cannot create {}: {e}", tmp.display())))?;
    let result = (|| -> Result<GraftReport, WeaveError> {
        let st = tmp.join("model.safetensors");
        let mut layer_nonzeros = 0usize;
        let zeros_for = |shape: &[usize]| vec![0f32; shape.iter().product()];
        write_tensors_typed(&st, &specs, |name, shape| {
            let ck = |e: backends::CheckpointError| e;
            if name == EMBED_TOKENS || name == LM_HEAD {
                let is_embed = name == EMBED_TOKENS;
                let src = if is_embed || tied { EMBED_TOKENS } else { LM_HEAD };
                let (bd, bytes) = base.raw(src).map_err(ck)?;
                let dtype = specs.iter().find(|s| s.0 == name).map(|s| s.2).expect("spec");
                // Machine rows after the base's: the embedding holds the input rows (and, tied, the readout
                // rows after them); an untied lm_head holds the readout rows.
                let rows: Vec<&[f32]> = match (is_embed, tied) {
                    (true, true) => vec![&embed_m.data, &readout],
                    (true, false) => vec![&embed_m.data],
                    (false, _) => vec![&readout],
                };
                if dtype == Dtype::BF16 && bd == Dtype::BF16 && rows.iter().all(|r| bf16_exact(r)) {
                    let mut out = widen_rows(bytes, v, 2 * h, v, 2 * hw, |i| i);
                    for r in rows {
                        out.extend(r.iter().flat_map(|x| half::bf16::from_f32(*x).to_bits().to_le_bytes()));
                    }
                    return Ok(TensorBytes::Raw(Cow::Owned(out)));
                }
                let mut out = base.tensor(src).map_err(ck)?.data;
                if widened {
                    out = widen_rows(&out, v, h, v, hw, |i| i);
                    if is_embed {
                        out.iter_mut().for_each(|x| *x = (*x as f64 * alpha) as f32);
                    }
                }
                out.reserve(rows.iter().map(|r| r.len()).sum());
                for r in rows {
                    out.extend_from_slice(r);
                }
                return Ok(TensorBytes::F32(Cow::Owned(out)));
            }
            match layer_of(name) {
                Some(l) if l < m => {
                    if let Some(w) = machine.weights.get(name).filter(|w| w.shape == shape) {
                        layer_nonzeros += w.nonzeros();
                        return Ok(TensorBytes::F32(Cow::Borrowed(w.data.as_slice())));
                    }
                    // An inert attention layer in the base's attention shape (checked all-zero above).
                    Ok(TensorBytes::F32(Cow::Owned(zeros_for(shape))))
                }
                Some(l) => {
                    let base_name = rename_layer(name, l - m);
                    if !widened {
                        let (_, bytes) = base.raw(&base_name).map_err(ck)?;
                        return Ok(TensorBytes::Raw(Cow::Borrowed(bytes)));
                    }
                    if is_norm(name) {
                        return Ok(TensorBytes::F32(Cow::Owned(widen_norm(&base.tensor(&base_name).map_err(ck)?.data, alpha, None))));
                    }
                    let old = &base_shapes[&base_name];
                    let (r0, c0) = (old[0], old[1..].iter().product::<usize>());
                    let (r1, c1) = (shape[0], shape[1..].iter().product::<usize>());
                    let row_of = base_row_map(&base_name, bc, &cfg);
                    if writes_residual(name) {
                        let mut out = widen_rows(&base.tensor(&base_name).map_err(ck)?.data, r0, c0, r1, c1, row_of);
                        out.iter_mut().for_each(|x| *x = (*x as f64 * alpha) as f32);
                        return Ok(TensorBytes::F32(Cow::Owned(out)));
                    }
                    let (dtype, bytes) = base.raw(&base_name).map_err(ck)?;
                    let width = dtype_width(dtype).expect("checked above");
                    Ok(TensorBytes::Raw(Cow::Owned(widen_rows(bytes, r0, c0 * width, r1, c1 * width, row_of))))
                }
                None if widened && name == FINAL_NORM => Ok(TensorBytes::F32(Cow::Owned(base_norm.clone()))),
                None => {
                    let (_, bytes) = base.raw(name).map_err(ck)?;
                    Ok(TensorBytes::Raw(Cow::Borrowed(bytes)))
                }
            }
        })
        .map_err(|e| other(format!("writing {}: {e}", st.display())))?;
        // Every machine tensor the weaver emitted must have been written (a misnamed one would be lost).
        for (name, w) in machine.weights.iter() {
            if let Some(l) = layer_of(name) {
                if !specs.iter().any(|s| &s.0 == name) && w.nonzeros() > 0 {
                    return Err(other(format!("the woven tensor {name} (layer {l}) has no place in the grafted config")));
                }
            }
        }
        let file_bytes = std::fs::metadata(&st).map(|m| m.len()).unwrap_or(0);

        let base_info = BaseInfo {
            dir: base_dir.display().to_string(),
            model_type: base_model_type(base_dir)?,
            num_hidden_layers: bc.num_hidden_layers,
            vocab_size: v,
            hidden_size: h,
            tie_word_embeddings: tied,
            dtype: format!("{:?}", base_dtype(&LayerTensor::UpProj.name(0))?),
            parameters: bc.parameter_count(),
        };
        let gm = GraftManifest {
            format: GRAFT_FORMAT.into(),
            version: GRAFT_VERSION,
            machine: machine.manifest.face.name.clone(),
            machine_layers: [0, m],
            base_layers: [m, m + bc.num_hidden_layers],
            base_vocab: v,
            machine_input_tokens: input,
            machine_output_tokens: output,
            base: base_info.clone(),
            widened: widening.clone(),
        };
        gm.check(&tmp, &cfg).map_err(|e| other(format!("graft manifest (a weaver bug): {e}")))?;
        let layer_parameters: usize = cfg
            .expected_tensors()
            .iter()
            .filter(|(n, _)| layer_of(n).is_some_and(|l| l < m))
            .map(|(_, s)| s.iter().product::<usize>())
            .sum();
        let vocab_rows = extra + if tied { 0 } else { t }; // untied: T embedding rows and T lm_head rows
        let vocab_nonzeros = embed_m.data.iter().filter(|x| **x != 0.0).count() + readout.iter().filter(|x| **x != 0.0).count();
        let total_parameters = cfg.parameter_count();
        let widening_parameters = total_parameters - bc.parameter_count() - layer_parameters - vocab_rows * hw;
        let report = GraftReport {
            machine: gm.machine.clone(),
            base: base_info,
            machine_layers: m,
            machine_attention_layers: machine.config.layer_types.iter().filter(|t| **t == LayerType::FullAttention).count(),
            layer_parameters,
            layer_nonzeros,
            vocab_rows,
            vocab_parameters: vocab_rows * hw,
            vocab_nonzeros,
            widened: widening.clone(),
            widening_parameters,
            added_parameters: layer_parameters + vocab_rows * hw + widening_parameters,
            added_nonzeros: layer_nonzeros + vocab_nonzeros,
            total_parameters,
            file_bytes,
            seconds: t0.elapsed().as_secs_f64(),
        };
        let write_file = |name: &str, text: String| {
            let p = tmp.join(name);
            std::fs::write(&p, text).map_err(|e| other(format!("cannot write {}: {e}", p.display())))
        };
        write_file("config.json", serde_json::to_string_pretty(&cfg.to_hf_json()).expect("config serializes") + "\n")?;
        let mut gj = serde_json::to_value(&gm).expect("graft manifest serializes");
        gj.as_object_mut().expect("object").insert("report".into(), serde_json::to_value(&report).expect("report serializes"));
        write_file(GRAFT_FILE, serde_json::to_string_pretty(&gj).expect("serializes") + "\n")?;
        write_file(MANIFEST_FILE, serde_json::to_string_pretty(machine.manifest).expect("manifest serializes"))?;
        for f in BASE_FILES {
            let src = base_dir.join(f);
            if src.is_file() {
                std::fs::copy(&src, tmp.join(f)).map_err(|e| other(format!("cannot copy {}: {e}", src.display())))?;
            }
        }
        write_file("README.md", readme(&gm, &report, readme_extra))?;
        Ok(report)
    })();
    match result {
        Ok(report) => {
            if out.exists() {
                std::fs::remove_dir_all(out).map_err(|e| other(format!("cannot replace the previous graft {}: {e}", out.display())))?;
            }
            std::fs::rename(&tmp, out).map_err(|e| other(format!("cannot move {} to {}: {e}", tmp.display(), out.display())))?;
            Ok(report)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

/// Where row `i` of a base tensor goes in a widened graft: the same row, except in the DeltaNet's q, k, v
/// sections (`in_proj_qkv`, `conv1d`), whose base heads come first in each wider section.
fn base_row_map(name: &str, base: &Qwen35Config, wide: &Qwen35Config) -> impl Fn(usize) -> usize {
    let sectioned = name.ends_with(".linear_attn.in_proj_qkv.weight") || name.ends_with(".linear_attn.conv1d.weight");
    let qk = base.linear_num_key_heads * base.linear_key_head_dim;
    let qk_wide = wide.linear_num_key_heads * wide.linear_key_head_dim;
    move |i| {
        if !sectioned || i < qk {
            i
        } else if i < 2 * qk {
            i - qk + qk_wide
        } else {
            i - 2 * qk + 2 * qk_wide
        }
    }
}

/// A row-major `[rows, cols]` array laid out as `[new_rows, new_cols]`: row `i` at row `row_of(i)`, its
/// values first, zeros (`T::default()`) elsewhere. (Bytes: `cols` counted in bytes.)
fn widen_rows<T: Copy + Default>(src: &[T], rows: usize, cols: usize, new_rows: usize, new_cols: usize, row_of: impl Fn(usize) -> usize) -> Vec<T> {
    debug_assert!(src.len() == rows * cols && cols <= new_cols);
    let mut out = vec![T::default(); new_rows * new_cols];
    for i in 0..rows {
        let j = row_of(i);
        out[j * new_cols..j * new_cols + cols].copy_from_slice(&src[i * cols..(i + 1) * cols]);
    }
    out
}

/// The layer index of a `model.layers.I.*` tensor name.
fn layer_of(name: &str) -> Option<usize> {
    name.strip_prefix(LAYERS_PREFIX)?.split_once('.')?.0.parse().ok()
}

/// `name` (a `model.layers.I.*` tensor) with its layer index replaced by `l`.
fn rename_layer(name: &str, l: usize) -> String {
    let rest = name.strip_prefix(LAYERS_PREFIX).and_then(|r| r.split_once('.')).map(|(_, t)| t).unwrap_or(name);
    format!("{LAYERS_PREFIX}{l}.{rest}")
}

/// The README written into a grafted checkpoint: what was added and how to use it.
fn readme(g: &GraftManifest, r: &GraftReport, extra: &str) -> String {
    format!(
        "# A woven {machine} grafted onto a Qwen3.5 base\n\n\
         This directory is a Qwen3.5 checkpoint (`config.json` + `model.safetensors`) that transformers'\n\
         `Qwen3_5ForCausalLM` loads. It was written by `loom graft` from the base `{base}` ({bl} layers, hidden {h},\n\
         vocabulary {v}, {bp:.3} G parameters, lm_head {tie}).\n\n\
         ## What was added\n\n\
         | what | value |\n|---|---|\n\
         | layers added in front of the base's | {ml} (layers {m0}..{m1}; {ma} of them inert full attention); the base's layers are {b0}..{b1}, {base_layers} |\n\
         | parameters added (dense / nonzero) | {ap} / {an} ({apg:.3} G dense) |\n\
         | of which the layers | {lp} / {ln} |\n\
         | vocabulary rows added | {vr} ({vp} parameters): the machine's {t} trace tokens, fed as ids {i0}..{i1} and read as ids {o0}..{o1} |\n\
         | the grafted model | {tl} layers, {tp:.3} G parameters, vocabulary {tv} |\n\n\
         Text ids 0..{v} are the base's; `graft.json` says which layers and ids are the machine's, and\n\
         `machine.json` is the machine's trace protocol in its own ids 0..{t} (trace token `t` is id `{i0} + t` as\n\
         an input and `{o0} + t` as an output).\n\n\
         ## How it runs\n\n\
         Routing: text positions run only the base's layers ({b0}..{b1}), machine positions only the machine's\n\
         ({m0}..{m1}), each with its own caches and positions; both share the embedding, the final norm and the\n\
         lm_head. So the text logits are {text_logits} and the machine's trace is exact.\n\
         A plain forward pass through all layers (transformers' `generate` as it is) runs the machine's layers on\n\
         text too, which changes the text: use loom's driver, or restrict the model to one route's layers.\n\n\
         ```sh\n\
         loom run --model THIS_DIR [PROGRAM]          # the machine, on its own route\n\
         loom generate --model THIS_DIR --prompt-ids 16,478,220   # text, on the base's route\n\
         loom text-check --base BASE_DIR --model THIS_DIR --json  # the text figures against the base\n\
         python backends/tools/hf_check_trace.py THIS_DIR TRACE.json   # the machine's trace in transformers\n\
         ```\n{extra}",
        machine = g.machine,
        base_layers = match &g.widened {
            None => "unchanged".to_string(),
            Some(w) => format!(
                "widened (`loom graft --widen`) to hidden {}, MLP {}, {} key / {} value DeltaNet heads: the base's weights in the first rows and columns, zeros elsewhere, the text residual carried scaled by sqrt({} / {}) and every norm gain divided to match",
                w.hidden_size, w.intermediate_size, w.linear_num_key_heads, w.linear_num_value_heads, w.hidden_size, g.base.hidden_size
            ),
        },
        text_logits = if g.widened.is_some() {
            "the base's to float rounding (the widened norms sum over more dims; `loom text-check` measures it)"
        } else {
            "the base's bit for bit"
        },
        base = g.base.dir,
        bl = g.base.num_hidden_layers,
        h = g.base.hidden_size,
        v = g.base_vocab,
        bp = g.base.parameters as f64 * 1e-9,
        tie = if g.base.tie_word_embeddings { "tied to the embedding" } else { "untied" },
        ml = r.machine_layers,
        m0 = g.machine_layers[0],
        m1 = g.machine_layers[1],
        ma = r.machine_attention_layers,
        b0 = g.base_layers[0],
        b1 = g.base_layers[1],
        ap = r.added_parameters,
        an = r.added_nonzeros,
        apg = r.added_parameters as f64 * 1e-9,
        lp = r.layer_parameters,
        ln = r.layer_nonzeros,
        vr = r.vocab_rows,
        vp = r.vocab_parameters,
        t = g.machine_vocab(),
        i0 = g.machine_input_tokens[0],
        i1 = g.machine_input_tokens[1],
        o0 = g.machine_output_tokens[0],
        o1 = g.machine_output_tokens[1],
        tl = r.machine_layers + g.base.num_hidden_layers,
        tp = r.total_parameters as f64 * 1e-9,
        tv = g.machine_output_tokens[1].max(g.machine_input_tokens[1]),
    )
}
