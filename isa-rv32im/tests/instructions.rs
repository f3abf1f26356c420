//! Self-checking tests of every instruction through the interpreter: programs built with the independent encoder
//! of `common`, expected values worked out by hand from the specification.

mod common;
use common::*;
use isa_rv32im::decode::decode;
use isa_rv32im::{Access, Rv32Error, StepEvent, Stop};

#[test]
fn encoder_agrees_with_gnu_as() {
    // Words from riscv64-unknown-elf-as -march=rv32im_zba.
    assert_eq!(ri("addi", 10, 0, 10), 0x00a00513);
    assert_eq!(rr("sh1add", 10, 10, 15), 0x20f52533);
    assert_eq!(rr("sh2add", 10, 10, 15), 0x20f54533);
    assert_eq!(rr("sh3add", 10, 10, 15), 0x20f56533);
    assert_eq!(store("sw", 1, 2, 12), 0x00112623);
    assert_eq!(load("lw", 1, 2, 12), 0x00c12083);
    assert_eq!(auipc(2, 0x8000), 0x00008117);
    assert_eq!(jalr(1, 1, 20), 0x014080e7);
    assert_eq!(jal(0, 0), 0x0000006f);
    assert_eq!(ri("addi", 2, 2, -16), 0xff010113);
    // Every encoder output decodes.
    for op in [
        "add", "sub", "sll", "slt", "sltu", "xor", "srl", "sra", "or", "and", "mul", "mulh",
        "mulhsu", "mulhu", "div", "divu", "rem", "remu", "sh1add", "sh2add", "sh3add",
    ] {
        assert!(decode(rr(op, 1, 2, 3)).is_some(), "{op}");
    }
}

#[test]
fn x0_is_hardwired_to_zero() {
    let mut cpu = machine(&[ri("addi", 0, 0, 5), lui(0, 0x12345000), rr("add", 1, 0, 0)]);
    steps(&mut cpu, 3);
    assert_eq!(cpu.x(0), 0);
    assert_eq!(cpu.x(1), 0);
}

#[test]
fn lui_and_auipc() {
    let mut cpu = machine(&[
        lui(5, 0xfffff000),
        auipc(6, 0x1000),
        auipc(7, 0x8000_0000),
        lui(8, 0x12345000),
    ]);
    steps(&mut cpu, 4);
    assert_eq!(cpu.x(5), 0xffff_f000);
    assert_eq!(cpu.x(6), BASE + 4 + 0x1000);
    assert_eq!(cpu.x(7), (BASE + 8).wrapping_add(0x8000_0000));
    assert_eq!(cpu.x(8), 0x1234_5000);
    let [a, b] = li(9, 0xdead_beef);
    let mut cpu = machine(&[a, b]);
    steps(&mut cpu, 2);
    assert_eq!(cpu.x(9), 0xdead_beef);
}

#[test]
fn register_immediate_ops() {
    let cases: &[(&str, u32, i32, u32)] = &[
        ("addi", 0x7fff_ffff, 1, 0x8000_0000),
        ("addi", 5, -2048, 5u32.wrapping_sub(2048)),
        ("slti", 0xffff_ffff, 0, 1),
        ("slti", 0, -1, 0),
        ("sltiu", 0, -1, 1),
        ("sltiu", 0xffff_fffe, -1, 1),
        ("sltiu", 0xffff_ffff, -1, 0),
        ("xori", 0x00ff_00ff, -1, 0xff00_ff00),
        ("ori", 0x1000_0000, 0x7ff, 0x1000_07ff),
        ("andi", 0x1234_5678, -256, 0x1234_5600),
        ("slli", 1, 31, 0x8000_0000),
        ("srli", 0x8000_0000, 31, 1),
        ("srai", 0x8000_0000, 31, 0xffff_ffff),
        ("srai", 0x4000_0000, 30, 1),
    ];
    for &(op, a, imm, want) in cases {
        let mut cpu = machine(&[ri(op, 3, 1, imm)]);
        cpu.set_x(1, a);
        cpu.step().unwrap();
        assert_eq!(cpu.x(3), want, "{op} {a:#x}, {imm}");
    }
}

