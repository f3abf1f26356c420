//! Pure semantics of the computational instructions: what the future circuit must compute, bit for bit.
//!
//! Section numbers refer to *The RISC-V Instruction Set Manual, Volume I: Unprivileged ISA* 20191213 ("Unpriv")
//! and to *RISC-V Bit-Manipulation ISA-extensions* 1.0.0 ("Bitmanip").

use crate::decode::{AluImmOp, AluOp, BranchOp};

/// `rd = op(rs1, rs2)` for the OP opcode.
///
/// - Unpriv §2.4 "Integer Register-Register Operations": ADD/SUB wrap modulo 2^32; SLL/SRL/SRA shift by the
///   low 5 bits of rs2; SLT/SLTU write 1 or 0.
/// - Unpriv §7.1 "Multiplication Operations": MUL gives the low 32 bits; MULH, MULHU, MULHSU the high 32 bits
///   of the 64-bit product of signed x signed, unsigned x unsigned and signed rs1 x unsigned rs2.
/// - Unpriv §7.2 "Division Operations", Table 7.1: DIV/DIVU round towards zero. Division by zero gives
///   quotient all ones (-1 for DIV, 2^32 - 1 for DIVU) and remainder = dividend; signed overflow
///   (-2^31 / -1) gives quotient -2^31 and remainder 0. No trap in either case.
/// - Bitmanip §2.1 (Zba), instruction pages sh1add/sh2add/sh3add: `rd = rs2 + (rs1 << n)` for n = 1, 2, 3.
pub fn alu(op: AluOp, a: u32, b: u32) -> u32 {
    let sa = a as i32;
    let sb = b as i32;
    match op {
        AluOp::Add => a.wrapping_add(b),
        AluOp::Sub => a.wrapping_sub(b),
        AluOp::Sll => a << (b & 31),
        AluOp::Slt => (sa < sb) as u32,
        AluOp::Sltu => (a < b) as u32,
        AluOp::Xor => a ^ b,
        AluOp::Srl => a >> (b & 31),
        AluOp::Sra => (sa >> (b & 31)) as u32,
        AluOp::Or => a | b,
        AluOp::And => a & b,
        AluOp::Mul => a.wrapping_mul(b),
        AluOp::Mulh => ((sa as i64 * sb as i64) >> 32) as u32,
        AluOp::Mulhsu => ((sa as i64 * b as i64) >> 32) as u32,
        AluOp::Mulhu => ((a as u64 * b as u64) >> 32) as u32,
        AluOp::Div => {
            if b == 0 {
                u32::MAX
            } else if sa == i32::MIN && sb == -1 {
                i32::MIN as u32
            } else {
                (sa / sb) as u32
            }
        }
        AluOp::Divu => a.checked_div(b).unwrap_or(u32::MAX),
        AluOp::Rem => {
            if b == 0 {
                a
            } else if sa == i32::MIN && sb == -1 {
                0
            } else {
                (sa % sb) as u32
            }
        }
        AluOp::Remu => a.checked_rem(b).unwrap_or(a),
        AluOp::Sh1add => b.wrapping_add(a << 1),
        AluOp::Sh2add => b.wrapping_add(a << 2),
        AluOp::Sh3add => b.wrapping_add(a << 3),
    }
}

/// `rd = op(rs1, imm)` for the OP-IMM opcode (Unpriv §2.4 "Integer Register-Immediate Instructions"): the
/// 12-bit immediate is sign-extended, SLTIU compares it as unsigned after sign extension (so `sltiu rd, rs1, 1`
/// is `seqz`), shifts take shamt = imm[4:0].
pub fn alu_imm(op: AluImmOp, a: u32, imm: i32) -> u32 {
    let b = imm as u32;
    match op {
        AluImmOp::Addi => alu(AluOp::Add, a, b),
        AluImmOp::Slti => alu(AluOp::Slt, a, b),
        AluImmOp::Sltiu => alu(AluOp::Sltu, a, b),
        AluImmOp::Xori => a ^ b,
        AluImmOp::Ori => a | b,
        AluImmOp::Andi => a & b,
        AluImmOp::Slli => alu(AluOp::Sll, a, b),
        AluImmOp::Srli => alu(AluOp::Srl, a, b),
        AluImmOp::Srai => alu(AluOp::Sra, a, b),
    }
}

