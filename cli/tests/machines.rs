//! Every machine of the registry runs through the same verbs: `loom weave`, `loom run` (config and
//! checkpoint), `loom lockstep` and `loom bench-run`, with its built-in demo program. The test machines acc8
//! and io8 are registered with one line each (`cli/src/registry.rs`) and need nothing else from the binary;
//! rv32im goes the same way (`tests/rv32_run.rs`).

mod common;
use common::*;
use isa_api::Reference;

/// The console lines (`PORT value`) the reference evaluator's run of `desc` gives.
fn reference_console(desc: isa_api::MachineDesc, load: &[u64], inject: fn(usize) -> Vec<(u32, u64)>, steps: usize) -> String {
    let names: Vec<String> = desc.ports.iter().map(|p| p.name.clone()).collect();
    let mut r = Reference::new(desc);
    if !load.is_empty() {
        r.load(0, 0, load);
    }
    let mut out = String::new();
    for s in 0..steps {
        for (p, v) in inject(s) {
            r.inject(p, v);
        }
        let o = r.step();
        if o.halted {
            break;
        }
        for (p, v) in o.outputs {
            out.push_str(&format!("{} {v}\n", names[p as usize]));
        }
    }
    out
}

fn no_inputs(_: usize) -> Vec<(u32, u64)> {
    Vec::new()
}

