//! Weave acc8, save it to DIR, and write DIR-prompt.json (the stress program's load tokens + STEP) and
//! DIR-expected.json (the reference evaluator's first STEPS steps of generated tokens), for checking the
//! checkpoint in another runtime (`../shared/tools/hf_decode.py DIR --prompt-file DIR-prompt.json`).
//!
//! cargo run --release -p weaver --example acc8_export -- DIR [STEPS]

use isa_api::examples::{acc8, acc8_stress_program};
use isa_api::Reference;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().ok_or("usage: acc8_export DIR [STEPS]")?);
    let steps: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(200);
    let t0 = std::time::Instant::now();
    let w = weaver::weave(&acc8(), &weaver::WeaveOptions { fit: None, attention_layer: true })?;
    eprintln!("woven in {:.3} s", t0.elapsed().as_secs_f64());
    weaver::export::save(&w, &dir)?;
    let prog: Vec<u64> = acc8_stress_program(2).iter().map(|b| *b as u64).collect();
    let prompt = isa_api::host::program_prompt(&w.protocol, 0, 0, &prog);
    let mut r = Reference::new(acc8());
    r.load(0, 0, &prog);
    let want = r.run(steps);
    std::fs::write(format!("{}-program.bin", dir.display()), acc8_stress_program(2))?;
    std::fs::write(format!("{}-prompt.json", dir.display()), serde_json::to_string(&prompt)?)?;
    std::fs::write(format!("{}-expected.json", dir.display()), serde_json::to_string(&want)?)?;
    eprintln!("{}\nprompt {} tokens, expected {} tokens", w.report.render(), prompt.len(), want.len());
    Ok(())
}
