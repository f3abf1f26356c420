//! The RV32IM+Zba circuit, run by `isa_api::eval::Reference`, in lockstep with the interpreter `Cpu`: every
//! example program, the riscv-tests vectors, the M edge cases (Unpriv Table 7.1), every load/store width and
//! sign at every byte offset, and every stop.

mod common;
use common::*;
use isa_rv32im::circuit::{CircuitHart, FaultCode, MemoryLayout, Rv32MachineOptions, rv32im_machine};
use isa_rv32im::lockstep::{LockstepEnd, lockstep};
use isa_rv32im::examples::EXAMPLES;
use isa_rv32im::{Config, Cpu, load_elf};

fn opts() -> Rv32MachineOptions {
    Rv32MachineOptions::default()
}

/// Both memory layouts of the 64 KiB machine.
fn layouts() -> [Rv32MachineOptions; 2] {
    [Rv32MachineOptions { layout: MemoryLayout::Words, ..opts() }, Rv32MachineOptions { layout: MemoryLayout::ByteLanes, ..opts() }]
}

/// A 64 KiB machine with `prog` at the RAM base.
fn cpu64(prog: &[u32]) -> Cpu {
    let mut cpu = Cpu::new(Config { ram_base: BASE, ram_size: 64 * 1024 }).unwrap();
    let bytes: Vec<u8> = prog.iter().flat_map(|w| w.to_le_bytes()).collect();
    cpu.ram_mut().load(BASE, &bytes).unwrap();
    cpu.set_pc(BASE);
    cpu
}

/// Program ending in `exit(a0)`.
fn with_exit(body: &[u32]) -> Vec<u32> {
    let mut p = body.to_vec();
    p.extend(li(17, 93));
    p.push(ECALL);
    p
}

#[test]
fn machine_is_valid_for_both_ram_sizes_and_rejects_bad_geometry() {
    let words = |o: Rv32MachineOptions| Rv32MachineOptions { layout: MemoryLayout::Words, ..o };
    for o in [opts(), Rv32MachineOptions::ram_256k(), words(opts()), words(Rv32MachineOptions::ram_256k())] {
        let d = rv32im_machine(&o).unwrap();
        d.validate().unwrap();
        assert_eq!(d.micro_step, Some(isa_rv32im::circuit::reg::BUSY), "BUSY sequences micro-coded instructions");
        let p = isa_api::Protocol::of(&d);
        // PC (2) + BUSY (1) + DIV_Q (4) + X write (1 + 4) + 4 lanes (2 + 1) or one word
        // memory (2 + 4) + OUT + EXIT + FAULT (code and address: 5 chunks) + IN_REQ: at most this many tokens
        // in a step, when every field changes.
        let want = if o.layout == MemoryLayout::Words { 26 } else { 32 };
        assert_eq!(p.step_fields.len(), want, "{o:?}");
    }
    assert!(rv32im_machine(&Rv32MachineOptions { ram_base: 0x10000, ram_size: 3000, ..Default::default() }).is_err());
    assert!(rv32im_machine(&Rv32MachineOptions { ram_base: 0x10002, ram_size: 4096, ..Default::default() }).is_err());
    assert!(rv32im_machine(&Rv32MachineOptions { ram_base: 0xffff_f000, ram_size: 8192, ..Default::default() }).is_err());
}

fn examples_in_lockstep(o: Rv32MachineOptions) {
    let mut total = 0;
    let mut steps = 0;
    for ex in EXAMPLES {
        let cpu = load_elf(ex.elf, o.interp_config()).unwrap();
        let rep = lockstep(cpu, &o, 10_000_000).unwrap_or_else(|e| panic!("{}: {e}", ex.name));
        assert_eq!(rep.output, ex.expected_stdout, "{}", ex.name);
        assert_eq!(rep.end, LockstepEnd::Exit(ex.status().unwrap() as u8), "{}", ex.name);
        eprintln!("{:?} {:13} {:8} instructions, {:8} steps, 0 mismatches", o.layout, ex.name, rep.instructions, rep.steps);
        total += rep.instructions;
        steps += rep.steps;
    }
    eprintln!("{:?}: all examples: {total} instructions compared ({steps} circuit steps), 0 mismatches", o.layout);
    assert_eq!(total, 534_615);
}

