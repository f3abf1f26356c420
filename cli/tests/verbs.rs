//! The command line as a user's habits expect it (cli/README.md, "One meaning per flag"): every verb's `--help`
//! is read, and a flag name means one thing in every verb that has it.

mod common;
use common::*;
use std::collections::BTreeMap;

/// The verbs `loom --help` lists (but `help`).
fn verbs() -> Vec<String> {
    let out = loom().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let commands = text.split("Commands:").nth(1).expect("a Commands section").split("Options:").next().unwrap();
    commands
        .lines()
        .filter_map(|l| l.strip_prefix("  ").and_then(|l| l.split_whitespace().next()).filter(|_| !l.starts_with("   ")))
        .filter(|v| *v != "help")
        .map(String::from)
        .collect()
}

/// Each long flag of `loom VERB --help` with its help text (the lines up to the next flag).
fn flags(verb: &str) -> BTreeMap<String, String> {
    let out = loom().args([verb, "--help"]).output().unwrap();
    assert!(out.status.success(), "loom {verb} --help");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut flags = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let t = line.trim_start();
        let long = t.strip_prefix("--").or_else(|| t.strip_prefix("-").and_then(|r| r.split_once(", --").map(|(_, f)| f)));
        if let Some(f) = long.filter(|_| line.starts_with("  ")) {
            let name: String = f.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            flags.insert(name.clone(), t.to_string());
            current = Some(name);
        } else if let Some(c) = &current {
            flags.get_mut(c).unwrap().push_str(&format!(" {t}"));
        }
    }
    flags
}

#[test]
fn one_meaning_per_flag_across_every_verb() {
    let verbs = verbs();
    for v in ["run", "bench-run", "eval", "lockstep", "nes", "python", "cuda", "weave", "graft", "generate", "text-check", "chat"] {
        assert!(verbs.iter().any(|x| x == v), "loom --help lists {v}: {verbs:?}");
    }
    let all: BTreeMap<String, BTreeMap<String, String>> = verbs.iter().map(|v| (v.clone(), flags(v))).collect();
    let with = |flag: &str| -> Vec<&str> { all.iter().filter(|(_, f)| f.contains_key(flag)).map(|(v, _)| v.as_str()).collect() };
    let executors = ["sparse", "incremental", "jit", "ndarray", "flex", "wgpu"];
    for (verb, fl) in &all {
        // Every executor flag is typed and lists every executor.
        for (name, help) in fl.iter().filter(|(n, _)| n.ends_with("executor") || *n == "executors") {
            for e in executors {
                assert!(help.contains(e), "loom {verb} --{name} lists {e}: {help}");
            }
        }
        // The config is a positional argument (graft's is its --machine): no verb takes --config.
        assert!(!fl.contains_key("config"), "loom {verb} takes --config");
    }
    // --out is a checkpoint directory written, nothing else.
    assert_eq!(with("out"), ["graft", "random-model", "weave"]);
    // Frames as PNGs are --png; buttons and keys by frame are --input; in every verb that runs devices.
    for flag in ["png", "gif", "input", "frames"] {
        assert_eq!(with(flag), ["bench-run", "eval", "nes", "run"], "--{flag}");
    }
    assert!(with("keys").is_empty(), "--keys: {:?}", with("keys"));
    // Figures as JSON on every verb that prints figures; no progress line on every verb that shows one.
    for v in ["bench-executors", "bench-generate", "bench-run", "chat", "eval", "graft", "lockstep", "nes", "text-check", "weave"] {
        assert!(all[v].contains_key("json"), "loom {v} --json");
    }
    for v in ["bench-run", "cuda", "eval", "lockstep", "nes", "python", "run", "text-check"] {
        assert!(all[v].contains_key("no-progress"), "loom {v} --no-progress");
    }
    // A flag that only some machines take is refused by name elsewhere, not ignored: --load-at and --pc go where a
    // config is woven.
    assert_eq!(with("load-at"), ["bench-run", "eval", "lockstep", "run"]);
}

/// `loom eval` runs a program on the reference evaluator with `loom run`'s devices: the trace equals the woven
/// network's, token for token, injections included (paint8's keys and clock); the console and status are the
/// program's; flags of the network (`--executor`, `--model`) are not its flags.
#[test]
fn eval_writes_the_network_trace_without_weaving() {
    let dir = scratch("eval");
    let trace = |verb: &str, args: &[&str], name: &str| -> (serde_json::Value, String, Option<i32>) {
        let t = dir.join(name);
        let out = loom().current_dir(repo()).arg(verb).args(args).arg("--trace").arg(&t).arg("--no-progress").output().unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&t).unwrap()).unwrap();
        (v, String::from_utf8_lossy(&out.stdout).to_string(), out.status.code())
    };
    let hello = ["configs/rv32im-64k.toml", "examples/rv32/bin/hello.elf"];
    let (net, net_out, net_code) = trace("run", &hello, "hello-run.json");
    let (reference, ref_out, ref_code) = trace("eval", &hello, "hello-eval.json");
    assert_eq!(net, reference);
    assert!(net["generated"].as_array().unwrap().len() > 300);
    assert_eq!((ref_out.as_str(), ref_code), (net_out.as_str(), net_code));
    assert_eq!(ref_out, "Hello from RV32IM!\n");
    let paint = ["configs/paint8.toml", "--frames", "40"];
    let (net, _, _) = trace("run", &paint, "paint-run.json");
    let (reference, _, code) = trace("eval", &paint, "paint-eval.json");
    assert_eq!(code, Some(0));
    assert!(!reference["injected"].as_array().unwrap().is_empty());
    assert_eq!(net, reference);
    for flag in [["--executor", "sparse"], ["--model", "x"]] {
        let out = loom().current_dir(repo()).args(["eval", "configs/acc8.toml"]).args(flag).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "eval {flag:?}: a usage error");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
