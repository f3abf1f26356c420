//! `loom run --model DIR PROGRAM`: run a woven machine from its checkpoint directory. The decode loop knows
//! only the published manifest (token meanings) and the weights: it loads the program through load tokens,
//! feeds back every generated token and prints the output port. No circuit and no reference interpreter is
//! reachable from here.

use anyhow::Context;
use backends::sparse::SparseModel;
use std::path::PathBuf;
use weaver::export::load;
use weaver::host;

#[derive(clap::Args)]
pub struct Args {
    /// Woven checkpoint directory (from `loom weave`).
    #[arg(long)]
    pub model: PathBuf,
    /// Program image: raw bytes, little-endian words of the program memory's word width.
    pub program: PathBuf,
    /// Load address of the image.
    #[arg(long, default_value_t = 0)]
    pub base: u64,
    /// Stop after this many machine steps if the machine has not halted.
    #[arg(long, default_value_t = 1_000_000)]
    pub max_steps: usize,
    /// Write {"prompt": [...], "generated": [...], "injected": [[i, id], ...]} here.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Print the output port's values (one per line).
    #[arg(long)]
    pub print_outputs: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let (config, weights, manifest) = load(&a.model)?;
    let model = SparseModel::new(&config, &weights).map_err(anyhow::Error::msg).context("building the sparse executor")?;
    let bytes = std::fs::read(&a.program).with_context(|| format!("reading {}", a.program.display()))?;
    let mem = manifest.memories.get(manifest.program_memory as usize).context("the manifest names no program memory")?;
    let wb = mem.word_width.div_ceil(8) as usize;
    let words: Vec<u64> = bytes.chunks(wb).map(|c| c.iter().rev().fold(0u64, |acc, b| (acc << 8) | *b as u64)).collect();
    let prompt = host::program_prompt(&manifest.protocol, manifest.program_memory, a.base, &words);
    let mut st = model.new_state();
    let t0 = std::time::Instant::now();
    let out = host::run(&manifest.protocol, &prompt, a.max_steps, |t| model.step_argmax(&mut st, t)).map_err(anyhow::Error::msg)?;
    let dt = t0.elapsed().as_secs_f64();
    if a.print_outputs {
        for (port, v) in &out.outputs {
            let name = manifest.ports.get(*port as usize).map_or("?", |p| p.name.as_str());
            println!("{name} {v}");
        }
    }
    let n = out.trace.prompt.len() + out.trace.generated.len();
    eprintln!(
        "{}: {} steps, {} generated tokens ({} prompt), {}, {:.0} tokens/s (sparse executor)",
        manifest.machine,
        out.steps,
        out.trace.generated.len(),
        out.trace.prompt.len(),
        if out.halted { "halted" } else { "step limit" },
        n as f64 / dt
    );
    if let Some(p) = &a.trace {
        std::fs::write(p, serde_json::to_string(&out.trace)?).with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}
