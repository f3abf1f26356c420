//! `loom chat` on a grafted checkpoint: a random base of Qwen3.5-4B's layer shape (one base layer) with the RV32IM
//! machine in front (and one of 0.8B's shape, widened to hold it), the calc firmware answering tool calls in the machine's layers. Checks the exact product
//! of the README's example, two mul_big problems, the errors of calls that cannot give a number (malformed
//! expression, division by zero, an unknown tool, the step limit), that the base reads the same text context as
//! with the answers typed in, and the refusals of a model that is not a graft and of a malformed conversation.

mod common;

use common::{loom, repo, scratch};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn run_json(cmd: &mut std::process::Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// A random base of a released shape (`preset`, one decoder layer, released layout, tokenizer files) and
/// RV32IM grafted onto it (with `extra` graft flags): (scratch dir, graft dir).
fn graft_on(preset: &str, extra: &[&str]) -> (PathBuf, PathBuf) {
    let d = scratch(&format!("chat-{preset}"));
    let base = d.join("base");
    let g = d.join("graft");
    let out = loom().args(["random-model", "--preset", preset, "--layers", "1", "--layout", "released", "--out"]).arg(&base).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = loom()
        .args(["graft", "--base"])
        .arg(&base)
        .arg("--machine")
        .arg(repo().join("configs/rv32im-64k.toml"))
        .arg("--out")
        .arg(&g)
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (d, g)
}

/// RV32IM grafted onto a Qwen3.5-4B-shaped base, in the base's own layer shape.
fn graft() -> (PathBuf, PathBuf) {
    graft_on("qwen3.5-4b", &[])
}

fn chat(g: &Path, messages: &Path, extra: &[&str]) -> Value {
    run_json(loom().args(["chat", "--json", "--model"]).arg(g).arg("--messages").arg(messages).args(extra))
}

#[test]
fn calc_calls_are_answered_in_the_machine_layers() {
    let (d, g) = graft();
    let examples = repo().join("examples/chat");

    // The README's example: the product comes out of the network's trace, then the base writes two tokens.
    let v = chat(&g, &examples.join("calc.json"), &["--max-tokens", "2"]);
    assert_eq!(v["tool_responses"], serde_json::json!(["121932631112635269"]), "{v:#}");
    assert_eq!(v["tool_calls"][0]["name"], "calc");
    assert_eq!(v["tool_calls"][0]["arguments"]["expression"], "123456789*987654321");
    let run = &v["tool_runs"][0];
    assert_eq!(run["status"], "ok");
    assert!(run["instructions"].as_u64().unwrap() > 1000, "{run}");
    assert!(run["trace_tokens"].as_u64().unwrap() > run["load_tokens"].as_u64().unwrap());
    assert!((1..=2).contains(&v["tokens"].as_u64().unwrap()), "{v:#}");

    // Calls run from a copy of the session that read the firmware once; loading it afresh gives the same trace.
    let (once, fresh) = (d.join("once"), d.join("fresh"));
    chat(&g, &examples.join("calc.json"), &["--max-tokens", "0", "--trace-dir", once.to_str().unwrap()]);
    chat(&g, &examples.join("calc.json"), &["--max-tokens", "0", "--reload-firmware", "--trace-dir", fresh.to_str().unwrap()]);
    let (a, b) = (std::fs::read(once.join("call-1.json")).unwrap(), std::fs::read(fresh.join("call-1.json")).unwrap());
    assert!(a.len() > 100_000 && a == b, "the traces differ ({} and {} bytes)", a.len(), b.len());

    // The base's context after the tool round is the conversation with the answer typed in: the same reply.
    let typed = d.join("typed.json");
    let mut conv: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(examples.join("calc.json")).unwrap()).unwrap();
    conv.push(serde_json::json!({"role": "tool", "content": "121932631112635269"}));
    std::fs::write(&typed, serde_json::to_vec(&conv).unwrap()).unwrap();
    let t = chat(&g, &typed, &["--max-tokens", "2"]);
    assert_eq!(t["tool_calls"], serde_json::json!([]));
    assert_eq!(t["reply"], v["reply"], "typed-in answer: {t:#}\ncalled: {v:#}");
    assert_eq!(t["text_tokens_read"], v["text_tokens_read"]);

    // Calls that cannot give a number answer with an error, and the chat goes on.
    let v = chat(&g, &examples.join("bad-calls.json"), &["--max-tokens", "0", "--max-tool-steps", "3000"]);
    let r: Vec<&str> = v["tool_responses"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert_eq!(r[0], "error: expected a number at the end of the expression", "{v:#}");
    assert_eq!(r[1], "error: division by zero");
    assert_eq!(r[2], "error: unknown tool \"weather\"; the tools are: calc, run_c");
    assert_eq!(r[3], "error: calc did not finish within 3000 machine steps");
    let status: Vec<&str> = v["tool_runs"].as_array().unwrap().iter().map(|s| s["status"].as_str().unwrap()).collect();
    assert_eq!(status, ["program error", "program error", "unknown tool", "step limit"]);

    // run_c: a C program the model wrote, compiled by the cross gcc, run on the machine; and one that does not compile.
    let v = chat(&g, &examples.join("run_c.json"), &["--max-tokens", "0"]);
    let r: Vec<&str> = v["tool_responses"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    if std::process::Command::new("riscv64-unknown-elf-gcc").arg("--version").output().is_ok_and(|o| o.status.success()) {
        assert_eq!(r[0], "2432902008176640000", "{v:#}");
        assert!(r[1].starts_with("error: the program does not compile:\nmain.c:1:25: error: 'x' undeclared"), "{v:#}");
    } else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "riscv64-unknown-elf-gcc is missing under CI=true");
        println!("SKIPPED: run_c's programs (riscv64-unknown-elf-gcc is missing); its answer: {}", r[0]);
        assert!(r[0].starts_with("error: run_c needs riscv64-unknown-elf-gcc"), "{v:#}");
    }

    // Two mul_big problems (the calls given, as a random base writes none).
    let v = run_json(loom().args(["chat", "--json", "--limit", "2", "--model"]).arg(&g).arg("--bench-mul-big").arg(examples.join("mul_big.json")));
    assert_eq!(v["problems"], 2);
    assert_eq!(v["correct"], 2, "{v:#}");

    // A model that is not a graft, and a conversation that is not one, are named.
    let e = loom().args(["chat", "--model"]).arg(d.join("base")).arg("--messages").arg(examples.join("calc.json")).output().unwrap();
    assert!(!e.status.success());
    assert!(String::from_utf8_lossy(&e.stderr).contains("is not a grafted checkpoint"), "{}", String::from_utf8_lossy(&e.stderr));
    let bad = d.join("bad.json");
    std::fs::write(&bad, r#"[{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}]"#).unwrap();
    let e = loom().args(["chat", "--model"]).arg(&g).arg("--messages").arg(&bad).output().unwrap();
    assert!(!e.status.success());
    assert!(String::from_utf8_lossy(&e.stderr).contains("message 1 has role \"robot\""), "{}", String::from_utf8_lossy(&e.stderr));
    let _ = std::fs::remove_dir_all(&d);
}

/// Qwen3.5-0.8B's shape is narrower than the machine (hidden 1,024, 16 DeltaNet heads a layer): grafted with
/// `--widen`, the calculator answers the README's example and two mul_big problems exactly.
#[test]
fn calc_calls_on_the_widened_0_8b_shape() {
    let (d, g) = graft_on("qwen3.5-0.8b", &["--widen"]);
    let gm: Value = serde_json::from_str(&std::fs::read_to_string(g.join("graft.json")).unwrap()).unwrap();
    assert_eq!(gm["base"]["hidden_size"], 1024);
    assert!(gm["widened"]["hidden_size"].as_u64().unwrap() > 1024, "{gm:#}");
    let examples = repo().join("examples/chat");
    let v = chat(&g, &examples.join("calc.json"), &["--max-tokens", "0"]);
    assert_eq!(v["tool_responses"], serde_json::json!(["121932631112635269"]), "{v:#}");
    let v = run_json(loom().args(["chat", "--json", "--limit", "2", "--model"]).arg(&g).arg("--bench-mul-big").arg(examples.join("mul_big.json")));
    assert_eq!(v["correct"], 2, "{v:#}");
    let _ = std::fs::remove_dir_all(&d);
}