fn through_every_verb(config: &str, want_console: &str, halts_within: usize) {
    let dir = scratch(&format!("verbs-{}", config.replace(['/', '.'], "-")));
    let run = |args: &[&str]| {
        let out = loom().current_dir(repo()).args(args).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    // loom run CONFIG: the built-in demo, its console equal to the reference's.
    let (code, stdout, stderr) = run(&["run", config, "--no-progress"]);
    assert_eq!(code, Some(0), "{config}: {stderr}");
    assert_eq!(stdout, want_console, "{config}");
    assert!(stderr.contains("[loom: halted;"), "{stderr}");
    // loom lockstep CONFIG: every generated position equal to the reference evaluator.
    let (code, stdout, stderr) = run(&["lockstep", config]);
    assert_eq!(code, Some(0), "{config}: {stdout}\n{stderr}");
    assert!(stdout.contains(", 0 programs disagreeing"), "{stdout}");
    let positions: usize = stdout.lines().find(|l| l.starts_with("total:")).and_then(|l| l.split(", ").nth(1)).and_then(|s| s.split_whitespace().next()).and_then(|n| n.parse().ok()).expect("positions");
    assert!(positions > 500, "{stdout}");
    // loom bench-run CONFIG: JSON figures.
    let (code, stdout, stderr) = run(&["bench-run", config]);
    assert_eq!(code, Some(0), "{stderr}");
    let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(j["halted"].as_bool(), Some(true), "{stdout}");
    assert!(j["steps"].as_u64().unwrap() <= halts_within as u64 && j["tokens_per_s"].as_f64().unwrap() > 0.0, "{stdout}");
    // loom weave CONFIG --out DIR, then loom run --model DIR: the same console from the checkpoint alone.
    let model = dir.join("model");
    let (code, _, stderr) = run(&["weave", config, "--out", model.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(model.join("machine.json")).unwrap()).unwrap();
    assert!(manifest["ports"].as_array().is_some_and(|p| !p.is_empty()), "the manifest carries the machine's face");
    let (code, stdout, stderr) = run(&["run", "--no-progress", "--model", model.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, want_console, "{config} from its checkpoint");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `LOOM_PROFILE=stages,fields,steps`: `loom bench-run` on the incremental executor adds the decode time by layer
/// and stage (every layer, every stage, the tokens after the prompt, and the commit tokens' part of it), by the
/// field of the token fed (every field token, as many as the token kinds count) and by the kind of step (every
/// step the commits computed but the last, unfinished one), and prints the tables; without it, none.
#[test]
fn bench_run_reports_the_stage_and_field_profiles_when_asked() {
    let run = |profile: bool| {
        let mut cmd = loom();
        cmd.current_dir(repo()).args(["bench-run", "configs/acc8.toml", "--executor", "incremental", "--max-steps", "2000"]);
        if profile {
            cmd.env("LOOM_PROFILE", "stages,fields,steps");
        } else {
            cmd.env_remove("LOOM_PROFILE");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (j, String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (j, stderr) = run(true);
    let t = &j["stage_times"];
    let layers = t["ms_per_layer"].as_array().expect("ms_per_layer");
    assert!(!layers.is_empty() && layers.iter().all(|l| l.as_array().is_some_and(|s| s.len() == 6)), "{t}");
    assert_eq!(t["stages"][0], "mixer");
    let generated = j["generated_tokens"].as_u64().unwrap();
    assert!(t["tokens"].as_u64().unwrap() >= generated && generated > 100, "{t}, {generated} generated");
    assert!(t["ms_per_stage"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).sum::<f64>() > 0.0, "{t}");
    assert!(stderr.contains("decode time by layer and stage"), "{stderr}");
    let rows = j["field_times"].as_array().expect("field_times");
    let tokens = |commit: bool| rows.iter().filter(|r| r["commit"] == commit).map(|r| r["tokens"].as_u64().unwrap()).sum::<u64>();
    let kinds = &j["token_times"];
    let kind = |k: &str| kinds[k]["tokens"].as_u64().unwrap();
    // The commit tokens' part: every commit token, every layer, each stage within the whole profile's.
    let c = &t["commits"];
    assert_eq!(c["tokens"].as_u64(), Some(kind("commit")), "{c} {kinds}");
    assert!(kind("commit") > 100 && t["tokens"].as_u64().unwrap() > kind("commit"), "{kinds}");
    let ms = |v: &serde_json::Value| v.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect::<Vec<_>>();
    assert_eq!(c["ms_per_layer"].as_array().map(|l| l.len()), Some(layers.len()), "{c}");
    let (part, whole) = (ms(&c["ms_per_stage"]), ms(&t["ms_per_stage"]));
    assert!(part.iter().sum::<f64>() > 0.0 && part.iter().zip(&whole).all(|(p, w)| p <= w), "{part:?} within {whole:?}");
    assert!(stderr.contains("over") && stderr.contains("commit tokens (LOOM_PROFILE=stages)"), "{stderr}");
    assert_eq!(tokens(false), kind("field") + kind("input"), "{rows:?} {kinds}");
    assert!(tokens(true) > 0 && tokens(true) <= kind("commit"), "{rows:?} {kinds}");
    let ms: Vec<f64> = rows.iter().map(|r| r["ms"].as_f64().unwrap()).collect();
    assert!(ms.windows(2).all(|w| w[0] >= w[1]), "the most time first: {ms:?}");
    assert!(stderr.contains("decode time by the field of the token fed"), "{stderr}");
    // Steps: each commit after the first ends the step the one before it computed.
    let steps = j["step_times"].as_array().expect("step_times");
    let sum = |k: &str| steps.iter().map(|r| r[k].as_f64().unwrap()).sum::<f64>();
    assert_eq!(sum("steps") as u64, kind("commit") - 1, "{steps:?} {kinds}");
    let secs = |k: &str| kinds[k]["seconds"].as_f64().unwrap() * 1e3;
    assert!(sum("commit_ms") > 0.0 && sum("commit_ms") <= secs("commit") * (1.0 + 1e-9), "{steps:?} {kinds}");
    assert!(sum("other_ms") <= (secs("field") + secs("input")) * (1.0 + 1e-9), "{steps:?} {kinds}");
    let time: Vec<f64> = steps.iter().map(|r| r["commit_ms"].as_f64().unwrap() + r["other_ms"].as_f64().unwrap()).collect();
    assert!(time.windows(2).all(|w| w[0] >= w[1]), "the most time first: {time:?}");
    assert!(steps.iter().all(|r| r["fields"].as_array().is_some_and(|f| f.iter().all(|n| n.is_string()))), "{steps:?}");
    assert!(stderr.contains("decode time by the kind of step"), "{stderr}");
    let (j, stderr) = run(false);
    assert!(j.get("stage_times").is_none() && !stderr.contains("decode time by layer"), "{j}");
    assert!(j.get("field_times").is_none() && !stderr.contains("decode time by the field"), "{j}");
    assert!(j.get("step_times").is_none() && !stderr.contains("decode time by the kind of step"), "{j}");
}

#[test]
fn acc8_runs_through_every_verb() {
    let prog: Vec<u64> = isa_api::examples::acc8_stress_program(1).iter().map(|b| *b as u64).collect();
    let want = reference_console(isa_api::examples::acc8(), &prog, no_inputs, 100_000);
    assert!(want.lines().count() > 100, "the demo prints its checksums");
    through_every_verb("configs/acc8.toml", &want, 100_000);
}

#[test]
fn io8_runs_through_every_verb_with_its_input_devices() {
    let want = reference_console(isa_api::examples::io8(200), &[], isa_api::examples::io8_devices, 1000);
    assert_eq!(want.lines().count(), 29, "an interrupt every 7 steps: {want}");
    through_every_verb("configs/io8.toml", &want, 1000);
}

#[test]
fn a_machine_outside_the_registry_is_named() {
    let dir = scratch("unregistered");
    let cfg = dir.join("z80.toml");
    std::fs::write(&cfg, "[machine]\nisa = \"z80\"\n").unwrap();
    for verb in ["run", "lockstep", "bench-run", "weave"] {
        let mut c = loom();
        c.arg(verb).arg(&cfg);
        if verb == "weave" {
            c.arg("--out").arg(dir.join("out"));
        }
        let out = c.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{verb}: {stderr}");
        assert!(stderr.contains("no machine \"z80\" (machines: rv32im, 6502, simt4, acc8, io8, paint8)"), "{verb}: {stderr}");
    }
}

#[test]
fn misuses_are_named_before_any_work() {
    let dir = scratch("misuses");
    let model = dir.join("acc8");
    let out = loom().current_dir(repo()).args(["weave", "configs/acc8.toml", "--out"]).arg(&model).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A config given with --model is not taken as a program image.
    let out = loom().current_dir(repo()).args(["run", "--model"]).arg(&model).arg("configs/acc8.toml").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("looks like a config"), "{stderr}");
    // weave refuses a file, and a directory holding another model's checkpoint, and leaves them as they were.
    let file = dir.join("notes.txt");
    std::fs::write(&file, "mine").unwrap();
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("config.json"), "{}").unwrap();
    for (target, needle) in [(&file, "not a directory"), (&other, "holds no machine.json")] {
        let out = loom().current_dir(repo()).args(["weave", "configs/acc8.toml", "--out"]).arg(target).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(needle) && !stderr.contains("writing"), "refused before weaving: {stderr}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    assert_eq!(std::fs::read_to_string(other.join("config.json")).unwrap(), "{}");
    // --max-steps 0 runs no step.
    let out = loom().current_dir(repo()).args(["run", "configs/acc8.toml", "--no-progress", "--max-steps", "0"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(124), "{stderr}");
    assert!(stderr.contains("0 instructions, 0 steps"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A checkpoint whose weights were changed (the last layer's MLP down projection zeroed) runs, and `lockstep
/// --model` finds its trace differing from the reference: exit status 3 (`DISAGREES`), not 1 (an error).
#[test]
fn a_disagreeing_network_exits_with_status_3() {
    let dir = scratch("disagree");
    let model = dir.join("model");
    let out = loom().current_dir(repo()).args(["weave", "configs/acc8.toml", "--out"]).arg(&model).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let path = model.join("model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut names: Vec<String> = st.names().into_iter().map(String::from).collect();
    names.sort();
    let last = names.iter().filter_map(|n| n.strip_prefix("model.layers.")?.split('.').next()?.parse::<u32>().ok()).max().unwrap();
    let target = format!("model.layers.{last}.mlp.down_proj.weight");
    let owned: Vec<(String, safetensors::Dtype, Vec<usize>, Vec<u8>)> = names
        .iter()
        .map(|n| {
            let t = st.tensor(n).unwrap();
            let data = if *n == target { vec![0u8; t.data().len()] } else { t.data().to_vec() };
            (n.clone(), t.dtype(), t.shape().to_vec(), data)
        })
        .collect();
    assert!(owned.iter().any(|(n, ..)| *n == target), "{target}");
    let views: Vec<(String, safetensors::tensor::TensorView)> =
        owned.iter().map(|(n, d, s, b)| (n.clone(), safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap())).collect();
    let written = safetensors::serialize(views, None).unwrap();
    std::fs::write(&path, written).unwrap();
    let out = loom().current_dir(repo()).args(["lockstep", "configs/acc8.toml", "--model"]).arg(&model).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("MISMATCH with the reference evaluator") && stdout.contains(", 1 programs disagreeing"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}
