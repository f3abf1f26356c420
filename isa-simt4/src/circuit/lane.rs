//! One lane: its reads of the running warp's registers (`A = R[rs1]`, `B = R[rs2]`, `D = R[rd]`, the counter
//! `C = R[31]`), activity, the operand `b`, then its ALU, memory, counter and division sections, and the data of
//! its register write (one case per opcode class).

use super::alu::{Alu, alu};
use super::counter::{Counter, counter};
use super::decode::{Decode, Operands, is};
use super::divide::{LaneDiv, lane_division};
use super::fetch::Fetch;
use super::memory::{LaneMem, lane_memory};
use super::shape::Shape;
use crate::face::mem;
use crate::isa::Opcode;
use isa_api::{CircuitBuilder, NodeId};

/// One lane's register reads and operands.
pub(super) struct Reads {
    /// `R[rs1]`, `R[rs2]`, `R[rd]` and the counter word `R[31]` (32 bits).
    pub a: NodeId,
    pub rb: NodeId,
    pub dv: NodeId,
    pub cw: NodeId,
    /// The counter: the low byte of `R[31]`.
    pub c: NodeId,
    /// Active (1 bit): the counter is 0.
    pub act: NodeId,
    /// `BUSY == l` (1 bit).
    pub bsel: NodeId,
    /// `b = imm_b ? imm : R[rs2]` (32 bits).
    pub bv: NodeId,
    /// `b`'s shift amount (6 bits): its low 5 bits and "`b` >= 32".
    pub by: NodeId,
}

/// What the rest of the circuit uses of a lane.
pub(super) struct Lane {
    /// `R[rs1]`, `R[rs2]` (32 bits).
    pub a: NodeId,
    pub rb: NodeId,
    /// Active (1 bit): the counter's low byte is 0.
    pub act: NodeId,
    /// In bounds for a memory op: `A < len` (1 bit).
    pub inb: NodeId,
    /// Shared and global words at `base + A` (32 bits).
    pub sh: NodeId,
    pub gl: NodeId,
    /// Addresses `base + A` sliced to the shared and global address widths.
    pub saddr: NodeId,
    pub gaddr: NodeId,
    /// `BUSY == l` (1 bit).
    pub bsel: NodeId,
    /// The register write's data (32 bits) and whether the counter word changes (1 bit).
    pub data: NodeId,
    pub changed: NodeId,
}

/// Lane `l`: reads, ALU, memory, counters, division and the register write's data (its enable is set by
/// [`super::commit::lane_writes`], once the bounds fault of a load is known).
pub(super) fn lane(s: &mut CircuitBuilder, shape: &Shape, f: &Fetch, d: &Decode, o: &Operands, l: u32) -> Lane {
    let r = reads(s, f, d, o, l);
    let x = alu(s, shape, d, o, &r, l);
    let m = lane_memory(s, shape, o, &r);
    let c = counter(s, d, o, &r, &x);
    let mut cases = write_cases(s, d, &x, &m, &c);
    // Division (micro-coded, see the module doc): this lane's registers and step.
    let LaneDiv { q_negs, dq_neg, q_pos, dq, r_negs, dr_neg, r_pos, dr } = lane_division(s, d, &r, &x, l);
    cases.push((q_negs, dq_neg));
    cases.push((q_pos, dq));
    cases.push((r_negs, dr_neg));
    cases.push((r_pos, dr));
    let data = s.one_hot(32, &cases);
    let LaneMem { inb, saddr, gaddr, sh, gl } = m;
    Lane { a: r.a, rb: r.rb, act: r.act, inb, sh, gl, saddr, gaddr, bsel: r.bsel, data, changed: c.changed }
}

/// Lane `l`'s reads of the running warp's registers, its activity, `BUSY == l`, and the operand `b`.
fn reads(s: &mut CircuitBuilder, f: &Fetch, d: &Decode, o: &Operands, l: u32) -> Reads {
    let m = mem::lane(l);
    let a = s.load(m, 32, o.row_rs1);
    let rb = s.load(m, 32, o.row_rs2);
    let dv = s.load(m, 32, o.row_rd);
    let cw = s.load(m, 32, o.row_31);
    let c = s.slice(cw, 0, 8);
    let act = s.eq_const(c, 0);
    let bsel = s.eq_const(f.busy, u64::from(l));

    // b = imm_b ? imm : R[rs2]; its shift amount: low 5 bits, and bit 5 = "amount >= 32".
    let bv = s.select(d.imm_b, d.imm, rb);
    let big = {
        let rb_hi = s.slice(rb, 5, 27);
        let rb_big = s.ne_const(rb_hi, 0);
        s.select(d.imm_b, o.imm_big, rb_big)
    };
    let by = {
        let b5 = s.slice(bv, 0, 5);
        s.concat(&[b5, big])
    };
    Reads { a, rb, dv, cw, c, act, bsel, bv, by }
}

/// The register write's cases but the division's (selector, data): ALU ops, shifts, loads, counter ops.
fn write_cases(s: &mut CircuitBuilder, d: &Decode, x: &Alu, m: &LaneMem, c: &Counter) -> Vec<(NodeId, NodeId)> {
    let alu_cases: Vec<(Opcode, NodeId)> = vec![
        (Opcode::Add, x.add),
        (Opcode::Sub, x.sub),
        (Opcode::Mul, x.mul),
        (Opcode::Mulhi, x.mulhi),
        (Opcode::Mulhu, x.mulhu),
        (Opcode::And, x.and),
        (Opcode::Or, x.or),
        (Opcode::Xor, x.xor),
        (Opcode::Slt, x.slt),
        (Opcode::Sltu, x.sltu),
        (Opcode::Seq, x.seq),
        (Opcode::Sne, x.sne),
        (Opcode::Min, x.min),
        (Opcode::Max, x.max),
        (Opcode::Minu, x.minu),
        (Opcode::Maxu, x.maxu),
        (Opcode::Cmov, x.cmov),
        (Opcode::Tid, x.tid32),
    ];
    let mut cases: Vec<(NodeId, NodeId)> = Vec::new();
    for (o, v) in alu_cases {
        let sel = is(s, d.opc, o);
        cases.push((sel, v));
    }
    cases.push((d.o_shl, x.sh_rev));
    cases.push((d.o_shr, x.sh_out));
    cases.push((x.sra_pos, x.sh_out));
    cases.push((x.sra_neg, x.sh_not));
    cases.push((d.uses_sh, m.sh));
    cases.push((d.uses_gl, m.gl));
    cases.push((d.ctr, c.c_new32));
    cases
}