#[test]
fn all_examples_in_lockstep() {
    examples_in_lockstep(layouts()[0]);
}

#[test]
fn all_examples_in_lockstep_byte_lanes_layout() {
    examples_in_lockstep(layouts()[1]);
}

#[test]
fn examples_also_run_with_256k_ram() {
    let o = Rv32MachineOptions::ram_256k();
    let ex = isa_rv32im::examples::example("hello").unwrap();
    let rep = lockstep(load_elf(ex.elf, o.interp_config()).unwrap(), &o, 1_000_000).unwrap();
    assert_eq!(rep.output, ex.expected_stdout);
    assert_eq!(rep.end, LockstepEnd::Exit(0));
}

#[test]
fn riscv_tests_vectors_on_the_circuit() {
    let Some(path) = testdata_file("riscv/riscv-tests-rv32im-zba-vectors.json") else {
        return;
    };
    let vectors: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(vectors.len(), 471);
    let mut passed = 0;
    let mut failures = Vec::new();
    for o in layouts() {
    for v in &vectors {
        let (kind, op) = (v["kind"].as_str().unwrap(), v["op"].as_str().unwrap());
        let a = v["a"].as_u64().unwrap() as u32;
        let b = v["b"].as_i64().unwrap();
        let expected = v["expected"].as_u64().unwrap() as u32;
        let instr = match kind {
            "rr" => rr(op, 3, 1, 2),
            "imm" => ri(op, 3, 1, b as i32),
            _ => branch(op, 1, 2, 8),
        };
        let mut cpu = cpu64(&[instr, ri("addi", 0, 0, 0), ri("addi", 0, 0, 0)]);
        cpu.set_x(1, a);
        cpu.set_x(2, b as u32);
        let mut hart = CircuitHart::from_cpu(&cpu, &o).unwrap();
        let out = hart.step_instruction(100);
        assert!(out.retired, "{op}: {out:?}");
        let got = match kind {
            "rr" | "imm" => hart.x(3),
            _ => match hart.pc() - BASE {
                8 => 1,
                4 => 0,
                other => panic!("{op}: branch went to +{other}"),
            },
        };
        if got == expected {
            passed += 1;
        } else {
            failures.push(format!("{:?} {op} {a:#x}, {b:#x}: circuit {got:#x}, expected {expected:#x}", o.layout));
        }
    }
    }
    eprintln!("riscv-tests vectors on the circuit: {passed}/942 passed (471 per memory layout)");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(passed, 942);
}

/// Runs a program in lockstep and returns the final circuit state check.
fn run_lockstep(prog: &[u32], regs: &[(usize, u32)]) -> isa_rv32im::lockstep::LockstepReport {
    run_lockstep_on(&opts(), prog, regs)
}

fn run_lockstep_on(o: &Rv32MachineOptions, prog: &[u32], regs: &[(usize, u32)]) -> isa_rv32im::lockstep::LockstepReport {
    let mut cpu = cpu64(prog);
    for (r, v) in regs {
        cpu.set_x(*r, *v);
    }
    lockstep(cpu, o, 100_000).unwrap_or_else(|e| panic!("{:?}: {e}", o.layout))
}

