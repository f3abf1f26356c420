//! Export and reload a woven machine; a fitted (non-minimal) geometry runs the same trace.

use backends::sparse::SparseModel;
use isa_api::examples::{acc8, acc8_stress_program};
use isa_api::Reference;
use std::path::Path;
use weaver::config::Config;
use weaver::export::{load, save};
use isa_api::host;

fn reference_trace(prog: &[u64], steps: usize) -> Vec<u32> {
    let mut r = Reference::new(acc8());
    r.load(0, 0, prog);
    r.run(steps)
}

#[test]
fn fitted_geometry_saved_and_reloaded_runs_the_reference_trace() {
    let cfg_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/acc8-fit.toml");
    let cfg = Config::from_file(&cfg_path).unwrap();
    let desc = cfg.machine(&[&isa_api::examples::fronts::Acc8Front]).unwrap().describe().unwrap();
    let w = weaver::weave(&desc, &weaver::WeaveOptions { fit: cfg.geometry.clone(), attention_layer: true }).unwrap();
    assert_eq!((w.config.num_hidden_layers, w.config.hidden_size, w.config.intermediate_size), (8, 512, 1024));
    assert_eq!((w.config.linear_num_key_heads, w.config.linear_num_value_heads, w.config.linear_value_head_dim), (4, 16, 32));
    let dir = std::env::temp_dir().join(format!("loom-weaver-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    save(&w, &dir).unwrap();
    save(&w, &dir).unwrap(); // a woven checkpoint is replaced
    let (config, weights, manifest) = load(&dir).unwrap();
    assert_eq!(config, w.config);
    assert_eq!(manifest.protocol, w.protocol);
    assert_eq!(weights.len(), w.weights.len());
    let model = SparseModel::new(&config, &weights).unwrap();
    let prog: Vec<u64> = acc8_stress_program(1).iter().map(|b| *b as u64).collect();
    let prompt = host::program_prompt(&manifest.protocol, manifest.program_memory, 0, &prog);
    let mut st = model.new_state();
    let got = host::run(&manifest.protocol, &prompt, 300, |t| model.step_argmax(&mut st, t)).unwrap();
    assert_eq!(got.trace.generated, reference_trace(&prog, 300));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_foreign_directory_is_not_overwritten() {
    let dir = std::env::temp_dir().join(format!("loom-weaver-foreign-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("machine.json"), "{\"not\": \"a manifest\"}").unwrap();
    let w = weaver::weave(&acc8(), &Default::default()).unwrap();
    let e = save(&w, &dir).unwrap_err().to_string();
    assert!(e.contains("refusing to overwrite"), "{e}");
    // Another model's checkpoint (no machine.json) and a plain file are refused too, and left as they were.
    std::fs::remove_file(dir.join("machine.json")).unwrap();
    std::fs::write(dir.join("config.json"), "{}").unwrap();
    let e = save(&w, &dir).unwrap_err().to_string();
    assert!(e.contains("holds no machine.json"), "{e}");
    assert_eq!(std::fs::read_to_string(dir.join("config.json")).unwrap(), "{}");
    let file = dir.join("config.json");
    let e = save(&w, &file).unwrap_err().to_string();
    assert!(e.contains("not a directory"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
