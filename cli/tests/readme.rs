//! The README's commands, run as a newcomer runs them: every command of its `sh` blocks and every `loom ...`
//! it quotes inline, in a scratch directory beside the repository's `configs/` and `examples/` (so their
//! outputs never land in the checkout), each checked against what the README says it prints or writes. A few
//! run shorter than written, to keep CI's time (fewer NES frames, a one-layer random base, fewer text-check
//! positions: [`SHORTER`]). A command the README gains that this test does not know fails it, so the front door
//! cannot drift from what runs.

mod common;
use common::{loom, repo, scratch};
use std::path::Path;

/// Inline commands that name the user's own files (placeholders), or that only illustrate a flag: not run.
const NOT_RUN: &[&str] = &[
    "loom nes game.nes --frames 600 --png frames/ --input buttons.txt",
    "hf download Qwen/Qwen3.5-4B",
    "loom run --model",
];

/// `(what the README writes, what this test runs instead)`.
const SHORTER: &[(&str, &str)] = &[
    ("nes --frames 120 --gif demo.gif --wav demo.wav", "nes --frames 12 --gif demo.gif --wav demo.wav"),
    (
        "random-model --preset qwen3.5-0.8b --layout released --out base",
        "random-model --preset qwen3.5-0.8b --layout released --layers 1 --out base",
    ),
    ("text-check --base base --model grafted --positions 256 --json", "text-check --base base --model grafted --positions 16 --json"),
];

/// The README's commands in order: (the command as written, the fenced block right after its own block, if
/// that block is not a command block: what it prints).
fn readme_commands(readme: &str) -> Vec<(String, Option<String>)> {
    let mut cmds: Vec<(String, Option<String>)> = Vec::new();
    let mut lines = readme.lines().peekable();
    let mut last_sh_end: Option<usize> = None; // index in cmds after the last sh block
    let mut blocks_since_sh = 0;
    while let Some(line) = lines.next() {
        if let Some(lang) = line.strip_prefix("```") {
            let mut body = String::new();
            for l in lines.by_ref() {
                if l.starts_with("```") {
                    break;
                }
                body.push_str(l);
                body.push('\n');
            }
            if lang == "sh" {
                for l in body.lines().filter(|l| !l.trim().is_empty()) {
                    cmds.push((l.trim().to_string(), None));
                }
                last_sh_end = Some(cmds.len());
                blocks_since_sh = 0;
            } else if lang.is_empty() {
                blocks_since_sh += 1;
                // An unlabelled block right after a command block (only prose between) is its output.
                if blocks_since_sh == 1
                    && let Some(n) = last_sh_end
                    && n > 0
                    && cmds[n - 1].1.is_none()
                {
                    cmds[n - 1].1 = Some(body);
                }
            }
            continue;
        }
        // Inline code spans that are commands.
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 1 && (span.starts_with("loom ") || span.starts_with("hf download")) && !span.contains(['[', '|', '<']) {
                let words: Vec<&str> = span.split_whitespace().collect();
                let is_synopsis = words.iter().any(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase() || c == '.' || c == '_'));
                // `loom chat` in a sentence names a verb; `loom cache` and `loom --version` are whole commands.
                let names_a_verb = words.len() == 2 && words[0] == "loom" && !["cache", "--version"].contains(&words[1]);
                if !is_synopsis && !names_a_verb {
                    cmds.push((span.to_string(), None));
                }
            }
        }
    }
    cmds
}

fn link_repo_dirs(dir: &Path) {
    for d in ["configs", "examples"] {
        #[cfg(unix)]
        std::os::unix::fs::symlink(repo().join(d), dir.join(d)).unwrap();
    }
}

