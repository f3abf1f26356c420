//! Decode: one parallel equality per instruction over the fetched word's opcode and function fields (Unpriv
//! Table 24.2), legality, and the immediates (Unpriv §2.3). This is the circuit's decoder; the interpreter's is
//! [`crate::decode`], whose strictness it matches (every reserved encoding is illegal).

use super::fetch::Fetch;
use isa_api::{CircuitBuilder, NodeId};

/// What [`decode`] hands the later sections (node ids of its signals): the immediates, the instruction classes
/// and one 1-bit flag per instruction, named by its mnemonic.
#[derive(Clone)]
pub(super) struct Decode {
    /// I-type immediate, sign-extended to 32 bits.
    pub(super) imm_i: NodeId,
    /// U-type immediate (`imm << 12`).
    pub(super) imm_u: NodeId,
    /// OP opcode (register-register; selects rs2 rather than the immediate as the ALU's second operand).
    pub(super) is_op: NodeId,
    /// DIV, DIVU, REM or REMU.
    pub(super) is_div: NodeId,
    /// ECALL.
    pub(super) is_ecall: NodeId,
    /// S-type immediate, sign-extended to 32 bits.
    pub(super) imm_s: NodeId,
    /// Any load.
    pub(super) is_load: NodeId,
    /// Any store.
    pub(super) is_store: NodeId,
    /// SYSTEM opcode.
    pub(super) is_sys: NodeId,
    /// LB, LH, LW, LBU, LHU.
    pub(super) ld: Vec<NodeId>,
    /// SB, SH, SW.
    pub(super) st: Vec<NodeId>,
    /// BEQ, BNE, BLT, BGE, BLTU, BGEU.
    pub(super) br: Vec<NodeId>,
    /// B-type immediate, sign-extended to 32 bits.
    pub(super) imm_b: NodeId,
    /// J-type immediate, sign-extended to 32 bits.
    pub(super) imm_j: NodeId,
    /// JAL.
    pub(super) is_jal: NodeId,
    /// JALR.
    pub(super) is_jalr: NodeId,
    // One flag per instruction, by mnemonic.
    pub(super) add: NodeId,
    pub(super) addi: NodeId,
    pub(super) and: NodeId,
    pub(super) andi: NodeId,
    /// Not an RV32IM+Zba instruction.
    pub(super) illegal: NodeId,
    /// AUIPC.
    pub(super) is_auipc: NodeId,
    /// EBREAK.
    pub(super) is_ebreak: NodeId,
    /// LUI.
    pub(super) is_lui: NodeId,
    pub(super) mul: NodeId,
    pub(super) mulh: NodeId,
    pub(super) mulhsu: NodeId,
    pub(super) mulhu: NodeId,
    pub(super) or: NodeId,
    pub(super) ori: NodeId,
    pub(super) sh1: NodeId,
    pub(super) sh2: NodeId,
    pub(super) sh3: NodeId,
    pub(super) sll: NodeId,
    pub(super) slli: NodeId,
    pub(super) slt: NodeId,
    pub(super) slti: NodeId,
    pub(super) sltiu: NodeId,
    pub(super) sltu: NodeId,
    pub(super) sra: NodeId,
    pub(super) srai: NodeId,
    pub(super) srl: NodeId,
    pub(super) srli: NodeId,
    pub(super) sub: NodeId,
    /// The instruction writes rd (in one step; the division writes it in its last step).
    pub(super) writes_rd: NodeId,
    pub(super) xor: NodeId,
    pub(super) xori: NodeId,
}

