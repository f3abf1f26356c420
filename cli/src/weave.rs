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
    #[arg(long, required_unless_present = "plan")]
    pub out: Option<PathBuf>,
    /// Only plan the weave (no tensors, nothing written): print the layers, geometry and dense parameters the
    /// machine takes in the config's geometry, or what overflows it.
    #[arg(long)]
    pub plan: bool,
    /// Also write the allocation dump (slot -> name, units -> gate, head -> memory) to this file.
    #[arg(long)]
    pub dump: Option<PathBuf>,
    /// Print the report (with --plan: the plan) as one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let (cfg, machine) = crate::session::open_config(&a.config, &Default::default())?;
    let desc = machine.describe()?;
    let attention_layer = cfg.geometry.as_ref().and_then(|g| g.hf_compatible).unwrap_or(true);
    if a.plan {
        let (_, _, _, alloc) = weaver::plan(&desc, &weaver::WeaveOptions { fit: cfg.geometry.clone(), attention_layer })?;
        let c = weaver::emit::config(&alloc);
        let g = &alloc.geometry;
        if a.json {
            let plan = serde_json::json!({
                "machine": desc.name, "layers": g.layers, "attention_layers": alloc.attention_layers.len(), "hidden": g.hidden,
                "intermediate": g.intermediate, "key_heads": g.key_heads, "value_heads": g.value_heads, "d_k": g.dk, "d_v": g.dv,
                "vocab": g.vocab, "parameters": c.parameter_count(),
            });
            println!("{}", serde_json::to_string_pretty(&plan)?);
            return Ok(());
        }
        println!("machine {}: {alloc}, {} parameters (dense)", desc.name, c.parameter_count());
        return Ok(());
    }
    let out = a.out.as_ref().expect("clap requires --out without --plan");
    // Refuse a destination that is not ours before the (long) weave.
    weaver::export::check_destination(out)?;
    let w = weaver::weave(&desc, &weaver::WeaveOptions { fit: cfg.geometry.clone(), attention_layer })?;
    eprintln!("writing {} parameters ({:.1} GB of f32) to {}", w.report.parameters, w.report.parameters as f64 * 4e-9, out.display());
    let t0 = std::time::Instant::now();
    save(&w, out).with_context(|| format!("saving to {}", out.display()))?;
    let save_s = t0.elapsed().as_secs_f64();
    if a.json {
        let mut j = serde_json::to_value(&w.report)?;
        j["out"] = serde_json::json!(out.display().to_string());
        j["save_s"] = serde_json::json!(save_s);
        println!("{}", serde_json::to_string_pretty(&j)?);
    } else {
        println!("{}", w.report.render());
        println!("saved {} in {:.2} s", out.display(), save_s);
    }
    if let Some(d) = &a.dump {
        std::fs::write(d, weaver::report::allocation_dump(&w.netlist, &w.allocation)).with_context(|| format!("writing {}", d.display()))?;
    }
    Ok(())
}