/// Whether a conditional branch is taken (Unpriv §2.5 "Conditional Branches"): BLT/BGE compare signed,
/// BLTU/BGEU unsigned.
pub fn branch_taken(op: BranchOp, a: u32, b: u32) -> bool {
    match op {
        BranchOp::Beq => a == b,
        BranchOp::Bne => a != b,
        BranchOp::Blt => (a as i32) < (b as i32),
        BranchOp::Bge => (a as i32) >= (b as i32),
        BranchOp::Bltu => a < b,
        BranchOp::Bgeu => a >= b,
    }
}

/// Looks up an operation by its assembler mnemonic (`"add"`, `"mulhsu"`, `"sh2add"`, ...).
pub fn alu_op_by_name(name: &str) -> Option<AluOp> {
    Some(match name {
        "add" => AluOp::Add,
        "sub" => AluOp::Sub,
        "sll" => AluOp::Sll,
        "slt" => AluOp::Slt,
        "sltu" => AluOp::Sltu,
        "xor" => AluOp::Xor,
        "srl" => AluOp::Srl,
        "sra" => AluOp::Sra,
        "or" => AluOp::Or,
        "and" => AluOp::And,
        "mul" => AluOp::Mul,
        "mulh" => AluOp::Mulh,
        "mulhsu" => AluOp::Mulhsu,
        "mulhu" => AluOp::Mulhu,
        "div" => AluOp::Div,
        "divu" => AluOp::Divu,
        "rem" => AluOp::Rem,
        "remu" => AluOp::Remu,
        "sh1add" => AluOp::Sh1add,
        "sh2add" => AluOp::Sh2add,
        "sh3add" => AluOp::Sh3add,
        _ => return None,
    })
}

/// Looks up an OP-IMM operation by mnemonic (`"addi"`, `"srai"`, ...).
pub fn alu_imm_op_by_name(name: &str) -> Option<AluImmOp> {
    Some(match name {
        "addi" => AluImmOp::Addi,
        "slti" => AluImmOp::Slti,
        "sltiu" => AluImmOp::Sltiu,
        "xori" => AluImmOp::Xori,
        "ori" => AluImmOp::Ori,
        "andi" => AluImmOp::Andi,
        "slli" => AluImmOp::Slli,
        "srli" => AluImmOp::Srli,
        "srai" => AluImmOp::Srai,
        _ => return None,
    })
}

