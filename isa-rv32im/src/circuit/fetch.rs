//! Fetch: the committed state at the start of the step (`PC`, `BUSY`), the instruction word at pc (Unpriv §1.5: a
//! little-endian 32-bit parcel), its fields, and the register-file reads (rs1, rs2, the scratch rows, a0, a1, a2,
//! a7) the later sections need.

use super::{Ram, scratch};
use crate::face::{BUSY_BITS, BUSY_STOPPING, mem, reg};
use isa_api::{CircuitBuilder, NodeId};

/// What [`fetch`] hands the later sections (node ids of its signals).
#[derive(Clone)]
pub(super) struct Fetch {
    /// `opcode[6:2]`, funct3 and funct7 side by side (15 bits): the key of the R-type and shift decoders.
    pub(super) key15: NodeId,
    /// `opcode[6:2]` and funct3 (8 bits).
    pub(super) key8: NodeId,
    /// `opcode[6:2]`.
    pub(super) op5: NodeId,
    /// The instruction word.
    pub(super) w: NodeId,
    /// The `PC` register (a RAM word index).
    pub(super) pc: NodeId,
    /// `x[rs1]`.
    pub(super) a: NodeId,
    /// `x[rs2]`.
    pub(super) bv: NodeId,
    /// funct3.
    pub(super) f3: NodeId,
    /// The `BUSY` register.
    pub(super) busy: NodeId,
    /// `BUSY` = 0: the first step of an instruction.
    pub(super) busy0: NodeId,
    /// Scratch row D of `X` (the last byte's address of a syscall buffer; |divisor|).
    pub(super) s_d: NodeId,
    /// Scratch row R of `X` (the partial remainder).
    pub(super) s_r: NodeId,
    /// Scratch row N of `X` (the syscall's current byte address; the first word of a crossing load).
    pub(super) s_n: NodeId,
    /// a0 (the syscall's fd; the exit status).
    pub(super) a0: NodeId,
    /// a1 (the syscall's buffer).
    pub(super) a1: NodeId,
    /// a2 (the syscall's length).
    pub(super) a2: NodeId,
    /// a7 (the syscall number).
    pub(super) a7: NodeId,
    /// rd (5 bits).
    pub(super) rd: NodeId,
    /// rd as a 6-bit row of `X`.
    pub(super) rd6: NodeId,
    /// `BUSY` = [`BUSY_STOPPING`]: this step halts.
    pub(super) stopping: NodeId,
}

/// State, fetch and register reads: the committed state at the start of the step (Unpriv §1.5: a
/// little-endian 32-bit parcel at pc).
pub(super) fn fetch(s: &mut CircuitBuilder, ram: &Ram) -> Fetch {
    let Ram { aw, words, .. } = *ram;
    // ---- state -------------------------------------------------------------------------------------------
    let pc = s.reg(reg::PC, aw);
    let busy = s.reg(reg::BUSY, BUSY_BITS);
    let stopping = s.eq_const(busy, BUSY_STOPPING);
    let busy0 = s.eq_const(busy, 0);

    // ---- fetch (Unpriv §1.5: little-endian 32-bit parcel at pc) -------------------------------------------
    let w = if words {
        s.load(mem::RAM0, 32, pc)
    } else {
        let lanes_f: Vec<NodeId> = (0..4).map(|i| s.load(mem::RAM0 + i, 8, pc)).collect();
        s.concat(&lanes_f)
    };
    let op5 = s.slice(w, 2, 5); // opcode[6:2]; opcode[1:0] must be 11 (checked in `legal`)
    let rd = s.slice(w, 7, 5);
    let f3 = s.slice(w, 12, 3);
    let rs1 = s.slice(w, 15, 5);
    let rs2 = s.slice(w, 20, 5);
    let f7 = s.slice(w, 25, 7);
    let key8 = s.concat(&[op5, f3]);
    let key15 = s.concat(&[op5, f3, f7]);

    // ---- register reads (committed state at the start of the step) ---------------------------------------
    let rd6 = s.zext(rd, 6);
    let rs1_addr = s.zext(rs1, 6);
    let rs2_addr = s.zext(rs2, 6);
    let a = s.load(mem::X, 32, rs1_addr);
    let bv = s.load(mem::X, 32, rs2_addr);
    let rowk = |s: &mut CircuitBuilder, r: u64| {
        let ad = s.konst_masked(6, r);
        s.load(mem::X, 32, ad)
    };
    let s_n = rowk(s, scratch::N);
    let s_d = rowk(s, scratch::D);
    let s_r = rowk(s, scratch::R);
    let a0 = rowk(s, 10);
    let a1 = rowk(s, 11);
    let a2 = rowk(s, 12);
    let a7 = rowk(s, 17);
    Fetch { key15, key8, op5, w, pc, a, bv, f3, busy, busy0, s_d, s_n, s_r, a0, a1, a2, a7, rd, rd6, stopping }
}
