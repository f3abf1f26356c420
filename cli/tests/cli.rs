//! The `loom` binary: `generate` prints JSON and writes logits; bad input gives a clear error and a non-zero
//! exit code, never a panic.

use std::path::Path;

mod common;
use common::*;

#[test]
fn generate_on_the_bundled_model() {
    let out_dir = scratch("generated");
    let logits = out_dir.join("logits.safetensors");
    let out = loom()
        .args(["generate", "--model"])
        .arg(repo().join("models/tiny-random"))
        .args(["--prompt-ids", "1,2,3", "--max-new-tokens", "5", "--logits-out"])
        .arg(&logits)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let generated = v["generated"].as_array().unwrap();
    assert_eq!(generated.len(), 5);
    let bytes = std::fs::read(&logits).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let t = st.tensor("logits").unwrap();
    assert_eq!(t.shape(), &[5, 128]);
    // The logged logits pick the printed tokens.
    let row0: Vec<f32> = t.data()[..128 * 4].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let am = row0.iter().enumerate().fold(0, |b, (i, x)| if *x > row0[b] { i } else { b });
    assert_eq!(generated[0].as_u64().unwrap() as usize, am);
}

fn fails_with(args: &[&str], model: &Path, needles: &[&str]) {
    let out = loom().args(["generate", "--model"]).arg(model).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "should fail: {err}");
    assert_eq!(out.status.code(), Some(1), "exit code (a panic gives 101): {err}");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}: {err}");
    }
}

