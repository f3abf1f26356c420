//! Instruction decoding for RV32IM + Zba.
//!
//! References (cited as "Unpriv" below): *The RISC-V Instruction Set Manual, Volume I: Unprivileged ISA*,
//! document version 20191213 (ratified):
//! - §2.2 "Base Instruction Formats" (R/I/S/U) and §2.3 "Immediate Encoding Variants" (B/J immediates),
//! - §2.4 "Integer Computational Instructions", §2.5 "Control Transfer Instructions",
//!   §2.6 "Load and Store Instructions", §2.7 "Memory Ordering Instructions" (FENCE),
//!   §2.8 "Environment Call and Breakpoints" (ECALL/EBREAK),
//! - Chapter 7 "M Standard Extension for Integer Multiplication and Division, Version 2.0",
//! - Chapter 24 "RV32/64G Instruction Set Listings", Table 24.2 (the opcode/funct3/funct7 values used here).
//!
//! Zba: *RISC-V Bit-Manipulation ISA-extensions*, version 1.0.0 (2021), §2.1 "Zba: Address generation" and the
//! instruction pages of §3 (`sh1add`, `sh2add`, `sh3add`: OP opcode, funct7 = 0010000, funct3 = 010/100/110).
//!
//! Decoding is strict: every reserved encoding of these extensions (non-zero upper bits of an RV32 shift
//! immediate, unknown funct7, LD/LWU/SD, CSR instructions, FENCE.I, compressed encodings) is illegal, so that
//! the interpreter stops loudly instead of guessing.

/// Register index 0..=31.
pub type Reg = u8;

/// Register-register operations: RV32I OP (Unpriv §2.4 "Integer Register-Register Operations"), the M extension
/// (Unpriv §7.1, §7.2) and Zba (Bitmanip §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AluOp {
    Add,
    Sub,
    Sll,
    Slt,
    Sltu,
    Xor,
    Srl,
    Sra,
    Or,
    And,
    Mul,
    Mulh,
    Mulhsu,
    Mulhu,
    Div,
    Divu,
    Rem,
    Remu,
    Sh1add,
    Sh2add,
    Sh3add,
}

/// Register-immediate operations (Unpriv §2.4 "Integer Register-Immediate Instructions").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AluImmOp {
    Addi,
    Slti,
    Sltiu,
    Xori,
    Ori,
    Andi,
    Slli,
    Srli,
    Srai,
}

/// Conditional branches (Unpriv §2.5 "Conditional Branches").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BranchOp {
    Beq,
    Bne,
    Blt,
    Bge,
    Bltu,
    Bgeu,
}

/// Loads (Unpriv §2.6): width and sign extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LoadOp {
    Lb,
    Lh,
    Lw,
    Lbu,
    Lhu,
}

/// Stores (Unpriv §2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StoreOp {
    Sb,
    Sh,
    Sw,
}

impl LoadOp {
    /// Access width in bytes.
    pub fn size(self) -> u32 {
        match self {
            LoadOp::Lb | LoadOp::Lbu => 1,
            LoadOp::Lh | LoadOp::Lhu => 2,
            LoadOp::Lw => 4,
        }
    }
}

impl StoreOp {
    /// Access width in bytes.
    pub fn size(self) -> u32 {
        match self {
            StoreOp::Sb => 1,
            StoreOp::Sh => 2,
            StoreOp::Sw => 4,
        }
    }
}

