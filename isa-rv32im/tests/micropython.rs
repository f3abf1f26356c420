//! The MicroPython firmware (`examples/rv32/micropython`) on the reference interpreter, and under qemu-riscv32
//! when it is on PATH: it reads the script from standard input, prints what Python prints, exits 0 (1 after
//! an uncaught exception). The woven network runs it in `cli/tests/python.rs`.

use isa_rv32im::examples::{MICROPYTHON_ELF, MICROPYTHON_RAM};
mod common;
use isa_rv32im::{Config, Stop, load_elf};

/// Runs `script` on the interpreter: (console, exit code, instructions).
fn run(script: &str) -> (String, i32, u64) {
    let mut cpu = load_elf(MICROPYTHON_ELF, Config { ram_base: 0x10000, ram_size: MICROPYTHON_RAM }).unwrap();
    cpu.push_input(script.as_bytes());
    let r = cpu.run(50_000_000).unwrap();
    let Stop::Exit(code) = r.stop else { panic!("{:?}", r.stop) };
    (String::from_utf8(r.output).unwrap(), code, r.steps)
}

#[test]
fn micropython_prints_two_to_the_hundred() {
    let (out, code, n) = run("print(2**100)\n");
    assert_eq!(out, "1267650600228229401496703205376\n");
    assert_eq!(code, 0);
    eprintln!("print(2**100): {n} instructions");
    assert!((50_000..100_000).contains(&n), "{n}");
}

/// Every `scripts/NAME.py` with a `scripts/NAME.out` beside it prints that file, which is CPython's output of it
/// (checked against a `python3` on PATH when there is one): `features.py` (floats, f-strings, `%` and
/// str.format, dicts, classes, exceptions, math), `text.py` (string methods, unicode, generators, formatting
/// tables), `numbers.py` (big integers, float formatting, math, struct, namedtuple, OrderedDict, operator
/// methods, the exception hierarchy).
#[test]
fn micropython_prints_what_cpython_prints() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/rv32/micropython/scripts");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok()?.strip_suffix(".out").map(String::from))
        .collect();
    names.sort();
    assert_eq!(names, ["features", "numbers", "text"]);
    let python3 = std::process::Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success());
    if !python3 {
        eprintln!("SKIPPED the CPython half: no python3 on PATH");
    }
    for name in &names {
        let script = std::fs::read_to_string(dir.join(format!("{name}.py"))).unwrap();
        let expected = std::fs::read_to_string(dir.join(format!("{name}.out"))).unwrap();
        let (out, code, n) = run(&script);
        assert_eq!((out.as_str(), code), (expected.as_str(), 0), "{name}.py");
        eprintln!("{name}.py: {n} instructions");
        assert!(script.lines().count() >= 25 && expected.lines().count() >= 10, "{name}");
        if python3 {
            let o = std::process::Command::new("python3").arg(dir.join(format!("{name}.py"))).output().unwrap();
            assert_eq!(String::from_utf8_lossy(&o.stdout), expected, "CPython's output of {name}.py");
        }
    }
}

/// Single-precision floats as MicroPython prints them (the shortest digits that read back as the same 32-bit
/// float: 1/3 prints 0.33333334, where CPython's double prints 0.3333333333333333), `%` with its operator named in errors, and
/// tracebacks that name the line.
#[test]
fn micropython_floats_formatting_and_tracebacks() {
    let (out, code, _) = run("print(7/2, 1/3, 2**0.5, 1e10, float('inf'))\nprint('%d|%5.2f|%s' % (5, 3.14159, 'ok'), f'{2.5:06.2f}')\n");
    assert_eq!((out.as_str(), code), ("3.5 0.33333334 1.4142135 10000000000.0 inf\n5| 3.14|ok 002.50\n", 0));
    let (out, code, _) = run("x = 1\n\ndef f(y):\n    return y / 0\nf(x)\n");
    assert_eq!(code, 1);
    assert_eq!(
        out,
        "Traceback (most recent call last):\n  File \"<stdin>\", line 5, in <module>\n  File \"<stdin>\", line 4, in f\nZeroDivisionError: divide by zero\n"
    );
    let (out, code, _) = run("print('a' - 1)\n");
    assert_eq!(code, 1);
    assert!(out.ends_with("TypeError: unsupported types for __sub__: 'str', 'int'\n"), "{out}");
    let (out, _, _) = run("print(f'{1+}')\n");
    assert!(out.contains("SyntaxError"), "{out}");
    // Unicode strings, frozensets, OrderedDict and math.factorial (MicroPython's extra-features level).
    let (out, code, _) = run("import collections, math\nprint(len('\u{e9}t\u{e9}'), frozenset([1]), collections.OrderedDict(b=1, a=2), math.factorial(20))\n");
    assert_eq!((out.as_str(), code), ("3 frozenset({1}) OrderedDict({'b': 1, 'a': 2}) 2432902008176640000\n", 0));
}