#[test]
fn bad_inputs_give_clear_errors() {
    let base = ["--prompt-ids", "1,2", "--max-new-tokens", "2"];
    fails_with(&base, Path::new("/no/such/model"), &["/no/such/model"]);

    let dir = scratch("bad");
    std::fs::copy(repo().join("models/tiny-random/model.safetensors"), dir.join("model.safetensors")).unwrap();
    std::fs::write(dir.join("config.json"), "{ not json").unwrap();
    fails_with(&base, &dir, &["config.json", "malformed"]);

    // Valid config, but the weights are of another shape.
    let cfg = std::fs::read_to_string(repo().join("models/tiny-random/config.json")).unwrap();
    std::fs::write(dir.join("config.json"), cfg.replace("\"intermediate_size\": 64", "\"intermediate_size\": 65")).unwrap();
    fails_with(&base, &dir, &["model.safetensors", "model.layers.0.mlp.gate_proj.weight", "[65, 32]"]);

    let good = repo().join("models/tiny-random");
    fails_with(&["--prompt-ids", "1,x", "--max-new-tokens", "2"], &good, &["--prompt-ids", "\"x\""]);
    fails_with(&["--prompt-ids", "1,500", "--max-new-tokens", "2"], &good, &["500", "vocabulary"]);
    // An unknown executor is a usage error (status 2) that lists the executors.
    let out = loom().args(["generate", "--model"]).arg(&good).args(["--prompt-ids", "1", "--executor", "cuda"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("invalid value 'cuda'") && err.contains("sparse, incremental, jit, ndarray, flex, wgpu"), "{err}");
}

/// `loom weave` + `loom bench-run --model DIR PROGRAM`: the benchmark of any woven checkpoint prints its
/// figures as JSON, and its `--trace` equals the reference evaluator's trace.
#[test]
fn bench_run_measures_a_woven_checkpoint() {
    let dir = scratch("bench-acc8");
    let model = dir.join("acc8");
    let out = loom().current_dir(repo()).args(["weave", "configs/acc8.toml", "--out"]).arg(&model).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let prog = isa_api::examples::acc8_stress_program(1);
    let bin = dir.join("prog.bin");
    std::fs::write(&bin, &prog).unwrap();
    let trace = dir.join("t.json");
    let out = loom().args(["bench-run", "--model"]).arg(&model).arg(&bin).args(["--max-steps", "300", "--trace"]).arg(&trace).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((j["machine"].as_str(), j["steps"].as_u64(), j["halted"].as_bool()), (Some("acc8"), Some(300), Some(false)));
    assert!(j["tokens_per_s"].as_f64().unwrap() > 0.0 && j["peak_rss_bytes"].as_u64().unwrap() > 0);
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let generated: Vec<u32> = t["generated"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
    assert_eq!(j["generated_tokens"].as_u64(), Some(generated.len() as u64));
    let mut r = isa_api::Reference::new(isa_api::examples::acc8());
    r.load(0, 0, &prog.iter().map(|b| *b as u64).collect::<Vec<_>>());
    assert_eq!(generated, r.run(300));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The weave cache (every machine stored, `LOOM_WEAVE_CACHE_MIN_S=0`): the first run of a config weaves and
/// stores the machine, the second loads it (and says so) with the same output; a damaged entry is reported,
/// woven again and replaced; `LOOM_WEAVE_CACHE=off` writes nothing, and by default acc8 (woven in
/// milliseconds) is not stored.
#[test]
fn a_second_run_loads_the_woven_machine_from_the_cache() {
    let cache = scratch("weave-cache");
    let run = |cache: &Path| {
        let out = loom().current_dir(repo()).env("LOOM_WEAVE_CACHE", cache).env("LOOM_WEAVE_CACHE_MIN_S", "0").args(["run", "configs/acc8.toml", "--max-steps", "300"]).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let entries = |d: &Path| std::fs::read_dir(d).map(|r| r.filter_map(|e| e.ok()).map(|e| e.path()).collect::<Vec<_>>()).unwrap_or_default();
    let (code, first, err) = run(&cache);
    assert!(err.contains(" woven in ") && !err.contains("weave cache"), "{err}");
    let stored = entries(&cache);
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert!(stored[0].file_name().unwrap().to_string_lossy().starts_with("acc8-"), "{stored:?}");
    let (code2, second, err2) = run(&cache);
    assert!(err2.contains("loaded from the weave cache in"), "{err2}");
    assert_eq!((code2, &second), (code, &first), "the cached machine runs as the woven one");
    assert!(first.lines().filter(|l| l.starts_with("OUT ")).count() >= 3, "{first}");
    std::fs::write(stored[0].join("weights.safetensors"), b"damaged").unwrap();
    let (code3, third, err3) = run(&cache);
    assert!(err3.contains("warning: weave cache entry") && err3.contains("weaving again") && err3.contains(" woven in "), "{err3}");
    assert_eq!((code3, &third), (code, &first));
    let (_, _, err4) = run(&cache);
    assert!(err4.contains("loaded from the weave cache in"), "the damaged entry was replaced: {err4}");
    let quick = scratch("weave-cache-quick");
    let out = loom().current_dir(repo()).env("LOOM_WEAVE_CACHE", &quick).env_remove("LOOM_WEAVE_CACHE_MIN_S").args(["run", "configs/acc8.toml", "--max-steps", "50"]).output().unwrap();
    assert!(out.status.code().is_some() && entries(&quick).is_empty(), "{:?}", entries(&quick));
    let off = scratch("weave-cache-off");
    let out = loom().current_dir(repo()).env("LOOM_WEAVE_CACHE", "off").env("HOME", &off).env("XDG_CACHE_HOME", &off).args(["run", "configs/acc8.toml", "--max-steps", "50"]).output().unwrap();
    assert!(out.status.code().is_some() && entries(&off).is_empty(), "{:?}", entries(&off));
}

/// A reader that goes away (`loom ... | head`) ends loom by SIGPIPE, as any Unix tool, not by a panic.
#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_loom_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = loom()
        .current_dir(repo())
        .args(["nes", "--frames", "1", "--cpu", "reference", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader closes before loom writes
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(SIGPIPE), "{:?}: {stderr}", out.status);
}

/// SIGPIPE's number on Linux and the BSDs.
#[cfg(unix)]
const SIGPIPE: i32 = 13;

/// `loom ARGS` in the repository: its status and standard error.
fn run_in_repo(args: &[&str]) -> (Option<i32>, String) {
    let out = loom().current_dir(repo()).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
}

/// `loom --version` names the commit it was built from.
#[test]
fn the_version_names_the_commit() {
    let out = loom().arg("--version").output().unwrap();
    let v = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(v.starts_with("loom 0.1.0 (commit ") || v.starts_with("loom 0.1.0 (unknown commit)"), "{v}");
    if v.contains("(commit ") {
        let hash: String = v.split("(commit ").nth(1).unwrap().chars().take_while(|c| c.is_ascii_hexdigit()).collect();
        assert_eq!(hash.len(), 12, "{v}");
    }
}

/// `loom completions SHELL` prints a completion script that knows the verbs.
#[test]
fn completions_name_the_verbs() {
    let out = loom().args(["completions", "bash"]).output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(s.contains("_loom()") && s.contains("nes") && s.contains("python") && s.contains("lockstep"), "{}", &s[..s.len().min(400)]);
    let out = loom().args(["completions", "tcsh"]).output().unwrap();
    assert!(!out.status.success());
}

/// Bad input is named before the weave: a missing --stdin file, a host binary given as an RV32 program.
#[test]
fn bad_run_inputs_are_named_before_weaving() {
    let (code, stderr) = run_in_repo(&["run", "configs/rv32im.toml", "--stdin", "no-such-input.txt"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("--stdin no-such-input.txt: No such file"), "{stderr}");
    assert!(!stderr.contains("layers, hidden"), "named after weaving: {stderr}");
    let ls = std::path::Path::new("/bin/ls");
    if ls.exists() && std::fs::read(ls).unwrap().get(18) == Some(&62) {
        let (_, stderr) = run_in_repo(&["run", "configs/rv32im.toml", "/bin/ls"]);
        assert!(stderr.contains("a 64-bit x86-64 binary; expected 1 = ELFCLASS32"), "{stderr}");
    }
}

/// A negative step count is named as a bad value (status 2, clap's usage error), not taken for a flag.
#[test]
fn a_negative_step_count_is_a_bad_value() {
    for verb in ["run", "lockstep"] {
        let (code, stderr) = run_in_repo(&[verb, "configs/acc8.toml", "--max-steps", "-1"]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("invalid value '-1' for '--max-steps"), "{stderr}");
        assert!(!stderr.contains("use '-- -1'"), "{stderr}");
    }
}

/// Flags the machine does not take are blamed, not the config; `--frames 0` is refused before anything runs.
#[test]
fn flags_are_named_not_the_config() {
    let (code, stderr) = run_in_repo(&["run", "configs/rv32im.toml", "--load-at", "0x100"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.starts_with("error: --load-at: machine rv32im does not take this"), "{stderr}");
    let (code, stderr) = run_in_repo(&["run", "configs/6502-flat.toml", "--frames", "0"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("--frames must be at least 1"), "{stderr}");
    assert!(!stderr.contains("layers, hidden"), "{stderr}");
}

/// `loom cache` lists the woven machines with their size; `loom cache clear` removes them and nothing else.
#[test]
fn the_weave_cache_is_listed_and_cleared() {
    let root = scratch("weave-cache-verb");
    let entry = root.join("acc8-0123456789abcdef");
    std::fs::create_dir_all(&entry).unwrap();
    std::fs::write(entry.join("weights.safetensors"), vec![0u8; 1000]).unwrap();
    std::fs::write(root.join("notes.txt"), "mine").unwrap();
    let out = loom().env("LOOM_WEAVE_CACHE", &root).arg("cache").output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(s.contains(": 1 woven machines") && s.contains("acc8-0123456789abcdef"), "{s}");
    let out = loom().env("LOOM_WEAVE_CACHE", &root).args(["cache", "clear"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("removed 1 woven machines"));
    assert!(!entry.exists() && root.join("notes.txt").exists());
}