/// One decoded instruction. Immediates are already sign-extended to `i32` as Unpriv §2.3 prescribes
/// (U-type immediates carry their low 12 zero bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Instr {
    /// LUI (Unpriv §2.4): `rd = imm` (imm = inst[31:12] << 12).
    Lui { rd: Reg, imm: i32 },
    /// AUIPC (Unpriv §2.4): `rd = pc + imm`.
    Auipc { rd: Reg, imm: i32 },
    /// JAL (Unpriv §2.5): `rd = pc + 4; pc += imm`.
    Jal { rd: Reg, imm: i32 },
    /// JALR (Unpriv §2.5): `t = pc + 4; pc = (rs1 + imm) & !1; rd = t`.
    Jalr { rd: Reg, rs1: Reg, imm: i32 },
    /// Conditional branch (Unpriv §2.5).
    Branch {
        op: BranchOp,
        rs1: Reg,
        rs2: Reg,
        imm: i32,
    },
    /// Load (Unpriv §2.6): address `rs1 + imm`.
    Load {
        op: LoadOp,
        rd: Reg,
        rs1: Reg,
        imm: i32,
    },
    /// Store (Unpriv §2.6): address `rs1 + imm`.
    Store {
        op: StoreOp,
        rs1: Reg,
        rs2: Reg,
        imm: i32,
    },
    /// OP-IMM (Unpriv §2.4). For shifts `imm` is the shift amount 0..=31.
    OpImm {
        op: AluImmOp,
        rd: Reg,
        rs1: Reg,
        imm: i32,
    },
    /// OP (Unpriv §2.4, §7, Zba).
    Op {
        op: AluOp,
        rd: Reg,
        rs1: Reg,
        rs2: Reg,
    },
    /// FENCE (Unpriv §2.7): a no-op on this single-hart machine.
    Fence,
    /// ECALL (Unpriv §2.8): host call, Linux syscall ABI (a7 = number, a0.. = arguments).
    Ecall,
    /// EBREAK (Unpriv §2.8): host call (breakpoint).
    Ebreak,
}

/// Every mnemonic of the machine, in the order of Unpriv Table 24.2 (RV32I), then RV32M, then Zba.
pub const MNEMONICS: [&str; 48] = [
    "lui", "auipc", "jal", "jalr", "beq", "bne", "blt", "bge", "bltu", "bgeu", "lb", "lh", "lw",
    "lbu", "lhu", "sb", "sh", "sw", "addi", "slti", "sltiu", "xori", "ori", "andi", "slli", "srli",
    "srai", "add", "sub", "sll", "slt", "sltu", "xor", "srl", "sra", "or", "and", "fence", "ecall",
    "ebreak", "mul", "mulh", "mulhsu", "mulhu", "div", "divu", "rem", "remu",
];

/// The three Zba mnemonics.
pub const ZBA_MNEMONICS: [&str; 3] = ["sh1add", "sh2add", "sh3add"];

impl Instr {
    /// The assembler mnemonic.
    pub fn mnemonic(&self) -> &'static str {
        match self {
            Instr::Lui { .. } => "lui",
            Instr::Auipc { .. } => "auipc",
            Instr::Jal { .. } => "jal",
            Instr::Jalr { .. } => "jalr",
            Instr::Branch { op, .. } => match op {
                BranchOp::Beq => "beq",
                BranchOp::Bne => "bne",
                BranchOp::Blt => "blt",
                BranchOp::Bge => "bge",
                BranchOp::Bltu => "bltu",
                BranchOp::Bgeu => "bgeu",
            },
            Instr::Load { op, .. } => match op {
                LoadOp::Lb => "lb",
                LoadOp::Lh => "lh",
                LoadOp::Lw => "lw",
                LoadOp::Lbu => "lbu",
                LoadOp::Lhu => "lhu",
            },
            Instr::Store { op, .. } => match op {
                StoreOp::Sb => "sb",
                StoreOp::Sh => "sh",
                StoreOp::Sw => "sw",
            },
            Instr::OpImm { op, .. } => match op {
                AluImmOp::Addi => "addi",
                AluImmOp::Slti => "slti",
                AluImmOp::Sltiu => "sltiu",
                AluImmOp::Xori => "xori",
                AluImmOp::Ori => "ori",
                AluImmOp::Andi => "andi",
                AluImmOp::Slli => "slli",
                AluImmOp::Srli => "srli",
                AluImmOp::Srai => "srai",
            },
            Instr::Op { op, .. } => match op {
                AluOp::Add => "add",
                AluOp::Sub => "sub",
                AluOp::Sll => "sll",
                AluOp::Slt => "slt",
                AluOp::Sltu => "sltu",
                AluOp::Xor => "xor",
                AluOp::Srl => "srl",
                AluOp::Sra => "sra",
                AluOp::Or => "or",
                AluOp::And => "and",
                AluOp::Mul => "mul",
                AluOp::Mulh => "mulh",
                AluOp::Mulhsu => "mulhsu",
                AluOp::Mulhu => "mulhu",
                AluOp::Div => "div",
                AluOp::Divu => "divu",
                AluOp::Rem => "rem",
                AluOp::Remu => "remu",
                AluOp::Sh1add => "sh1add",
                AluOp::Sh2add => "sh2add",
                AluOp::Sh3add => "sh3add",
            },
            Instr::Fence => "fence",
            Instr::Ecall => "ecall",
            Instr::Ebreak => "ebreak",
        }
    }
}