#[test]
fn m_extension_edge_cases() {
    // Unpriv Table 7.1 and the MULH* sign combinations, each checked against the interpreter and a literal.
    let edge = [0u32, 1, 2, 3, 7, 0x7fff_ffff, 0x8000_0000, 0x8000_0001, 0xffff_ffff, 0xffff_fffe, 0x1234_5678, 0xdead_beef, 0x10000];
    let ops = ["mul", "mulh", "mulhsu", "mulhu", "div", "divu", "rem", "remu"];
    let mut n = 0;
    for op in ops {
        for &a in &edge {
            for &b in &edge {
                let rep = run_lockstep(&with_exit(&[rr(op, 10, 11, 12)]), &[(11, a), (12, b)]);
                let want = isa_rv32im::alu::alu(isa_rv32im::alu::alu_op_by_name(op).unwrap(), a, b);
                assert_eq!(rep.end, LockstepEnd::Exit(want as u8), "{op} {a:#x} {b:#x}");
                n += 1;
            }
        }
    }
    // Literal Table 7.1 values.
    let lit = [
        ("div", 7u32, 0u32, u32::MAX),
        ("divu", 7, 0, u32::MAX),
        ("rem", 7, 0, 7),
        ("remu", 7, 0, 7),
        ("div", 0x8000_0000, u32::MAX, 0x8000_0000),
        ("rem", 0x8000_0000, u32::MAX, 0),
        ("div", (-7i32) as u32, 2, (-3i32) as u32),
        ("rem", (-7i32) as u32, 2, (-1i32) as u32),
        ("mulh", 0x8000_0000, 0x8000_0000, 0x4000_0000),
        ("mulhsu", u32::MAX, u32::MAX, u32::MAX),
        ("mulhu", u32::MAX, u32::MAX, 0xffff_fffe),
    ];
    for (op, a, b, want) in lit {
        let mut cpu = cpu64(&[rr(op, 10, 11, 12), ri("addi", 0, 0, 0)]);
        cpu.set_x(11, a);
        cpu.set_x(12, b);
        let mut hart = CircuitHart::from_cpu(&cpu, &opts()).unwrap();
        let o = hart.step_instruction(100);
        assert!(o.retired);
        assert_eq!(hart.x(10), want, "{op} {a:#x} {b:#x}");
        let steps_expected = if op.starts_with("div") || op.starts_with("rem") { 10 } else { 1 };
        assert_eq!(o.steps, steps_expected, "{op}");
    }
    eprintln!("{n} M-extension operand pairs in lockstep");
}

#[test]
fn every_load_store_width_sign_and_offset() {
    // Store a pattern, then load it back at every offset with every width: misaligned accesses included.
    let data = 0x2000u32; // offset in RAM
    let mut n = 0;
    for o in layouts() {
    for st in ["sb", "sh", "sw"] {
        for off in 0..8 {
            for ld in ["lb", "lh", "lw", "lbu", "lhu"] {
                for loff in 0..8 {
                    let mut body = vec![];
                    body.extend(li(5, BASE + data));
                    body.extend(li(6, 0x8182_83f4));
                    body.extend(li(7, 0xfedc_ba98));
                    body.push(store("sw", 7, 5, 0));
                    body.push(store("sw", 7, 5, 4));
                    body.push(store(st, 6, 5, off));
                    body.push(load(ld, 10, 5, loff));
                    body.push(load(ld, 11, 5, loff - 1 + 1));
                    let rep = run_lockstep_on(&o, &with_exit(&body), &[]);
                    assert!(matches!(rep.end, LockstepEnd::Exit(_)), "{st}@{off} {ld}@{loff}");
                    n += 1;
                }
            }
        }
    }
    }
    eprintln!("{n} store/load combinations in lockstep (both memory layouts)");
}

#[test]
fn console_write_syscall() {
    // write(1, buf, 5) then write(7, buf, 1) (-EBADF) then write(2, buf, 0), exit(42).
    let buf = BASE + 0x1000;
    let mut body = vec![];
    body.extend(li(5, buf));
    body.extend(li(6, u32::from_le_bytes(*b"hell")));
    body.push(store("sw", 6, 5, 0));
    body.extend(li(6, b'o' as u32));
    body.push(store("sb", 6, 5, 4));
    for (fd, len) in [(1u32, 5u32), (7, 1), (2, 0), (2, 1)] {
        body.extend(li(10, fd));
        body.extend(li(11, buf));
        body.extend(li(12, len));
        body.extend(li(17, 64));
        body.push(ECALL);
        body.push(rr("add", 20 + fd, 10, 0));
    }
    body.extend(li(10, 42));
    for o in layouts() {
        let rep = run_lockstep_on(&o, &with_exit(&body), &[]);
        assert_eq!(rep.output, b"helloh");
        assert_eq!(rep.end, LockstepEnd::Exit(42));
    }
}