/// Looks up a branch by mnemonic (`"beq"` ... `"bgeu"`).
pub fn branch_op_by_name(name: &str) -> Option<BranchOp> {
    Some(match name {
        "beq" => BranchOp::Beq,
        "bne" => BranchOp::Bne,
        "blt" => BranchOp::Blt,
        "bge" => BranchOp::Bge,
        "bltu" => BranchOp::Bltu,
        "bgeu" => BranchOp::Bgeu,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u32 = 0x8000_0000;

    #[test]
    fn m_extension_table_7_1() {
        // Division by zero (Unpriv Table 7.1).
        assert_eq!(alu(AluOp::Div, 7, 0), 0xffff_ffff);
        assert_eq!(alu(AluOp::Divu, 7, 0), 0xffff_ffff);
        assert_eq!(alu(AluOp::Rem, 7, 0), 7);
        assert_eq!(alu(AluOp::Remu, 7, 0), 7);
        assert_eq!(alu(AluOp::Rem, (-7i32) as u32, 0), (-7i32) as u32);
        // Signed overflow.
        assert_eq!(alu(AluOp::Div, MIN, u32::MAX), MIN);
        assert_eq!(alu(AluOp::Rem, MIN, u32::MAX), 0);
        // Rounding towards zero; remainder takes the dividend's sign.
        assert_eq!(alu(AluOp::Div, (-7i32) as u32, 2), (-3i32) as u32);
        assert_eq!(alu(AluOp::Rem, (-7i32) as u32, 2), (-1i32) as u32);
        assert_eq!(alu(AluOp::Div, 7, (-2i32) as u32), (-3i32) as u32);
        assert_eq!(alu(AluOp::Rem, 7, (-2i32) as u32), 1);
        assert_eq!(alu(AluOp::Divu, MIN, u32::MAX), 0);
        assert_eq!(alu(AluOp::Remu, MIN, u32::MAX), MIN);
    }

    #[test]
    fn multiplies() {
        assert_eq!(
            alu(AluOp::Mul, 123_456_789, 987_654_321),
            123_456_789u32.wrapping_mul(987_654_321)
        );
        assert_eq!(alu(AluOp::Mulhu, u32::MAX, u32::MAX), 0xffff_fffe);
        assert_eq!(alu(AluOp::Mulh, u32::MAX, u32::MAX), 0); // (-1)*(-1) = 1
        assert_eq!(alu(AluOp::Mulhsu, u32::MAX, u32::MAX), u32::MAX); // -1 * (2^32-1) = -(2^32-1)
        assert_eq!(alu(AluOp::Mulh, MIN, MIN), 0x4000_0000);
        assert_eq!(alu(AluOp::Mulhsu, MIN, u32::MAX), 0x8000_0000);
        assert_eq!(alu(AluOp::Mulhu, MIN, MIN), 0x4000_0000);
        // 123456789 * 987654321 = 121932631112635269: high half 28389652, low half 0xfbff5385
        let p: u64 = 123_456_789u64 * 987_654_321u64;
        assert_eq!(p, 121_932_631_112_635_269);
        assert_eq!(alu(AluOp::Mulhu, 123_456_789, 987_654_321), 28_389_652);
        assert_eq!(alu(AluOp::Mul, 123_456_789, 987_654_321), 0xfbff_5385);
    }

    #[test]
    fn shifts_and_compares() {
        assert_eq!(alu(AluOp::Sll, 1, 33), 2); // only low 5 bits of rs2
        assert_eq!(alu(AluOp::Sra, MIN, 31), u32::MAX);
        assert_eq!(alu(AluOp::Srl, MIN, 31), 1);
        assert_eq!(alu(AluOp::Slt, u32::MAX, 0), 1);
        assert_eq!(alu(AluOp::Sltu, u32::MAX, 0), 0);
        assert_eq!(alu_imm(AluImmOp::Sltiu, 5, -1), 1); // -1 sign-extends to 0xffffffff
        assert_eq!(alu_imm(AluImmOp::Sltiu, 0, 1), 1);
        assert_eq!(alu_imm(AluImmOp::Xori, 0x0f0f_0f0f, -1), 0xf0f0_f0f0);
        assert_eq!(alu_imm(AluImmOp::Andi, 0xffff_ffff, -2048), 0xffff_f800);
    }

    #[test]
    fn zba() {
        assert_eq!(alu(AluOp::Sh1add, 3, 100), 106);
        assert_eq!(alu(AluOp::Sh2add, 3, 100), 112);
        assert_eq!(alu(AluOp::Sh3add, 3, 100), 124);
        assert_eq!(alu(AluOp::Sh3add, MIN | 1, 0), 8); // bits shifted out are lost
        assert_eq!(alu(AluOp::Sh1add, u32::MAX, 2), 0);
    }

    #[test]
    fn branches() {
        assert!(branch_taken(BranchOp::Blt, u32::MAX, 0));
        assert!(!branch_taken(BranchOp::Bltu, u32::MAX, 0));
        assert!(branch_taken(BranchOp::Bge, 0, 0));
        assert!(branch_taken(BranchOp::Bgeu, u32::MAX, 1));
        assert!(!branch_taken(BranchOp::Bge, MIN, 0));
    }
}