#[test]
fn register_register_ops() {
    let cases: &[(&str, u32, u32, u32)] = &[
        ("add", 0xffff_ffff, 1, 0),
        ("sub", 0, 1, 0xffff_ffff),
        ("sll", 1, 0x21, 2),
        ("srl", 0x8000_0000, 0xff, 1),
        ("sra", 0x8000_0000, 0xff, 0xffff_ffff),
        ("slt", 0x8000_0000, 0, 1),
        ("sltu", 0x8000_0000, 0, 0),
        ("xor", 0xf0f0, 0xff00, 0x0ff0),
        ("or", 0xf0f0, 0xff00, 0xfff0),
        ("and", 0xf0f0, 0xff00, 0xf000),
        ("mul", 0x0001_0001, 0x0001_0001, 0x0002_0001),
        ("mulh", 0xffff_ffff, 0xffff_ffff, 0),
        ("mulh", 0x8000_0000, 0x7fff_ffff, 0xc000_0000),
        ("mulhsu", 0xffff_ffff, 0xffff_ffff, 0xffff_ffff),
        ("mulhsu", 0x8000_0000, 0x8000_0000, 0xc000_0000),
        ("mulhu", 0xffff_ffff, 0xffff_ffff, 0xffff_fffe),
        ("mulhu", 123_456_789, 987_654_321, 28_389_652),
        ("mul", 123_456_789, 987_654_321, 4_227_814_277),
        ("div", 20, 0xffff_fffa, 0xffff_fffd),
        ("div", 0x8000_0000, 0xffff_ffff, 0x8000_0000),
        ("div", 1, 0, 0xffff_ffff),
        ("divu", 20, 6, 3),
        ("divu", 1, 0, 0xffff_ffff),
        ("rem", 0xffff_ffec, 6, 0xffff_fffe),
        ("rem", 0x8000_0000, 0xffff_ffff, 0),
        ("rem", 0xffff_ffec, 0, 0xffff_ffec),
        ("remu", 20, 6, 2),
        ("remu", 0xffff_ffec, 0, 0xffff_ffec),
        ("sh1add", 0x4000_0000, 1, 0x8000_0001),
        ("sh2add", 0x4000_0001, 1, 5),
        ("sh3add", 0x2000_0001, 0xffff_fff8, 0),
    ];
    for &(op, a, b, want) in cases {
        let mut cpu = machine(&[rr(op, 3, 1, 2)]);
        cpu.set_x(1, a);
        cpu.set_x(2, b);
        cpu.step().unwrap();
        assert_eq!(cpu.x(3), want, "{op} {a:#x}, {b:#x}");
    }
    // 123456789 * 987654321 = 121932631112635269: MULHU:MUL gives all 64 bits
    let p = 123_456_789u64 * 987_654_321;
    let mut cpu = machine(&[rr("mul", 3, 1, 2), rr("mulhu", 4, 1, 2)]);
    cpu.set_x(1, 123_456_789);
    cpu.set_x(2, 987_654_321);
    steps(&mut cpu, 2);
    assert_eq!((cpu.x(4) as u64) << 32 | cpu.x(3) as u64, p);
    assert_eq!(p, 121_932_631_112_635_269);
    // rd == rs1 == rs2
    let mut cpu = machine(&[rr("mul", 1, 1, 1)]);
    cpu.set_x(1, 0x1_0000);
    cpu.step().unwrap();
    assert_eq!(cpu.x(1), 0);
}

