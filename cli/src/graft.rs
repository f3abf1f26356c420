//! `loom graft --base DIR --machine CONFIG --out DIR`: weave a machine into a base Qwen3.5 checkpoint's layer
//! shape and write the grafted checkpoint (the machine's layers in front of the base's, its trace tokens after
//! the base's vocabulary; see `weaver::graft` and `backends::graft`).
//!
//! Checked before anything is written: the base is a Qwen3.5 checkpoint with every tensor its config names
//! (any layout: text or the released multimodal one, sharded or not, f32 or bf16), the machine fits the base's
//! shape (else the error names every dimension that overflows), and `--out` is new, empty or a previous graft
//! (never the base). The base directory is only read.

use anyhow::Context;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The base model: a Qwen3.5 checkpoint directory (e.g. a Hugging Face download of Qwen/Qwen3.5-0.8B).
    #[arg(long)]
    pub base: PathBuf,
    /// The machine's config (TOML), e.g. configs/acc8.toml. Its `[geometry]`, if any, is replaced by the
    /// base's shape.
    #[arg(long)]
    pub machine: PathBuf,
    /// Output directory (created; a previous graft there is replaced; anything else is refused).
    #[arg(long)]
    pub out: PathBuf,
    /// When the machine does not fit the base's layer shape, widen every layer (the base's too, with zeros)
    /// to the narrowest shape that holds it: more DeltaNet heads, then the hidden and MLP widths the machine
    /// needs. The base's text then equals its own to float rounding instead of bit for bit (its RMSNorms
    /// average over the wider residual; `loom text-check` measures it).
    #[arg(long)]
    pub widen: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let base = weaver::graft::open_base(&a.base)?;
    weaver::graft::check_destination(&a.base, &a.out)?;
    let (_cfg, machine) = crate::session::open_config(&a.machine, &Default::default())?;
    let desc = machine.describe()?;
    let bc = base.config();
    let fits = weaver::plan(&desc, &weaver::WeaveOptions { fit: Some(weaver::graft::base_fit(bc)), attention_layer: true });
    let widened = matches!(fits, Err(weaver::WeaveError::Overflow(_))) && a.widen;
    let fit = match fits {
        Err(weaver::WeaveError::Overflow(_)) if a.widen => {
            let fit = weaver::graft::widen(&desc, bc)
                .map_err(|e| anyhow::anyhow!("the machine of {} does not fit even a widened layer shape of the base {}: {e}", a.machine.display(), a.base.display()))?;
            eprintln!(
                "the machine does not fit the base's layer shape; widening every layer: hidden {} -> {}, intermediate {} -> {}, DeltaNet heads {}/{} -> {}/{} (key/value)",
                bc.hidden_size,
                fit.hidden.unwrap_or(0),
                bc.intermediate_size,
                fit.intermediate.unwrap_or(0),
                bc.linear_num_key_heads,
                bc.linear_num_value_heads,
                fit.key_heads.unwrap_or(0),
                fit.value_heads.unwrap_or(0)
            );
            fit
        }
        _ => weaver::graft::base_fit(bc),
    };
    let hint = if a.widen { "" } else { " (--widen grafts it onto a wider copy of the base's layer shape)" };
    let w = weaver::weave(&desc, &weaver::WeaveOptions { fit: Some(fit), attention_layer: true }).map_err(|e| {
        anyhow::anyhow!(
            "the machine of {} does not fit the layer shape of the base {} (hidden {}, intermediate {}, {} key / {} value DeltaNet heads of {}x{}): {e}{hint}",
            a.machine.display(),
            a.base.display(),
            base.config().hidden_size,
            base.config().intermediate_size,
            base.config().linear_num_key_heads,
            base.config().linear_num_value_heads,
            base.config().linear_key_head_dim,
            base.config().linear_value_head_dim,
        )
    })?;
    eprintln!("{}", w.report.render());
    let extra = format!(
        "\nThe machine: `{}` ({}), woven into the {} layer shape.\n",
        a.machine.display(),
        desc.name,
        if widened { "widened" } else { "base's" }
    );
    let report = weaver::graft::write(
        &base,
        &a.base,
        &weaver::graft::WovenMachine { config: &w.config, weights: &w.weights, manifest: &w.manifest },
        &a.out,
        &extra,
    )
    .with_context(|| format!("grafting onto {}", a.base.display()))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{}", report.render());
        println!("wrote {}", a.out.display());
    }
    Ok(())
}
