//! RV32 programs as users build them, on the woven network (`configs/rv32im-64k.toml`, incremental executor):
//! the official riscv-tests, a program built here with Debian's cross toolchain, picolibc and the default
//! linker script (compared with qemu-riscv32), and a program that reads its standard input.

mod common;
use common::{loom, repo, scratch};
use std::path::Path;
use std::process::Command;

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// A tool the test needs: present, or SKIPPED (a failure under `CI=true`, where `.ci/run` installs it).
fn require(tool: &str, package: &str) -> bool {
    if have(tool) {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true but {tool} is not on PATH (apt-get install -y {package})");
    }
    eprintln!("SKIPPED: {tool} is not on PATH (apt-get install -y {package})");
    false
}

/// All 52 riscv-tests programs (rv32ui, rv32um, rv32uzba; not fence_i) pass on the woven machine, every
/// trace position equal to the circuit's reference and every instruction to the interpreter's.
#[test]
fn the_riscv_tests_pass_on_the_woven_machine() {
    let dir = repo().join("examples/rv32/riscv-tests/bin");
    let mut elfs: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    elfs.sort();
    assert_eq!(elfs.len(), 52);
    let out = loom().current_dir(repo()).args(["lockstep", "configs/rv32im-64k.toml"]).args(&elfs).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let passed = stdout.lines().filter(|l| l.contains("riscv-tests/bin/") && l.contains(" 0 ") && l.contains("exit 0")).count();
    assert_eq!(passed, 52, "{stdout}");
    assert!(stdout.contains(", 0 programs disagreeing"), "{stdout}");
}

/// What qemu-riscv32 prints and exits with for `elf` (standard input from `stdin`).
fn qemu(elf: &Path, stdin: &Path) -> (Vec<u8>, Option<i32>) {
    let out = Command::new("qemu-riscv32")
        .args(["-cpu", "rv32,c=false,a=false,f=false,d=false,zba=true"])
        .arg(elf)
        .stdin(std::fs::File::open(stdin).unwrap())
        .output()
        .unwrap();
    (out.stdout, out.status.code())
}

/// A program compiled and linked here as a user would (riscv64-unknown-elf-gcc, picolibc's printf, the
/// toolchain's default linker script: entry point after the ELF headers, .data and .bss in a second
/// segment, a _start that leaves sp to the loader) runs on the woven machine and prints and exits as under
/// qemu-riscv32.
#[test]
fn a_default_linked_program_runs_as_under_qemu() {
    if !require("riscv64-unknown-elf-gcc", "gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf") || !require("qemu-riscv32", "qemu-user") {
        return;
    }
    let picolibc = Path::new("/usr/lib/picolibc/riscv64-unknown-elf");
    assert!(picolibc.join("lib/rv32im/ilp32/libc.a").exists(), "picolibc for rv32im (apt-get install -y picolibc-riscv64-unknown-elf)");
    let src = repo().join("examples/rv32/user");
    let dir = scratch("rv32-default-linked");
    let elf = dir.join("hello.elf");
    let out = Command::new("riscv64-unknown-elf-gcc")
        // rv32im: Debian's picolibc and libgcc have no rv32im_zba multilib to link against.
        .args(["-march=rv32im", "-mabi=ilp32", "-Os", "-nostdlib", "-Wall", "-Werror"])
        .arg("-isystem")
        .arg(picolibc.join("include"))
        .arg(format!("-L{}", picolibc.join("lib/rv32im/ilp32").display()))
        .args(["start.S", "syscalls.c", "hello.c", "-lc", "-lgcc", "-o"])
        .arg(&elf)
        .current_dir(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The default linker script: the entry point is not the start of the first segment.
    let img = isa_rv32im::parse_elf(&std::fs::read(&elf).unwrap()).unwrap();
    assert_eq!(img.segments[0].vaddr, 0x10000);
    assert_ne!(img.entry, 0x10000);
    assert!(img.segments.len() >= 2, "text and data segments");
    let (q_out, q_status) = qemu(&elf, Path::new("/dev/null"));
    assert_eq!(q_status, Some(3));
    let out = loom().current_dir(repo()).args(["run", "--no-progress", "configs/rv32im-64k.toml"]).arg(&elf).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&q_out));
    assert_eq!(out.status.code(), q_status, "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// examples/rv32/user/factor.elf reads numbers from its standard input (read(2) on fd 0, bytes injected as
/// the machine asks) and prints their factorisations: on the woven machine with `--stdin`, what qemu-riscv32
/// printed when it was built; and in lockstep, with the interpreter reading the bytes the trace delivered.
#[test]
fn the_factor_example_reads_its_input_in_the_network() {
    let user = repo().join("examples/rv32/user");
    let want = std::fs::read_to_string(user.join("expected/factor.out")).unwrap();
    assert!(want.contains("360360 = 2 * 2 * 2 * 3 * 3 * 5 * 7 * 11 * 13"), "{want}");
    let out = loom()
        .current_dir(repo())
        .args(["run", "--no-progress", "configs/rv32im-64k.toml", "examples/rv32/user/bin/factor.elf", "--stdin", "examples/rv32/user/factor.in"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    if have("qemu-riscv32") {
        let (q_out, q_status) = qemu(&user.join("bin/factor.elf"), &user.join("factor.in"));
        assert_eq!((String::from_utf8_lossy(&q_out).to_string(), q_status), (want.clone(), Some(0)));
    }
    // Standard input from this process when there is no --stdin; a line that is not a number: exit 1.
    let mut child = loom()
        .current_dir(repo())
        .args(["run", "--no-progress", "configs/rv32im-64k.toml", "examples/rv32/user/bin/factor.elf"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"91\nnine\n").unwrap();
    let out = child.wait_with_output().unwrap();
    // The machine has one console: fd 2 writes to it too.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "91 = 7 * 13\nfactor: not a number\n");
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
}