#[test]
fn loads_of_every_width_and_sign() {
    let data = BASE + 0x100;
    for off in 0..4u32 {
        // Bytes 0x81 0x82 ... at data+off.. (misaligned for off != 0)
        let prog = [
            load("lb", 3, 1, 0),
            load("lbu", 4, 1, 0),
            load("lh", 5, 1, 0),
            load("lhu", 6, 1, 0),
            load("lw", 7, 1, 0),
            load("lb", 8, 1, 3),
            load("lh", 9, 1, 2),
            load("lw", 10, 1, -4i32 + 4),
        ];
        let mut cpu = machine(&prog);
        cpu.ram_mut()
            .load(data + off, &[0x81, 0x82, 0x03, 0x74, 0x05])
            .unwrap();
        cpu.set_x(1, data + off);
        steps(&mut cpu, prog.len());
        assert_eq!(cpu.x(3), 0xffff_ff81, "lb off {off}");
        assert_eq!(cpu.x(4), 0x81, "lbu off {off}");
        assert_eq!(cpu.x(5), 0xffff_8281, "lh off {off}");
        assert_eq!(cpu.x(6), 0x8281, "lhu off {off}");
        assert_eq!(cpu.x(7), 0x7403_8281, "lw off {off}");
        assert_eq!(cpu.x(8), 0x74, "lb positive off {off}");
        assert_eq!(cpu.x(9), 0x7403, "lh positive off {off}");
        assert_eq!(cpu.x(10), 0x7403_8281, "lw off {off}");
    }
}

#[test]
fn stores_of_every_width_including_misaligned() {
    let data = BASE + 0x200;
    for off in 0..4u32 {
        let prog = [
            store("sw", 2, 1, 0),
            store("sh", 2, 1, 5),
            store("sb", 2, 1, 8),
            store("sw", 2, 1, -4),
        ];
        let mut cpu = machine(&prog);
        cpu.set_x(1, data + 4 + off);
        cpu.set_x(2, 0xa1b2_c3d4);
        steps(&mut cpu, 4);
        let base = data + off;
        let mem = cpu.ram().slice(base, 13).unwrap().to_vec();
        assert_eq!(
            mem,
            [
                0xd4, 0xc3, 0xb2, 0xa1, 0xd4, 0xc3, 0xb2, 0xa1, 0, 0xd4, 0xc3, 0, 0xd4
            ],
            "off {off}"
        );
    }
}

#[test]
fn branches_taken_and_not_taken_forward_and_backward() {
    let cases: &[(&str, u32, u32, bool)] = &[
        ("beq", 5, 5, true),
        ("beq", 5, 6, false),
        ("bne", 5, 6, true),
        ("bne", 5, 5, false),
        ("blt", 0xffff_ffff, 0, true),
        ("blt", 0, 0xffff_ffff, false),
        ("bge", 0, 0xffff_ffff, true),
        ("bge", 7, 7, true),
        ("bge", 0x8000_0000, 0x7fff_ffff, false),
        ("bltu", 0, 0xffff_ffff, true),
        ("bltu", 0xffff_ffff, 0, false),
        ("bgeu", 0xffff_ffff, 0, true),
        ("bgeu", 0, 1, false),
    ];
    for &(op, a, b, taken) in cases {
        for off in [8i32, -8, 4094 & !3, -4096] {
            let mut cpu = machine(&[]);
            let at = BASE + 0x8000;
            cpu.ram_mut().write(at, 4, branch(op, 1, 2, off)).unwrap();
            cpu.set_pc(at);
            cpu.set_x(1, a);
            cpu.set_x(2, b);
            cpu.step().unwrap();
            let want = if taken {
                at.wrapping_add(off as u32)
            } else {
                at + 4
            };
            assert_eq!(cpu.pc(), want, "{op} {a:#x} {b:#x} off {off}");
        }
    }
}

#[test]
fn jal_and_jalr() {
    // jal ra, +12 ; (skipped) ; (skipped) ; jalr t0, ra, 5 -> target (ra+5)&!1 = ra+4, t0 = link
    let mut cpu = machine(&[jal(1, 12), 0, 0, jalr(5, 1, 5), 0, 0]);
    cpu.step().unwrap();
    assert_eq!(cpu.pc(), BASE + 12);
    assert_eq!(cpu.x(1), BASE + 4);
    cpu.step().unwrap();
    assert_eq!(cpu.pc(), BASE + 8); // (BASE+4+5) & !1 = BASE+8
    assert_eq!(cpu.x(5), BASE + 16);
    // jalr with rd == rs1: target uses the old value.
    let mut cpu = machine(&[jalr(1, 1, -4)]);
    cpu.set_x(1, BASE + 0x104);
    cpu.step().unwrap();
    assert_eq!(cpu.pc(), BASE + 0x100);
    assert_eq!(cpu.x(1), BASE + 4);
    // jal backwards, rd = x0
    let mut cpu = machine(&[]);
    cpu.ram_mut()
        .write(BASE + 0x1000, 4, jal(0, -0x1000))
        .unwrap();
    cpu.set_pc(BASE + 0x1000);
    cpu.step().unwrap();
    assert_eq!(cpu.pc(), BASE);
    assert_eq!(cpu.x(0), 0);
}

