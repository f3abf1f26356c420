//! Test helpers: an instruction encoder written independently of `decode.rs` (straight from the format figures
//! of Unpriv §2.2-§2.3 and Table 24.2), and a machine loaded with a word program.
#![allow(dead_code)]

use isa_rv32im::{Config, Cpu};

pub const BASE: u32 = 0x1_0000;

pub fn r_type(funct7: u32, rs2: u32, rs1: u32, funct3: u32, rd: u32, opcode: u32) -> u32 {
    funct7 << 25 | rs2 << 20 | rs1 << 15 | funct3 << 12 | rd << 7 | opcode
}
pub fn i_type(imm: i32, rs1: u32, funct3: u32, rd: u32, opcode: u32) -> u32 {
    ((imm as u32) & 0xfff) << 20 | rs1 << 15 | funct3 << 12 | rd << 7 | opcode
}
pub fn s_type(imm: i32, rs2: u32, rs1: u32, funct3: u32, opcode: u32) -> u32 {
    let imm = imm as u32;
    ((imm >> 5) & 0x7f) << 25 | rs2 << 20 | rs1 << 15 | funct3 << 12 | (imm & 0x1f) << 7 | opcode
}
pub fn b_type(imm: i32, rs2: u32, rs1: u32, funct3: u32, opcode: u32) -> u32 {
    let imm = imm as u32;
    ((imm >> 12) & 1) << 31
        | ((imm >> 5) & 0x3f) << 25
        | rs2 << 20
        | rs1 << 15
        | funct3 << 12
        | ((imm >> 1) & 0xf) << 8
        | ((imm >> 11) & 1) << 7
        | opcode
}
pub fn u_type(imm: u32, rd: u32, opcode: u32) -> u32 {
    (imm & 0xffff_f000) | rd << 7 | opcode
}
pub fn j_type(imm: i32, rd: u32, opcode: u32) -> u32 {
    let imm = imm as u32;
    ((imm >> 20) & 1) << 31
        | ((imm >> 1) & 0x3ff) << 21
        | ((imm >> 11) & 1) << 20
        | ((imm >> 12) & 0xff) << 12
        | rd << 7
        | opcode
}

/// OP and Zba register-register instruction by mnemonic.
pub fn rr(op: &str, rd: u32, rs1: u32, rs2: u32) -> u32 {
    let (f7, f3) = match op {
        "add" => (0x00, 0),
        "sub" => (0x20, 0),
        "sll" => (0x00, 1),
        "slt" => (0x00, 2),
        "sltu" => (0x00, 3),
        "xor" => (0x00, 4),
        "srl" => (0x00, 5),
        "sra" => (0x20, 5),
        "or" => (0x00, 6),
        "and" => (0x00, 7),
        "mul" => (0x01, 0),
        "mulh" => (0x01, 1),
        "mulhsu" => (0x01, 2),
        "mulhu" => (0x01, 3),
        "div" => (0x01, 4),
        "divu" => (0x01, 5),
        "rem" => (0x01, 6),
        "remu" => (0x01, 7),
        "sh1add" => (0x10, 2),
        "sh2add" => (0x10, 4),
        "sh3add" => (0x10, 6),
        _ => panic!("unknown op {op}"),
    };
    r_type(f7, rs2, rs1, f3, rd, 0x33)
}

/// OP-IMM instruction by mnemonic.
pub fn ri(op: &str, rd: u32, rs1: u32, imm: i32) -> u32 {
    match op {
        "addi" => i_type(imm, rs1, 0, rd, 0x13),
        "slti" => i_type(imm, rs1, 2, rd, 0x13),
        "sltiu" => i_type(imm, rs1, 3, rd, 0x13),
        "xori" => i_type(imm, rs1, 4, rd, 0x13),
        "ori" => i_type(imm, rs1, 6, rd, 0x13),
        "andi" => i_type(imm, rs1, 7, rd, 0x13),
        "slli" => i_type(imm & 31, rs1, 1, rd, 0x13),
        "srli" => i_type(imm & 31, rs1, 5, rd, 0x13),
        "srai" => i_type((imm & 31) | 0x400, rs1, 5, rd, 0x13),
        _ => panic!("unknown op {op}"),
    }
}

/// The funct3 of mnemonic `op` in `table`; panics on a mnemonic it does not hold.
fn funct3(op: &str, table: &[(&str, u32)]) -> u32 {
    table.iter().find(|(m, _)| *m == op).unwrap_or_else(|| panic!("unknown op {op}")).1
}

pub fn branch(op: &str, rs1: u32, rs2: u32, off: i32) -> u32 {
    let f3 = funct3(op, &[("beq", 0), ("bne", 1), ("blt", 4), ("bge", 5), ("bltu", 6), ("bgeu", 7)]);
    b_type(off, rs2, rs1, f3, 0x63)
}

pub fn load(op: &str, rd: u32, rs1: u32, off: i32) -> u32 {
    i_type(off, rs1, funct3(op, &[("lb", 0), ("lh", 1), ("lw", 2), ("lbu", 4), ("lhu", 5)]), rd, 0x03)
}

pub fn store(op: &str, rs2: u32, rs1: u32, off: i32) -> u32 {
    s_type(off, rs2, rs1, funct3(op, &[("sb", 0), ("sh", 1), ("sw", 2)]), 0x23)
}

pub fn lui(rd: u32, imm: u32) -> u32 {
    u_type(imm, rd, 0x37)
}
pub fn auipc(rd: u32, imm: u32) -> u32 {
    u_type(imm, rd, 0x17)
}
pub fn jal(rd: u32, off: i32) -> u32 {
    j_type(off, rd, 0x6f)
}
pub fn jalr(rd: u32, rs1: u32, off: i32) -> u32 {
    i_type(off, rs1, 0, rd, 0x67)
}
pub const ECALL: u32 = 0x0000_0073;
pub const EBREAK: u32 = 0x0010_0073;
pub const FENCE: u32 = 0x0ff0_000f;

/// `li rd, value` as LUI + ADDI (two words).
pub fn li(rd: u32, value: u32) -> [u32; 2] {
    let lo = ((value & 0xfff) as i32) << 20 >> 20;
    let hi = value.wrapping_sub(lo as u32);
    [lui(rd, hi), ri("addi", rd, rd, lo)]
}

/// A default machine (256 KiB at 0x10000) with `prog` at its base and pc there.
pub fn machine(prog: &[u32]) -> Cpu {
    let mut cpu = Cpu::new(Config::default()).unwrap();
    let bytes: Vec<u8> = prog.iter().flat_map(|w| w.to_le_bytes()).collect();
    cpu.ram_mut().load(BASE, &bytes).unwrap();
    cpu.set_pc(BASE);
    cpu
}

/// Steps `n` instructions, panicking (test failure) on an error.
pub fn steps(cpu: &mut Cpu, n: usize) {
    for _ in 0..n {
        cpu.step().unwrap();
    }
}

/// Where the shared test data lives: `$WEAVER_TESTDATA`. `None` (SKIPPED) when unset or missing; a test
/// failure under `CI=true`.
#[allow(unused_imports)]
pub use test_kit::testdata as testdata_file;

/// Whether qemu-riscv32 is on PATH; without it a test says SKIPPED (returns false), and under `CI=true` fails.
pub fn qemu_or_skip() -> bool {
    if isa_rv32im::lockstep::qemu::qemu_available() {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true but qemu-riscv32 is not on PATH (apt-get install -y qemu-user)");
    }
    eprintln!("SKIPPED: qemu-riscv32 not on PATH (apt-get install -y qemu-user)");
    false
}
