//! `loom run configs/rv32im.toml [program.elf]`: the RV32IM+Zba machine woven from the committed config runs
//! programs in the weights (the config's executor: incremental). The built-in demo prints the exact bignum products and its
//! trace replays, instruction by instruction, in lockstep with the reference interpreter; a fault, the step
//! limit and bad inputs end with clear reports and exit statuses.


mod common;
use common::*;

#[test]
fn the_demo_prints_exact_products_and_replays_against_the_interpreter() {
    let dir = scratch("demo");
    let trace = dir.join("trace.json");
    let out = loom()
        .current_dir(repo())
        .args(["run", "configs/rv32im.toml", "--no-progress", "--trace"])
        .arg(&trace)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("123456789 x 987654321 = 121932631112635269\n"), "{stdout}");
    let demo = isa_rv32im::examples::example("demo").unwrap();
    assert_eq!(stdout.as_bytes(), demo.expected_stdout, "console equals qemu-riscv32's");
    assert!(stderr.contains("[loom: exit 0;"), "{stderr}");

    // The trace replays in lockstep with the interpreter: pc and x0..x31 after every instruction.
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let generated: Vec<u32> = t["generated"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
    assert_eq!(t["injected"].as_array().unwrap().len(), 0);
    let opts = isa_rv32im::Rv32MachineOptions::ram_256k(); // configs/rv32im.toml
    let desc = isa_rv32im::rv32im_machine(&opts).unwrap();
    let proto = isa_api::Protocol::of(&desc);
    let cpu = isa_rv32im::load_elf(demo.elf, opts.interp_config()).unwrap();
    let rep = isa_rv32im::lockstep::trace_lockstep(&proto, &generated, cpu, &opts).expect("lockstep");
    assert_eq!(rep.output, demo.expected_stdout);
    assert_eq!(rep.end, isa_rv32im::lockstep::LockstepEnd::Exit(0));
    assert!(rep.instructions > 600, "{} instructions", rep.instructions);
    eprintln!("demo: {} instructions, {} generated tokens compared with the interpreter, 0 mismatches", rep.instructions, generated.len());
}

#[test]
fn a_fault_is_reported_with_pc_instruction_and_address() {
    let dir = scratch("fault");
    let elf = dir.join("illegal.elf");
    // addi x1, x0, 5; then an all-ones word (not an instruction).
    std::fs::write(&elf, tiny_elf(&[0x0050_0093, 0xffff_ffff])).unwrap();
    let out = loom().current_dir(repo()).args(["run", "configs/rv32im.toml", "--no-progress"]).arg(&elf).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(134), "{stderr}");
    assert!(stderr.contains("machine fault: illegal instruction at pc 0x00010004, instruction 0xffffffff;"), "{stderr}");
    // lui x1, 0x80000; lw x2, 8(x1): a load outside RAM, reported with the address the network computed.
    let elf = dir.join("load.elf");
    std::fs::write(&elf, tiny_elf(&[0x8000_00b7, 0x0080_a103])).unwrap();
    let out = loom().current_dir(repo()).args(["run", "configs/rv32im.toml", "--no-progress"]).arg(&elf).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(134), "{stderr}");
    assert!(stderr.contains("machine fault: load outside RAM at pc 0x00010004, instruction 0x0080a103, address 0x80000008;"), "{stderr}");
}