#[test]
fn misaligned_jump_targets_stop_without_side_effects() {
    let mut cpu = machine(&[jalr(1, 2, 2)]);
    cpu.set_x(2, BASE);
    let err = cpu.step().unwrap_err();
    assert_eq!(
        err,
        Rv32Error::MisalignedJump {
            pc: BASE,
            word: jalr(1, 2, 2),
            target: BASE + 2
        }
    );
    assert_eq!(cpu.x(1), 0, "rd not written");
    assert_eq!(cpu.pc(), BASE);
    let mut cpu = machine(&[jal(0, 6)]);
    assert!(
        matches!(cpu.step(), Err(Rv32Error::MisalignedJump { target, .. }) if target == BASE + 6)
    );
    let mut cpu = machine(&[branch("beq", 0, 0, 2)]);
    assert!(matches!(cpu.step(), Err(Rv32Error::MisalignedJump { .. })));
    // not taken: no exception even with a misaligned offset
    let mut cpu = machine(&[branch("bne", 0, 0, 2)]);
    assert_eq!(cpu.step(), Ok(StepEvent::Retired));
}

#[test]
fn fence_is_a_no_op_and_ebreak_is_a_host_call() {
    let mut cpu = machine(&[FENCE, EBREAK, ri("addi", 1, 0, 1)]);
    assert_eq!(cpu.step(), Ok(StepEvent::Retired));
    assert_eq!(cpu.pc(), BASE + 4);
    assert_eq!(cpu.step(), Ok(StepEvent::Breakpoint { pc: BASE + 4 }));
    assert_eq!(cpu.pc(), BASE + 8);
    cpu.step().unwrap();
    assert_eq!(cpu.x(1), 1);
    let mut cpu = machine(&[EBREAK]);
    assert_eq!(cpu.run(10).unwrap().stop, Stop::Breakpoint(BASE));
}

#[test]
fn ecall_write_and_exit() {
    // Message at BASE+0x100; write(1, msg, 5); write(3, msg, 5) -> -EBADF; exit(42)
    let mut prog = Vec::new();
    prog.extend(li(10, 1));
    prog.extend(li(11, BASE + 0x100));
    prog.extend(li(12, 5));
    prog.extend(li(17, 64));
    prog.push(ECALL);
    prog.push(ri("addi", 20, 10, 0)); // save return value
    prog.extend(li(10, 3));
    prog.push(ECALL);
    prog.push(ri("addi", 21, 10, 0));
    prog.extend(li(10, 42));
    prog.extend(li(17, 93));
    prog.push(ECALL);
    let mut cpu = machine(&prog);
    cpu.ram_mut().load(BASE + 0x100, b"hello").unwrap();
    let r = cpu.run(1000).unwrap();
    assert_eq!(r.output, b"hello");
    assert_eq!(r.stop, Stop::Exit(42));
    assert_eq!(r.steps, prog.len() as u64); // straight-line code: one step per word
    assert_eq!(cpu.x(20), 5);
    assert_eq!(cpu.x(21), (-9i32) as u32);
    assert_eq!(cpu.exit_code(), Some(42));
    assert_eq!(cpu.step(), Err(Rv32Error::Halted { code: 42 }));
}

