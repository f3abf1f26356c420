//! The commit `loom --version` names: `git rev-parse --short=12 HEAD` at build time, with `-dirty` when the
//! work tree has changes; `unknown commit` outside a git checkout (a source tarball).

fn main() {
    let git = |args: &[&str]| std::process::Command::new("git").args(args).output().ok().filter(|o| o.status.success()).map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let commit = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(c) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
            format!("commit {c}{}", if dirty { "-dirty" } else { "" })
        }
        None => "unknown commit".to_string(),
    };
    println!("cargo:rustc-env=LOOM_COMMIT={commit}");
    // A new commit or checkout changes HEAD or the branch it points at.
    for p in ["../.git/HEAD", "../.git/index"] {
        println!("cargo:rerun-if-changed={p}");
    }
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        println!("cargo:rerun-if-changed=../.git/{r}");
    }
}