#[test]
fn every_readme_command_runs_as_the_readme_says() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let cmds = readme_commands(&readme);
    let dir = scratch("readme");
    link_repo_dirs(&dir);
    let cache = dir.join("weave-cache");
    let mut ran = 0;
    let mut run_output: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    for (cmd, printed) in &cmds {
        if cmd == "bash .ci/run" || NOT_RUN.contains(&cmd.as_str()) {
            continue;
        }
        let args_text = cmd
            .strip_prefix("cargo run --release -- ")
            .or_else(|| cmd.strip_prefix("loom "))
            .unwrap_or_else(|| panic!("the README's command `{cmd}` is not a loom command this test knows: add it here"));
        let args_text = SHORTER.iter().find(|(r, _)| *r == args_text).map_or(args_text, |(_, s)| *s);
        let args = shell_words(args_text);
        if !seen.insert(args.clone()) {
            continue; // quoted twice (a sh block and a table): run once
        }
        let mut c = loom();
        c.current_dir(&dir).args(&args);
        if args[0] == "cache" {
            c.env("LOOM_WEAVE_CACHE", &cache);
        }
        let t = std::time::Instant::now();
        let out = c.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("README: `{cmd}`: status {:?} in {:.1} s", out.status.code(), t.elapsed().as_secs_f64());
        assert!(out.status.success(), "`{cmd}` failed: {stdout}\n{stderr}");
        ran += 1;
        // What the README says each prints or writes.
        match args[0].as_str() {
            "run" if args.get(1).map(String::as_str) == Some("configs/rv32im.toml") && args.len() == 2 => {
                let shown = printed.as_ref().expect("the README shows what `run configs/rv32im.toml` prints");
                assert_eq!(&stdout, shown);
                run_output = Some(stdout);
            }
            "run" if args.get(1).map(String::as_str) == Some("--model") => {
                // "the run prints the demo's products as above"
                assert_eq!(Some(&stdout), run_output.as_ref(), "{stderr}");
            }
            "run" if args.iter().any(|a| a.ends_with("hello.elf")) => assert_eq!(stdout, "Hello from RV32IM!\n"),
            "run" if args.get(1).map(String::as_str) == Some("configs/6502-flat.toml") => {
                assert!(stdout.starts_with("Hello from a 6502 woven into Qwen3.5 weights!\n"), "{stdout}")
            }
            "python" => assert!(readme.contains(&format!("It prints `{}`", stdout.trim_end())), "{stdout}"),
            "cuda" => assert!(stdout.contains("check: agree: "), "{stdout}\n{stderr}"),
            "nes" => {
                for f in ["demo.gif", "demo.wav"] {
                    assert!(std::fs::metadata(dir.join(f)).is_ok_and(|m| m.len() > 1000), "{f}");
                }
            }
            "random-model" => assert!(dir.join("base/config.json").is_file()),
            "graft" => assert!(dir.join("grafted/model.safetensors").is_file() || dir.join("grafted/model.safetensors.index.json").is_file()),
            "text-check" => {
                let v: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
                assert_eq!(v["argmax_agreement"], 1.0, "{v:#}");
            }
            "chat" => {
                // The README's line up to the run's figures (instructions, tokens and seconds vary by build).
                let shown = printed.as_ref().expect("the README shows what `chat` prints");
                let head = &shown[..shown.find("\": ").expect("a [calc ...] line") + 3];
                assert!(stderr.contains(head), "{stderr}\nREADME: {shown}");
            }
            "--version" => assert!(stdout.starts_with("loom "), "{stdout}"),
            "completions" => assert!(stdout.contains("complete") && stdout.contains("loom"), "{stdout}"),
            "cache" => assert!(!stdout.is_empty() || !stderr.is_empty()),
            _ => panic!("the README's command `{cmd}` has no check here: add what the README says it does"),
        }
    }
    assert!(ran >= 12, "{ran} commands run: {cmds:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Splits a README command into arguments (single quotes group, as in a shell).
fn shell_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut any) = (false, false);
    for ch in s.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            c => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[test]
fn readme_commands_are_found() {
    let cmds = readme_commands(&std::fs::read_to_string(repo().join("README.md")).unwrap());
    let names: Vec<&str> = cmds.iter().map(|(c, _)| c.as_str()).collect();
    assert!(names.contains(&"cargo run --release -- run configs/rv32im.toml"), "{names:?}");
    assert!(names.contains(&"bash .ci/run"), "{names:?}");
    assert_eq!(shell_words("python -c 'print(2**100)'"), ["python", "-c", "print(2**100)"]);
}
