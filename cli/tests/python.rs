//! `loom python`: MicroPython (examples/rv32/micropython) in the woven RV32IM machine of the built-in
//! configs/rv32im-512k.toml, the script fed as the firmware's standard input; and a lockstep stretch of the
//! firmware on the network against the circuit's reference and the interpreter.

mod common;
use common::{loom, repo};

#[test]
fn loom_python_prints_two_to_the_hundred_from_the_network() {
    let t = std::time::Instant::now();
    let out = loom().current_dir(repo()).args(["python", "-c", "print(2**100)"]).output().unwrap();
    let secs = t.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1267650600228229401496703205376\n", "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("[loom python: exit 0;") && stderr.contains("512 KiB RAM at 0x10000"), "{stderr}");
    // The header `run` prints (the machine woven or loaded, and the executor), after nothing but the progress
    // lines of its preparation (one every 5 s: its spinner reads "weaving ...", then while the weave is stored
    // "caching the woven ...", then "building the incremental executor"; a slow step can show any of them).
    let header = stderr.lines().position(|l| l.starts_with("rv32im: ") && l.contains(" executor ready in "));
    let progress = |l: &str| {
        ["weaving rv32im 512 KiB RAM", "caching the woven rv32im in ", "building the incremental executor"].iter().any(|m| l.contains(m))
    };
    assert!(header.is_some_and(|h| stderr.lines().take(h).all(progress)), "{stderr}");
    // Standard error is not a terminal here: the progress comes as a plain line every 5 s.
    if secs > 8.0 {
        assert!(stderr.lines().any(|l| !l.starts_with('[') && l.contains(" instructions, ") && l.contains(" steps, ")), "{secs:.1} s: {stderr}");
    }
}

/// The first 20,000 steps of MicroPython compiling and running a script, on the network in lockstep: every
/// position equal to the circuit's reference, every instruction to the interpreter's. (The whole run of
/// scripts/lockstep.py, 158,870 instructions, is quoted in docs/benchmarks.md.)
#[test]
fn micropython_runs_in_lockstep_on_the_network() {
    let out = loom()
        .current_dir(repo())
        .args(["lockstep", "configs/rv32im-512k.toml", "examples/rv32/micropython/bin/micropython.elf", "--stdin", "examples/rv32/micropython/scripts/lockstep.py", "--max-steps", "20000"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = stdout.lines().find(|l| l.contains("micropython.elf")).unwrap();
    let cols: Vec<&str> = line.split_whitespace().collect();
    // program, instructions, steps, tokens, mismatches, end ...
    assert_eq!(cols[2], "20000", "{line}");
    assert_eq!(cols[4], "0", "{line}");
    assert!(cols[1].parse::<u64>().unwrap() > 18_000, "{line}");
    assert!(stdout.contains(", 0 programs disagreeing"), "{stdout}");
}

#[test]
fn loom_python_refuses_what_it_cannot_run() {
    let run = |args: &[&str]| {
        let out = loom().current_dir(repo()).args(args).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (code, e) = run(&["python", "-i", "a.py"]);
    assert_eq!(code, Some(1));
    assert!(e.contains("-i starts a session and takes no script"), "{e}");
    let (code, e) = run(&["python", "-i", "-c", "print(1)"]);
    assert_eq!(code, Some(2), "{e}");
    let (code, e) = run(&["python", "configs/acc8.toml", "-c", "print(1)"]);
    assert_eq!(code, Some(1));
    assert!(e.contains("not rv32im"), "{e}");
    let (code, e) = run(&["python", "configs/rv32im.toml", "-c", "print(1)"]);
    assert_eq!(code, Some(1));
    assert!(e.contains("configs/rv32im.toml: MicroPython needs 512 KiB of RAM") && e.contains("lies outside RAM"), "{e}");
    let (code, e) = run(&["python", "no-such-script.py"]);
    assert_eq!(code, Some(1));
    assert!(e.contains("reading no-such-script.py"), "{e}");
    // Arguments are not guessed by position: a config ends in .toml and comes first.
    let (code, e) = run(&["python", "a.py", "-c", "print(1)"]);
    assert_eq!(code, Some(1));
    assert!(e.contains("give a script or -c CODE, not both (a.py is not a config: a config ends in .toml)"), "{e}");
    let (code, e) = run(&["python", "a.py", "b.py"]);
    assert_eq!(code, Some(1));
    assert!(e.contains("one script at a time (a.py is not a config"), "{e}");
    let (code, e) = run(&["python", "a.py", "configs/rv32im.toml"]);
    assert_eq!(code, Some(1));
    assert!(e.contains("the config goes first: loom python configs/rv32im.toml a.py"), "{e}");
}

/// `loom python -` reads the script from standard input; floats and f-strings on the network.
#[test]
fn loom_python_reads_the_script_from_standard_input() {
    use std::io::Write;
    let mut child = loom()
        .current_dir(repo())
        .args(["python", "-", "--no-progress"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"x = 7\nprint(f'{x/2:.2f}', x / 4)\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "3.50 1.75\n", "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// A session (`loom python -i`, what `loom python` starts on a terminal): prompts, expression values, a compound
/// statement over several lines, an exception that does not end it, `sys.exit`'s status; and `loom python
/// [CONFIG]` with no script and standard input not a terminal runs standard input as the script, as CPython does.
#[test]
fn loom_python_runs_a_session_line_by_line() {
    use std::io::Write;
    let talk = |args: &[&str], input: &[u8]| {
        let mut child = loom()
            .current_dir(repo())
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (code, out, err) = talk(&["python", "-i"], b"x = 6\nx * 7\nfor i in range(2):\n    print(i / 2)\n\n1 / 0\nimport sys\nsys.exit(4)\n");
    assert_eq!(code, Some(4), "{err}");
    assert_eq!(
        out,
        ">>> >>> 42\n>>> ... ... 0.0\n0.5\n>>> Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\nZeroDivisionError: divide by zero\n>>> >>> ",
        "{err}"
    );
    assert!(err.contains("Ctrl-D ends"), "{err}");
    // A config and no script: the same (the config's machine runs the piped script).
    let (code, out, err) = talk(&["python", "configs/rv32im-512k.toml", "--no-progress"], b"print(6 * 7)\n");
    assert_eq!((code, out.as_str()), (Some(0), "42\n"), "{err}");
}