#[test]
fn errors_name_pc_instruction_and_address() {
    // Illegal instruction.
    let mut cpu = machine(&[0x3000_2573]); // csrr a0, mstatus
    let e = cpu.step().unwrap_err();
    assert_eq!(
        e,
        Rv32Error::IllegalInstruction {
            pc: BASE,
            word: 0x3000_2573
        }
    );
    assert_eq!(
        e.to_string(),
        "illegal instruction 0x30002573 at pc 0x00010000"
    );
    // Load outside memory.
    let w = load("lw", 3, 1, 0);
    let mut cpu = machine(&[w]);
    cpu.set_x(1, 0x5_0000 - 2); // straddles the end of 256 KiB at 0x10000
    let e = cpu.step().unwrap_err();
    assert_eq!(
        e,
        Rv32Error::MemoryFault {
            pc: BASE,
            word: w,
            addr: 0x4_fffe,
            size: 4,
            access: Access::Load,
            mem_base: BASE,
            mem_end: 0x5_0000
        }
    );
    assert!(e.to_string().contains("0x0004fffe"), "{e}");
    assert!(e.to_string().contains("pc 0x00010000"), "{e}");
    assert_eq!(cpu.pc(), BASE);
    // Store below memory writes nothing.
    let w = store("sb", 2, 0, 0x10);
    let mut cpu = machine(&[w]);
    assert!(matches!(
        cpu.step(),
        Err(Rv32Error::MemoryFault {
            addr: 0x10,
            access: Access::Store,
            ..
        })
    ));
    // Fetch outside memory.
    let mut cpu = machine(&[]);
    cpu.set_pc(0);
    assert!(matches!(
        cpu.step(),
        Err(Rv32Error::MemoryFault {
            addr: 0,
            access: Access::Fetch,
            ..
        })
    ));
    // Address arithmetic wraps modulo 2^32 (x1 = -4, offset 8 -> address 4, outside RAM).
    let mut cpu = machine(&[load("lw", 3, 1, 8)]);
    cpu.set_x(1, 0xffff_fffc);
    assert!(matches!(
        cpu.step(),
        Err(Rv32Error::MemoryFault { addr: 4, .. })
    ));
    // write() with a buffer outside memory.
    let mut prog = Vec::new();
    prog.extend(li(10, 1));
    prog.extend(li(11, 0x4_fff0));
    prog.extend(li(12, 0x100));
    prog.extend(li(17, 64));
    prog.push(ECALL);
    let mut cpu = machine(&prog);
    let e = cpu.run(100).unwrap_err();
    assert!(matches!(
        e,
        Rv32Error::MemoryFault {
            addr: 0x4_fff0,
            size: 0x100,
            access: Access::HostRead,
            ..
        }
    ));
    // Unknown syscall.
    let mut prog = li(17, 222).to_vec();
    prog.push(ECALL);
    let mut cpu = machine(&prog);
    assert_eq!(
        cpu.run(100).unwrap_err(),
        Rv32Error::UnsupportedSyscall {
            pc: BASE + 8,
            number: 222
        }
    );
    // Step bound.
    let mut cpu = machine(&[jal(0, 0)]);
    assert_eq!(
        cpu.run(1000).unwrap_err(),
        Rv32Error::StepLimit {
            limit: 1000,
            pc: BASE
        }
    );
    assert_eq!(cpu.instret(), 1000);
}

#[test]
fn all_zero_and_garbage_words_never_panic() {
    // Every opcode/funct combination of a pseudo-random word set: decode + execute gives an event or an error.
    let mut s = 0x1234_5678u32;
    for _ in 0..20_000 {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        let mut cpu = machine(&[s]);
        for r in 1..32 {
            cpu.set_x(r, s.rotate_left(r as u32));
        }
        let _ = cpu.step();
    }
}

#[test]
fn ram_base_and_size_are_configurable() {
    use isa_rv32im::{Config, Cpu};
    let mut cpu = Cpu::new(Config {
        ram_base: 0x8000_0000,
        ram_size: 4096,
    })
    .unwrap();
    cpu.ram_mut()
        .write(0x8000_0000, 4, ri("addi", 1, 0, 7))
        .unwrap();
    cpu.set_pc(0x8000_0000);
    cpu.step().unwrap();
    assert_eq!(cpu.x(1), 7);
    assert_eq!(cpu.ram().end(), 0x8000_1000);
    assert!(
        Cpu::new(Config {
            ram_base: 0xffff_0000,
            ram_size: 0x1_0000
        })
        .is_some()
    );
    assert!(
        Cpu::new(Config {
            ram_base: 0xffff_0000,
            ram_size: 0x1_0001
        })
        .is_none()
    );
}