/// sys.exit's status is the firmware's exit status (None: 0; another value is printed, status 1), as in
/// CPython (which prints that value on standard error; the machine has one console).
#[test]
fn micropython_sys_exit_sets_the_exit_status() {
    let (out, code, _) = run("import sys\nprint(sys.platform, sys.maxsize)\nsys.exit(3)\nprint('not here')\n");
    assert_eq!((out.as_str(), code), ("loom-rv32im 2147483647\n", 3));
    let (out, code, _) = run("import sys\nsys.exit()\n");
    assert_eq!((out.as_str(), code), ("", 0));
    let (out, code, _) = run("raise SystemExit('bye')\n");
    assert_eq!((out.as_str(), code), ("bye\n", 1));
}

#[test]
fn micropython_runs_a_script_and_reports_exceptions() {
    let (out, code, _) = run("squares = [i * i for i in range(6)]\nprint(sum(squares), squares[-2:])\nprint('-'.join('a b c'.split()))\n");
    assert_eq!((out.as_str(), code), ("55 [16, 25]\na-b-c\n", 0));
    let (out, code, _) = run("x = 1\nprint(x // 0)\n");
    assert_eq!(code, 1);
    assert!(out.ends_with("ZeroDivisionError: divide by zero\n"), "{out}");
    let (out, code, _) = run("print(\n");
    assert_eq!(code, 1);
    assert!(out.contains("SyntaxError"), "{out}");
    // Deep recursion stops at the stack limit with an exception, not by overwriting the heap.
    let (out, code, _) = run("def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nprint(f(20))\nprint(f(100000))\n");
    assert_eq!(code, 1);
    assert!(out.starts_with("20\n") && out.ends_with("RuntimeError: maximum recursion depth exceeded\n"), "{out}");
    // Too little RAM is a load error naming the segment.
    let e = load_elf(MICROPYTHON_ELF, Config { ram_base: 0x10000, ram_size: 256 * 1024 }).unwrap_err();
    assert!(e.to_string().contains("lies outside RAM"), "{e}");
}

#[test]
fn micropython_prints_the_same_under_qemu() {
    if !common::qemu_or_skip() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("loom-micropython-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let elf = dir.join("micropython.elf");
    std::fs::write(&elf, MICROPYTHON_ELF).unwrap();
    #[cfg(unix)]
    std::fs::set_permissions(&elf, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let features = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/rv32/micropython/scripts/features.py")).unwrap();
    for script in ["print(2**100)\n", "x = 2**100\nprint(x, x * x + 1)\n", "print(1 // 0)\n", "print(7/2, f'{1/3:.4f}', '%e' % 2.5)\n", &features] {
        let mut child = std::process::Command::new("qemu-riscv32")
            .args(["-cpu", "rv32,c=false,a=false,f=false,d=false,zba=true"])
            .arg(&elf)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), script.as_bytes()).unwrap();
        let q = child.wait_with_output().unwrap();
        let (out, code, _) = run(script);
        assert_eq!((String::from_utf8_lossy(&q.stdout).to_string(), q.status.code()), (out, Some(code)), "{script}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A first byte Ctrl-B (0x02) starts a line-by-line session: prompts, expression values, a compound
/// statement ended by an empty line, an exception that does not end the session; the end of input ends it.
#[test]
fn micropython_session_runs_line_by_line() {
    let (out, code, _) = run("\u{2}x = 6\nx * 7\nfor i in range(2):\n    print(i)\n\nx / 0\n'still here'\n");
    assert_eq!(code, 0);
    assert_eq!(
        out,
        ">>> >>> 42\n>>> ... ... 0\n1\n>>> Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\nZeroDivisionError: divide by zero\n>>> 'still here'\n>>> \n"
    );
    let (out, code, _) = run("\u{2}import sys\nsys.exit(5)\nprint('not here')\n");
    assert_eq!((out.as_str(), code), (">>> >>> ", 5));
}