#[inline]
fn rd(w: u32) -> Reg {
    ((w >> 7) & 31) as Reg
}
#[inline]
fn rs1(w: u32) -> Reg {
    ((w >> 15) & 31) as Reg
}
#[inline]
fn rs2(w: u32) -> Reg {
    ((w >> 20) & 31) as Reg
}
#[inline]
fn funct3(w: u32) -> u32 {
    (w >> 12) & 7
}
#[inline]
fn funct7(w: u32) -> u32 {
    w >> 25
}

/// I-immediate: inst[31:20] sign-extended (Unpriv §2.3, Figure 2.4).
#[inline]
pub fn imm_i(w: u32) -> i32 {
    (w as i32) >> 20
}
/// S-immediate: inst[31:25] ++ inst[11:7] sign-extended (Unpriv §2.3).
#[inline]
pub fn imm_s(w: u32) -> i32 {
    (((w & 0xfe00_0000) as i32) >> 20) | ((w >> 7) & 0x1f) as i32
}
/// B-immediate: inst[31|7|30:25|11:8] << 1 sign-extended (Unpriv §2.3).
#[inline]
pub fn imm_b(w: u32) -> i32 {
    (((w & 0x8000_0000) as i32) >> 19)
        | (((w >> 7) & 1) << 11) as i32
        | (((w >> 25) & 0x3f) << 5) as i32
        | (((w >> 8) & 0xf) << 1) as i32
}
/// U-immediate: inst[31:12] << 12 (Unpriv §2.3).
#[inline]
pub fn imm_u(w: u32) -> i32 {
    (w & 0xffff_f000) as i32
}
/// J-immediate: inst[31|19:12|20|30:21] << 1 sign-extended (Unpriv §2.3).
#[inline]
pub fn imm_j(w: u32) -> i32 {
    (((w & 0x8000_0000) as i32) >> 11)
        | (w & 0x000f_f000) as i32
        | (((w >> 20) & 1) << 11) as i32
        | (((w >> 21) & 0x3ff) << 1) as i32
}