#[test]
fn the_step_limit_ends_the_run_with_status_124() {
    let out = loom().current_dir(repo()).args(["run", "configs/rv32im.toml", "--no-progress", "--max-steps", "40"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(124), "{stderr}");
    assert!(stderr.contains("step limit (40 steps)"), "{stderr}");
}

#[test]
fn bad_inputs_are_named_before_weaving() {
    let dir = scratch("bad");
    let junk = dir.join("junk.elf");
    std::fs::write(&junk, b"not an elf").unwrap();
    let cfg = dir.join("dense.toml");
    std::fs::write(&cfg, "[machine]\nisa = \"rv32im\"\n[run]\nbackend = \"ndarray\"\n").unwrap();
    let unknown = dir.join("z80.toml");
    std::fs::write(&unknown, "[machine]\nisa = \"z80\"\n").unwrap();
    let typo = dir.join("typo.toml");
    std::fs::write(&typo, "[machine]\nisa = \"rv32im\"\n[geometry]\nhiden = 4096\n").unwrap();
    let small = dir.join("small.toml");
    std::fs::write(&small, "[machine]\nisa = \"rv32im\"\n[geometry]\nhidden = 64\nlayers = 4\n").unwrap();
    let cases: Vec<(Vec<&std::ffi::OsStr>, &str)> = vec![
        (vec!["configs/rv32im.toml".as_ref(), junk.as_os_str()], "not an ELF file"),
        (vec!["configs/missing.toml".as_ref()], "configs/missing.toml"),
        (vec![cfg.as_os_str()], "backend"),
        (vec![unknown.as_os_str()], "no machine \"z80\""),
        (vec![typo.as_os_str()], "unknown field `hiden`"),
        (vec![small.as_os_str()], "hidden_size needs"),
        (vec![], "give a machine config"),
    ];
    for (args, needle) in cases {
        let out = loom().current_dir(repo()).arg("run").args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn lockstep_replays_woven_runs_against_the_interpreter() {
    let dir = scratch("lockstep");
    let elf = dir.join("tiny.elf");
    // addi x1, x0, 5; addi x2, x1, 7; addi a7, x0, 93; addi a0, x2, 0; ecall (exit 12)
    std::fs::write(&elf, tiny_elf(&[0x0050_0093, 0x0070_8113, 0x05d0_0893, 0x0001_0513, 0x0000_0073])).unwrap();
    let out = loom().current_dir(repo()).args(["lockstep", "configs/rv32im.toml", "--examples", "hello"]).arg(&elf).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let line = |name: &str| stdout.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no line for {name}: {stdout}")).to_string();
    let hello: Vec<String> = line("hello").split_whitespace().map(String::from).collect();
    assert_eq!(hello[1], "95", "{stdout}");
    assert_eq!(&hello[4..8], ["0", "exit", "0", "expected"], "{stdout}");
    let tiny: Vec<String> = line(&elf.display().to_string()).split_whitespace().map(String::from).collect();
    assert_eq!(&tiny[1..2], ["5"], "{stdout}");
    assert_eq!(&tiny[4..7], ["0", "exit", "12"], "{stdout}");
    assert!(stdout.contains("total: 100 instructions compared"), "{stdout}");
    // An unknown example is named, with the list.
    let out = loom().current_dir(repo()).args(["lockstep", "configs/rv32im.toml", "--examples", "nosuch"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("no built-in example \"nosuch\"") && stderr.contains("sieve"), "{stderr}");
}

/// `loom weave` exports an rv32im machine (1 KiB of RAM: a 3.2 GB checkpoint) and `loom run --model DIR
/// PROGRAM.elf` runs an ELF on it from the checkpoint alone: manifest + weights, the console, exit and fault
/// devices, the RAM base taken from the ELF's entry.
#[test]
fn an_exported_rv32im_checkpoint_runs_an_elf() {
    let dir = scratch("rv32-checkpoint");
    let cfg = dir.join("small.toml");
    std::fs::write(&cfg, "[machine]\nisa = \"rv32im\"\nram_base = 0x10000\nram_size = 1024\n").unwrap();
    let model = dir.join("model");
    let out = loom().args(["weave"]).arg(&cfg).arg("--out").arg(&model).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // addi a0, x0, 7; addi a7, x0, 93; ecall: exit(7)
    let elf = dir.join("exit7.elf");
    std::fs::write(&elf, tiny_elf(&[0x0070_0513, 0x05d0_0893, 0x0000_0073])).unwrap();
    let trace = dir.join("trace.json");
    let out = loom().args(["run", "--no-progress", "--model"]).arg(&model).arg(&elf).arg("--trace").arg(&trace).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    assert!(stderr.contains("1 KiB RAM at 0x10000") && stderr.contains("[loom: exit 7; 3 instructions"), "{stderr}");
    // The trace replays against the interpreter.
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let generated: Vec<u32> = t["generated"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
    let opts = isa_rv32im::Rv32MachineOptions { ram_base: 0x10000, ram_size: 1024, ..Default::default() };
    let proto = isa_api::Protocol::of(&isa_rv32im::rv32im_machine(&opts).unwrap());
    let cpu = isa_rv32im::load_elf(&std::fs::read(&elf).unwrap(), opts.interp_config()).unwrap();
    let rep = isa_rv32im::lockstep::trace_lockstep(&proto, &generated, cpu, &opts).expect("lockstep");
    assert_eq!((rep.instructions, rep.end), (3, isa_rv32im::lockstep::LockstepEnd::Exit(7)));
    // An entry point that is not a multiple of 4 is named.
    let bad = dir.join("odd.elf");
    let mut e = tiny_elf(&[0x0000_0073]);
    e[24] = 2; // entry 0x10002: not a multiple of 4
    std::fs::write(&bad, e).unwrap();
    let out = loom().args(["run", "--no-progress", "--model"]).arg(&model).arg(&bad).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("entry point 0x00010002 is outside RAM or misaligned"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