#[test]
fn stops_agree_with_the_interpreter() {
    let cases: Vec<(Vec<u32>, LockstepEnd)> = vec![
        (vec![0xffff_ffff], LockstepEnd::Fault(FaultCode::IllegalInstruction)),
        (vec![0], LockstepEnd::Fault(FaultCode::IllegalInstruction)),
        (vec![0x3000_2073], LockstepEnd::Fault(FaultCode::IllegalInstruction)), // csrr
        (vec![EBREAK], LockstepEnd::Fault(FaultCode::Breakpoint)),
        (vec![load("lw", 10, 0, 0)], LockstepEnd::Fault(FaultCode::LoadOutOfRam)),
        (vec![store("sw", 10, 0, 0)], LockstepEnd::Fault(FaultCode::StoreOutOfRam)),
        ([li(5, BASE + 0xfffe).to_vec(), vec![load("lw", 10, 5, 0)]].concat(), LockstepEnd::Fault(FaultCode::LoadOutOfRam)),
        ([li(5, BASE + 0xfffe).to_vec(), vec![store("sh", 10, 5, 1)]].concat(), LockstepEnd::Fault(FaultCode::StoreOutOfRam)),
        ([li(5, BASE + 0xfffe).to_vec(), vec![load("lh", 10, 5, 0)]].concat(), LockstepEnd::Exit(0)),
        (vec![jal(0, 6)], LockstepEnd::Fault(FaultCode::MisalignedJump)),
        ([li(5, BASE + 2).to_vec(), vec![jalr(1, 5, 0)]].concat(), LockstepEnd::Fault(FaultCode::MisalignedJump)),
        ([li(5, BASE + 13).to_vec(), vec![jalr(1, 5, 0)]].concat(), LockstepEnd::Exit(0)), // bit 0 cleared -> +12
        (vec![jal(0, -8)], LockstepEnd::Fault(FaultCode::JumpOutOfRam)),
        ([li(5, 0x100).to_vec(), vec![jalr(1, 5, 0)]].concat(), LockstepEnd::Fault(FaultCode::JumpOutOfRam)),
        ([li(17, 62).to_vec(), vec![ECALL]].concat(), LockstepEnd::Fault(FaultCode::UnsupportedSyscall)), // lseek
        ([li(11, BASE + 0xfffe).to_vec(), li(12, 3).to_vec(), li(17, 63).to_vec(), vec![ECALL]].concat(), LockstepEnd::Fault(FaultCode::WriteBufferOutOfRam)), // read past the end
        ([li(10, 1).to_vec(), li(11, BASE + 0xfff0).to_vec(), li(12, 17).to_vec(), li(17, 64).to_vec(), vec![ECALL]].concat(), LockstepEnd::Fault(FaultCode::WriteBufferOutOfRam)),
        ([li(10, 1).to_vec(), li(11, 0).to_vec(), li(12, 0).to_vec(), li(17, 64).to_vec(), vec![ECALL]].concat(), LockstepEnd::Fault(FaultCode::WriteBufferOutOfRam)),
        (vec![FENCE], LockstepEnd::Exit(0)),
    ];
    for (i, (body, want)) in cases.iter().enumerate() {
        let mut prog = body.clone();
        // jalr to +8 lands after the padding: make the target an exit.
        prog.extend([ri("addi", 0, 0, 0), ri("addi", 0, 0, 0)]);
        let prog = with_exit(&[prog, li(10, 0).to_vec()].concat());
        for o in layouts() {
            let rep = run_lockstep_on(&o, &prog, &[]);
            assert_eq!(&rep.end, want, "case {i} {:?}", o.layout);
        }
    }
    // Fall-through past the last RAM word.
    let mut cpu = Cpu::new(Config { ram_base: BASE, ram_size: 64 * 1024 }).unwrap();
    cpu.ram_mut().load(BASE + 0xfffc, &ri("addi", 1, 0, 1).to_le_bytes()).unwrap();
    cpu.set_pc(BASE + 0xfffc);
    let rep = lockstep(cpu, &opts(), 10).unwrap();
    assert_eq!(rep.end, LockstepEnd::Fault(FaultCode::JumpOutOfRam));
}

