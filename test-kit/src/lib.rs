//! What the workspace's tests share, a dev-dependency only: where the shared test data and fixtures are, and
//! the one rule for what is missing. A test whose data or tool is missing says `SKIPPED: why` and returns; under
//! `CI=true` (`.ci/run` runs there) it fails instead, so CI never passes by skipping.

use std::path::{Path, PathBuf};

/// The repository root (the parent of this crate's folder).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("test-kit sits in the repository").to_path_buf()
}

/// Whether the tests run under CI (`CI=true`, or `1`), where a skip is a failure.
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Skip the calling test: print `SKIPPED: why`; under CI, panic with `why` instead.
#[track_caller]
pub fn skip(why: &str) {
    assert!(!ci(), "{why} (CI=true: a skip is a failure)");
    println!("SKIPPED: {why}");
}

/// The folder named by the environment variable `var` (a relative path is taken from the repository root), else
/// `default` under the repository root when there is one; `None` after [`skip`] when it is not given or does not
/// exist.
#[track_caller]
pub fn data_dir(var: &str, default: Option<&str>) -> Option<PathBuf> {
    let p = match (std::env::var(var), default) {
        (Ok(v), _) if !v.is_empty() => {
            let p = PathBuf::from(v);
            if p.is_absolute() { p } else { repo_root().join(p) }
        }
        (_, Some(d)) => repo_root().join(d),
        (_, None) => {
            skip(&format!("{var} is not set; e.g. {var}=../shared/testdata"));
            return None;
        }
    };
    if p.is_dir() {
        return Some(p);
    }
    skip(&format!("{} ({var}) does not exist", p.display()));
    None
}

/// `rel` under the shared test data, `$WEAVER_TESTDATA` (`.ci/run` sets it to `../shared/testdata` beside the
/// repository); `None` after [`skip`] when it is unset or the file does not exist.
#[track_caller]
pub fn testdata(rel: &str) -> Option<PathBuf> {
    let path = data_dir("WEAVER_TESTDATA", None)?.join(rel);
    if path.exists() {
        return Some(path);
    }
    skip(&format!("{} does not exist (needs {rel} of the shared test data)", path.display()));
    None
}

/// The shared Qwen3.5 fixtures' folder, `$WEAVER_FIXTURES` (default `../shared/fixtures` beside the repository);
/// `None` after [`skip`] when it does not exist.
#[track_caller]
pub fn fixtures_dir() -> Option<PathBuf> {
    data_dir("WEAVER_FIXTURES", Some("../shared/fixtures"))
}

/// The transformers check's python (`$WEAVER_HF_PYTHON`, a python with torch and transformers, which `.ci/run`
/// sets where it finds one) and greedy-decode script (`$WEAVER_HF_DECODE`, default `../shared/tools/hf_decode.py`
/// beside the repository). `None`, after `SKIPPED test: ...`, when the python is not named: transformers is an
/// outside oracle CI runs where the machine has it, so its absence is not a failure.
pub fn hf_setup(test: &str) -> Option<(String, PathBuf)> {
    let Some(python) = std::env::var("WEAVER_HF_PYTHON").ok().filter(|s| !s.is_empty()) else {
        println!("SKIPPED {test}: set WEAVER_HF_PYTHON to a python with torch + transformers");
        return None;
    };
    let script = std::env::var("WEAVER_HF_DECODE").map(PathBuf::from).unwrap_or_else(|_| repo_root().join("../shared/tools/hf_decode.py"));
    assert!(script.is_file(), "{} not found", script.display());
    Some((python, script))
}

/// A prompt for [`hf_decode`]: a JSON file of token ids, or the ids.
#[derive(Clone, Copy, Debug)]
pub enum HfPrompt<'a> {
    File(&'a Path),
    Ids(&'a [u32]),
}

/// Greedy-decode `new_tokens` tokens of checkpoint `dir` after `prompt` in transformers (`script`, see
/// [`hf_setup`]) with `prefill` = "chunked" or "stepwise"; the generated ids (the script feeds back its own argmax:
/// a trace, not teacher forcing). Panics, with the script's stderr, when it fails.
pub fn hf_decode(python: &str, script: &Path, dir: &Path, prompt: HfPrompt, new_tokens: usize, prefill: &str) -> Vec<u32> {
    let mut cmd = std::process::Command::new(python);
    cmd.arg(script).arg(dir);
    match prompt {
        HfPrompt::File(f) => cmd.arg("--prompt-file").arg(f),
        HfPrompt::Ids(ids) => cmd.args(["--prompt-ids", &ids.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(",")]),
    };
    let out = cmd.args(["--max-new-tokens", &new_tokens.to_string(), "--prefill", prefill]).output().expect("run hf_decode.py");
    assert!(out.status.success(), "hf_decode.py failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.trim_start().starts_with('{')).expect("hf_decode.py prints a JSON line");
    let v: serde_json::Value = serde_json::from_str(line).expect("hf_decode.py's JSON line");
    v["generated"].as_array().expect("a generated list").iter().map(|x| x.as_u64().expect("a token id") as u32).collect()
}