/// Decode: one parallel equality per instruction (Unpriv Table 24.2), and the immediates (Unpriv §2.3).
pub(super) fn decode(s: &mut CircuitBuilder, fetch: &Fetch) -> Decode {
    let Fetch { key15, key8, op5, w, .. } = fetch.clone();
    // ---- decode: one parallel equality per instruction (Unpriv Table 24.2; opcode >> 2 below) -------------
    let k8 = |s: &mut CircuitBuilder, op: u64, f3: u64| s.eq_const(key8, op >> 2 | f3 << 5);
    let k15 = |s: &mut CircuitBuilder, op: u64, f3: u64, f7: u64| s.eq_const(key15, op >> 2 | f3 << 5 | f7 << 8);
    let is_lui = s.eq_const(op5, 0x37 >> 2);
    let is_auipc = s.eq_const(op5, 0x17 >> 2);
    let is_jal = s.eq_const(op5, 0x6f >> 2);
    let is_jalr = k8(s, 0x67, 0);
    let is_sys = s.eq_const(op5, 0x73 >> 2);
    let br: Vec<NodeId> = [0u64, 1, 4, 5, 6, 7].iter().map(|f| k8(s, 0x63, *f)).collect(); // beq bne blt bge bltu bgeu
    let ld: Vec<NodeId> = [0u64, 1, 2, 4, 5].iter().map(|f| k8(s, 0x03, *f)).collect(); // lb lh lw lbu lhu
    let st: Vec<NodeId> = [0u64, 1, 2].iter().map(|f| k8(s, 0x23, *f)).collect(); // sb sh sw
    let addi = k8(s, 0x13, 0);
    let slti = k8(s, 0x13, 2);
    let sltiu = k8(s, 0x13, 3);
    let xori = k8(s, 0x13, 4);
    let ori = k8(s, 0x13, 6);
    let andi = k8(s, 0x13, 7);
    let slli = k15(s, 0x13, 1, 0);
    let srli = k15(s, 0x13, 5, 0);
    let srai = k15(s, 0x13, 5, 0x20);
    let rr = |s: &mut CircuitBuilder, f7: u64, f3: u64| k15(s, 0x33, f3, f7);
    let add = rr(s, 0, 0);
    let sub = rr(s, 0x20, 0);
    let sll = rr(s, 0, 1);
    let slt = rr(s, 0, 2);
    let sltu = rr(s, 0, 3);
    let xor = rr(s, 0, 4);
    let srl = rr(s, 0, 5);
    let sra = rr(s, 0x20, 5);
    let or = rr(s, 0, 6);
    let and = rr(s, 0, 7);
    let mul = rr(s, 1, 0);
    let mulh = rr(s, 1, 1);
    let mulhsu = rr(s, 1, 2);
    let mulhu = rr(s, 1, 3);
    let dv: Vec<NodeId> = (4..8).map(|f| rr(s, 1, f)).collect(); // div divu rem remu
    let sh1 = rr(s, 0x10, 2);
    let sh2 = rr(s, 0x10, 4);
    let sh3 = rr(s, 0x10, 6);
    let is_fence = k8(s, 0x0f, 0);
    let is_ecall = s.eq_const(w, 0x0000_0073);
    let is_ebreak = s.eq_const(w, 0x0010_0073);
    let is_op = s.eq_const(op5, 0x33 >> 2);
    let is_branch = s.any(&br);
    let is_load = s.any(&ld);
    let is_store = s.any(&st);
    let is_div = s.any(&dv);
    let rd_writers = [
        is_lui, is_auipc, is_jal, is_jalr, addi, slti, sltiu, xori, ori, andi, slli, srli, srai, add, sub, sll, slt,
        sltu, xor, srl, sra, or, and, mul, mulh, mulhsu, mulhu, sh1, sh2, sh3, is_load,
    ];
    let writes_rd = s.any(&rd_writers);
    let legal = {
        let any_instr = s.any(&[writes_rd, is_branch, is_store, is_div, is_fence, is_ecall, is_ebreak]);
        let b0 = s.bit(w, 0);
        let b1 = s.bit(w, 1);
        s.all(&[any_instr, b0, b1])
    };
    let illegal = s.not(legal);

    // ---- immediates (Unpriv §2.3) -----------------------------------------------------------------------------
    let imm_i = {
        let x = s.slice(w, 20, 12);
        s.sext(x, 32)
    };
    let imm_s = {
        let lo = s.slice(w, 7, 5);
        let hi = s.slice(w, 25, 7);
        let x = s.concat(&[lo, hi]);
        s.sext(x, 32)
    };
    let imm_b = {
        let z = s.konst_masked(1, 0);
        let b1 = s.slice(w, 8, 4);
        let b5 = s.slice(w, 25, 6);
        let b11 = s.slice(w, 7, 1);
        let b12 = s.slice(w, 31, 1);
        let x = s.concat(&[z, b1, b5, b11, b12]);
        s.sext(x, 32)
    };
    let imm_u = {
        let z = s.konst_masked(12, 0);
        let hi = s.slice(w, 12, 20);
        s.concat(&[z, hi])
    };
    let imm_j = {
        let z = s.konst_masked(1, 0);
        let b1 = s.slice(w, 21, 10);
        let b11 = s.slice(w, 20, 1);
        let b12 = s.slice(w, 12, 8);
        let b20 = s.slice(w, 31, 1);
        let x = s.concat(&[z, b1, b11, b12, b20]);
        s.sext(x, 32)
    };
    Decode {
        imm_i, imm_u, is_op, is_div, is_ecall, imm_s, is_load, is_store, is_sys, ld, st, br, imm_b, imm_j, is_jal,
        is_jalr, add, addi, and, andi, illegal, is_auipc, is_ebreak, is_lui, mul, mulh, mulhsu, mulhu, or, ori, sh1,
        sh2, sh3, sll, slli, slt, slti, sltiu, sltu, sra, srai, srl, srli, sub, writes_rd, xor, xori,
    }
}