/// read(2) on fd 0: the circuit (its input injected after each `IN_REQ`, as a host does) and the interpreter
/// agree on every register after every instruction, so on a0 (bytes read), on the bytes stored (loaded back
/// into registers) and on where the input ends.
#[test]
fn read_syscall_agrees_with_the_interpreter() {
    let buf = BASE + 0x801; // not word-aligned: the bytes land in two words
    // read(fd, buf, len); s1 = a0; the five bytes at buf loaded into a1..a5 (through s0 = buf), so the
    // compared registers show what the read stored.
    let read = |fd: u32, len: u32| -> Vec<u32> {
        let mut p = [li(8, buf).to_vec(), li(10, fd).to_vec(), li(11, buf).to_vec(), li(12, len).to_vec(), li(17, 63).to_vec(), vec![ECALL]].concat();
        p.push(ri("addi", 9, 10, 0));
        p.extend((0..5u32).map(|i| load("lbu", 11 + i, 8, i as i32)));
        p
    };
    let cases: Vec<(Vec<u32>, &[u8], u32)> = vec![
        (read(0, 4), b"abcdefg", 4),                           // a full read; the rest stays unread
        (read(0, 5), b"hi", 2),                                // the input ends after two bytes
        (read(0, 3), b"", 0),                                  // the input has ended
        (read(0, 0), b"xyz", 0),                               // len 0: no byte asked for
        (read(3, 4), b"abc", (-9i32) as u32),                  // fd 3: -EBADF
        ([read(0, 2), read(0, 8)].concat(), b"0123456789", 8), // a second read continues the input
    ];
    for (i, (body, input, want_a0)) in cases.iter().enumerate() {
        let prog = with_exit(&[body.clone(), li(10, 0).to_vec()].concat());
        for o in layouts() {
            let mut cpu = cpu64(&prog);
            cpu.push_input(input);
            let rep = lockstep(cpu.clone(), &o, 100_000).unwrap_or_else(|e| panic!("case {i} {:?}: {e}", o.layout));
            assert_eq!(rep.end, LockstepEnd::Exit(0), "case {i}");
            // The interpreter alone: s1 = the last read's a0, a1.. its bytes.
            cpu.run(10_000).unwrap();
            assert_eq!(cpu.x(9), *want_a0, "case {i}");
            let got: Vec<u8> = (11..16).map(|r| cpu.x(r) as u8).collect();
            let last: &[u8] = if i == 5 { &input[2..] } else { input };
            let n = (*want_a0 as usize).min(5);
            if *want_a0 as i32 >= 0 {
                assert_eq!(&got[..n], &last[..n], "case {i}");
            }
        }
    }
}

#[test]
fn reference_trace_decoded_by_the_host_matches_the_interpreter() {
    // The host-side decoder (`trace_lockstep`) that checks woven runs, fed the reference evaluator's tokens.
    for name in ["hello", "muldiv", "isa_selftest"] {
        let ex = isa_rv32im::examples::example(name).unwrap();
        let cpu = load_elf(ex.elf, opts().interp_config()).unwrap();
        let mut hart = CircuitHart::from_cpu(&cpu, &opts()).unwrap();
        let tokens = hart.reference.run(10_000_000);
        let rep = isa_rv32im::lockstep::trace_lockstep(&hart.reference.protocol, &tokens, cpu, &opts()).unwrap();
        assert_eq!(rep.output, ex.expected_stdout, "{name}");
        assert_eq!(rep.end, LockstepEnd::Exit(0), "{name}");
        let n = hart.reference.protocol.decode_steps(&tokens).unwrap().iter().filter(|s| !s.halted).count() as u64;
        assert_eq!(rep.steps, n);
        eprintln!("{name}: {} tokens, {} instructions compared from the trace", tokens.len(), rep.instructions);
    }
}