/// Decodes one 32-bit instruction word; `None` for every encoding that is not RV32IM+Zba (an illegal
/// instruction for this machine). Opcode values from Unpriv Table 24.1/24.2.
pub fn decode(w: u32) -> Option<Instr> {
    if w & 3 != 3 {
        return None; // compressed (C) encodings are not part of this machine; all-zero is defined illegal
    }
    let opcode = w & 0x7f;
    Some(match opcode {
        0b011_0111 => Instr::Lui {
            rd: rd(w),
            imm: imm_u(w),
        },
        0b001_0111 => Instr::Auipc {
            rd: rd(w),
            imm: imm_u(w),
        },
        0b110_1111 => Instr::Jal {
            rd: rd(w),
            imm: imm_j(w),
        },
        0b110_0111 => {
            if funct3(w) != 0 {
                return None;
            }
            Instr::Jalr {
                rd: rd(w),
                rs1: rs1(w),
                imm: imm_i(w),
            }
        }
        0b110_0011 => {
            let op = match funct3(w) {
                0b000 => BranchOp::Beq,
                0b001 => BranchOp::Bne,
                0b100 => BranchOp::Blt,
                0b101 => BranchOp::Bge,
                0b110 => BranchOp::Bltu,
                0b111 => BranchOp::Bgeu,
                _ => return None,
            };
            Instr::Branch {
                op,
                rs1: rs1(w),
                rs2: rs2(w),
                imm: imm_b(w),
            }
        }
        0b000_0011 => {
            let op = match funct3(w) {
                0b000 => LoadOp::Lb,
                0b001 => LoadOp::Lh,
                0b010 => LoadOp::Lw,
                0b100 => LoadOp::Lbu,
                0b101 => LoadOp::Lhu,
                _ => return None, // LD, LWU and reserved: not RV32
            };
            Instr::Load {
                op,
                rd: rd(w),
                rs1: rs1(w),
                imm: imm_i(w),
            }
        }
        0b010_0011 => {
            let op = match funct3(w) {
                0b000 => StoreOp::Sb,
                0b001 => StoreOp::Sh,
                0b010 => StoreOp::Sw,
                _ => return None,
            };
            Instr::Store {
                op,
                rs1: rs1(w),
                rs2: rs2(w),
                imm: imm_s(w),
            }
        }
        0b001_0011 => {
            let shamt = ((w >> 20) & 31) as i32;
            let (op, imm) = match funct3(w) {
                0b000 => (AluImmOp::Addi, imm_i(w)),
                0b010 => (AluImmOp::Slti, imm_i(w)),
                0b011 => (AluImmOp::Sltiu, imm_i(w)),
                0b100 => (AluImmOp::Xori, imm_i(w)),
                0b110 => (AluImmOp::Ori, imm_i(w)),
                0b111 => (AluImmOp::Andi, imm_i(w)),
                // RV32 shifts: imm[11:5] must be 0000000 (SRLI/SLLI) or 0100000 (SRAI); shamt[5] != 0 is reserved.
                0b001 if funct7(w) == 0 => (AluImmOp::Slli, shamt),
                0b101 if funct7(w) == 0 => (AluImmOp::Srli, shamt),
                0b101 if funct7(w) == 0b010_0000 => (AluImmOp::Srai, shamt),
                _ => return None,
            };
            Instr::OpImm {
                op,
                rd: rd(w),
                rs1: rs1(w),
                imm,
            }
        }
        0b011_0011 => {
            let op = match (funct7(w), funct3(w)) {
                (0b000_0000, 0b000) => AluOp::Add,
                (0b010_0000, 0b000) => AluOp::Sub,
                (0b000_0000, 0b001) => AluOp::Sll,
                (0b000_0000, 0b010) => AluOp::Slt,
                (0b000_0000, 0b011) => AluOp::Sltu,
                (0b000_0000, 0b100) => AluOp::Xor,
                (0b000_0000, 0b101) => AluOp::Srl,
                (0b010_0000, 0b101) => AluOp::Sra,
                (0b000_0000, 0b110) => AluOp::Or,
                (0b000_0000, 0b111) => AluOp::And,
                (0b000_0001, 0b000) => AluOp::Mul,
                (0b000_0001, 0b001) => AluOp::Mulh,
                (0b000_0001, 0b010) => AluOp::Mulhsu,
                (0b000_0001, 0b011) => AluOp::Mulhu,
                (0b000_0001, 0b100) => AluOp::Div,
                (0b000_0001, 0b101) => AluOp::Divu,
                (0b000_0001, 0b110) => AluOp::Rem,
                (0b000_0001, 0b111) => AluOp::Remu,
                (0b001_0000, 0b010) => AluOp::Sh1add,
                (0b001_0000, 0b100) => AluOp::Sh2add,
                (0b001_0000, 0b110) => AluOp::Sh3add,
                _ => return None,
            };
            Instr::Op {
                op,
                rd: rd(w),
                rs1: rs1(w),
                rs2: rs2(w),
            }
        }
        // MISC-MEM: FENCE only (funct3 = 000). FENCE.I belongs to Zifencei, which this machine does not have.
        0b000_1111 if funct3(w) == 0 => Instr::Fence,
        // SYSTEM: exactly ECALL and EBREAK (Unpriv §2.8); CSR instructions (Zicsr) are illegal here.
        0b111_0011 => match w {
            0x0000_0073 => Instr::Ecall,
            0x0010_0073 => Instr::Ebreak,
            _ => return None,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_known_words() {
        // Words assembled by riscv64-unknown-elf-as (-march=rv32im_zba).
        assert_eq!(
            decode(0x00a00513),
            Some(Instr::OpImm {
                op: AluImmOp::Addi,
                rd: 10,
                rs1: 0,
                imm: 10
            })
        ); // li a0,10
        assert_eq!(
            decode(0xfff00293),
            Some(Instr::OpImm {
                op: AluImmOp::Addi,
                rd: 5,
                rs1: 0,
                imm: -1
            })
        ); // li t0,-1
        assert_eq!(
            decode(0x40b55533),
            Some(Instr::Op {
                op: AluOp::Sra,
                rd: 10,
                rs1: 10,
                rs2: 11
            })
        ); // sra a0,a0,a1
        assert_eq!(
            decode(0x20b52533),
            Some(Instr::Op {
                op: AluOp::Sh1add,
                rd: 10,
                rs1: 10,
                rs2: 11
            })
        );
        assert_eq!(
            decode(0x20b54533),
            Some(Instr::Op {
                op: AluOp::Sh2add,
                rd: 10,
                rs1: 10,
                rs2: 11
            })
        );
        assert_eq!(
            decode(0x20b56533),
            Some(Instr::Op {
                op: AluOp::Sh3add,
                rd: 10,
                rs1: 10,
                rs2: 11
            })
        );
        assert_eq!(
            decode(0x02b50533),
            Some(Instr::Op {
                op: AluOp::Mul,
                rd: 10,
                rs1: 10,
                rs2: 11
            })
        );
        assert_eq!(decode(0x00000073), Some(Instr::Ecall));
        assert_eq!(decode(0x00100073), Some(Instr::Ebreak));
        assert_eq!(decode(0x0ff0000f), Some(Instr::Fence)); // fence iorw,iorw
        assert_eq!(
            decode(0x00008067),
            Some(Instr::Jalr {
                rd: 0,
                rs1: 1,
                imm: 0
            })
        ); // ret
    }

    #[test]
    fn immediates_extreme_values() {
        // jal x0, -2 (0xfffff06f... ) : J-imm all ones except bit 0 -> -2
        assert_eq!(imm_j(0xfffff06f), -2);
        // beq x0,x0,-4096: imm[12]=1, rest 0
        assert_eq!(imm_b(0x80000063), -4096);
        // beq x0,x0,+4094
        assert_eq!(imm_b(0x7e000fe3), 4094);
        assert_eq!(imm_s(0xfe000fa3), -1);
        assert_eq!(imm_s(0x7e000fa3), 2047);
        assert_eq!(imm_u(0xfffff037), -4096);
        assert_eq!(imm_j(0x7ffff06f), 1_048_574);
        assert_eq!(imm_j(0x8000006f), -1_048_576);
    }

    #[test]
    fn rejects_reserved_encodings() {
        for w in [
            0u32,                   // defined illegal
            0xffff_ffff,            // defined illegal
            0x0001,                 // compressed
            0x02051513,             // slli a0,a0,32 (shamt[5]=1, reserved in RV32)
            0x00053503,             // ld (RV64)
            0x00056503,             // lwu (RV64)
            0x00a53023,             // sd (RV64)
            0x0000100f,             // fence.i (Zifencei)
            0x30002573,             // csrr a0, mstatus (Zicsr)
            0x10500073,             // wfi
            0x30200073,             // mret
            0x60b52533,             // funct7 0110000 (Zbb-ish) not in this machine
            0x40b50533 | (1 << 12), // sub with funct3=001
            0x00001067,             // jalr with funct3=001
            0x00002063,             // branch funct3=010
            0x0000002b,             // custom-1 opcode
        ] {
            assert_eq!(decode(w), None, "{w:#010x} should be illegal");
        }
    }
}
