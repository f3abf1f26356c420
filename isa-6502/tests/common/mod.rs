//! Helpers shared by the tests that read `$WEAVER_TESTDATA`.

use std::path::PathBuf;

/// The path of `rel` under `$WEAVER_TESTDATA` (CI sets it to the shared test data). When the variable is unset
/// or the file is missing: `None` after a `SKIPPED:` line, except under `CI=true`, where it is a test failure.
pub fn testdata_file(rel: &str) -> Option<PathBuf> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let Some(dir) = std::env::var_os("WEAVER_TESTDATA") else {
        assert!(!ci, "CI=true but WEAVER_TESTDATA is not set (needs {rel})");
        eprintln!("SKIPPED: WEAVER_TESTDATA is not set (needs {rel}); e.g. WEAVER_TESTDATA=../shared/testdata");
        return None;
    };
    let path = PathBuf::from(dir).join(rel);
    if path.exists() {
        return Some(path);
    }
    assert!(!ci, "CI=true but {} does not exist", path.display());
    eprintln!("SKIPPED: {} does not exist", path.display());
    None
}
