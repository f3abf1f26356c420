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
