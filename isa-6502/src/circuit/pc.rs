//! The program counter's candidates (the next instruction, a branch's target, jumps, returns) and the step's
//! cycle counts, parts of the execute section.

use super::Ctx;
use super::decode::{Decoded, Flag, ctl};
use super::state::CpuState6502;
use crate::face::Mos6502Options;
use isa_api::circuit::{CmpKind, NodeId, SumTerm};

/// Where the program counter can go after an instruction, and whether a branch is taken.
#[derive(Clone, Copy)]
pub(super) struct PcTargets {
    /// PC + the instruction's length.
    pub(super) pc_seq: NodeId,
    /// A conditional branch whose condition holds.
    pub(super) taken: NodeId,
    /// The branch target: PC + 2 + the signed offset.
    pub(super) target: NodeId,
    /// The branch target is on another page than `pc_seq` (one more cycle).
    pub(super) br_cross: NodeId,
    pub(super) f_jsr: NodeId,
    /// JMP absolute or JSR: PC from the operand.
    pub(super) jump_abs: NodeId,
    /// RTS's target: the pulled address + 1; RTI's: the pulled bytes after P.
    pub(super) rts_target: NodeId,
    pub(super) rti_target: NodeId,
}

/// The program counter's candidates (level A's operand `b1`, level B's pointer `ptr16` and pulled bytes `p`).
pub(super) fn pc_targets(cx: &mut Ctx, dec: Decoded, st: &CpuState6502, b1: NodeId, ptr16: NodeId, p: [NodeId; 2]) -> PcTargets {
    let CpuState6502 { pc, flag_n, flag_v, flag_c, flag_z, .. } = *st;
    let [p1, p2] = p;
    let t = |node: NodeId, shift: u32| SumTerm { node, shift, neg: false };
    let len = dec.field(cx, ctl::LEN, 2);
    let len16 = cx.s.zext(len, 16);
    let pc_seq = cx.s.add(pc, len16);
    let f_branch = dec.flag(cx, Flag::Branch);
    let cond_sel = {
        let s0 = dec.flag(cx, Flag::CondSel0);
        let s1 = dec.flag(cx, Flag::CondSel1);
        cx.s.concat(&[s0, s1])
    };
    let cond_is = cx.s.one_hot_decode(cond_sel, 4);
    let cond_flag = cx.s.one_hot(1, &[(cond_is[0], flag_n), (cond_is[1], flag_v), (cond_is[2], flag_c), (cond_is[3], flag_z)]);
    let cond_value = dec.flag(cx, Flag::CondValue);
    let cond_met = cx.s.eq(cond_flag, cond_value);
    let taken = cx.s.and(f_branch, cond_met);
    // The target of a branch: PC + 2 + the signed offset, as one sum (the offset's sign bit weighs -256). Not
    // gated (`Ctx::gated`): PC moves at every step and every unit of the sum's low byte with it, and games branch
    // every few instructions, so a gate on the offset or on PC changed more units than it held still (measured
    // on ny2011: 3.2 M more class changes in 10 frames with the offset gated, 1 M more with PC gated too).
    let target = {
        let lo7 = cx.s.slice(b1, 0, 7);
        let sign = cx.s.bit(b1, 7);
        cx.s.sum(16, &[t(pc, 0), t(lo7, 0), SumTerm { node: sign, shift: 7, neg: true }], 2)
    };
    let br_cross = {
        let h1 = cx.s.slice(pc_seq, 8, 8);
        let h2 = cx.s.slice(target, 8, 8);
        cx.s.cmp(CmpKind::Ne, h1, h2)
    };
    let f_jmp_abs = dec.flag(cx, Flag::JmpAbs);
    let f_jsr = dec.flag(cx, Flag::Jsr);
    let jump_abs = cx.s.or(f_jmp_abs, f_jsr);
    // RTS's target, of the pointer gated by RTS's flag (`Ctx::gated`): the pointer read moves with every pull
    // and pointer, and the sum with it where it was not gated (an IRQ loop's RTI at every third step).
    let rts_target = {
        let f_rts = dec.flag(cx, Flag::Rts);
        let p = cx.gated(ptr16, f_rts);
        cx.s.add_const(p, 1)
    };
    let rti_target = cx.s.concat(&[p1, p2]);
    PcTargets { pc_seq, taken, target, br_cross, f_jsr, jump_abs, rts_target, rti_target }
}

/// The step's cycle counts.
pub(super) struct Cycles {
    /// A taken branch to another page.
    pub(super) br_far: NodeId,
    /// NES map: port `IO_READ`'s word, the register's code ([`crate::face::nes_io_read_code`]) and (above it, in
    /// bits 4-7) the read's cycle within the instruction.
    pub(super) io_read_word: NodeId,
    /// The instruction's cycles as terms of `CYC`'s one sum (see `next::registers_next`): its base cycles, one
    /// more for a page crossed by an indexed read, one for a taken branch and one more when it lands on another
    /// page, each term zero unless the instruction completes (`exec`).
    pub(super) exec_terms: Vec<SumTerm>,
}

/// The cycle counts: `crossings` are (mode, page crossed) of the indexed modes (abs,X; abs,Y; (zp),Y), `branch`
/// is (taken, to another page).
#[allow(clippy::too_many_arguments)]
pub(super) fn cycles(cx: &mut Ctx, opts: &Mos6502Options, dec: Decoded, exec: NodeId, crossings: [(NodeId, NodeId); 3], branch: (NodeId, NodeId), f_rmw_mem: NodeId, io_code: NodeId) -> Cycles {
    let (taken, br_cross) = branch;
    let t = |node: NodeId, shift: u32| SumTerm { node, shift, neg: false };
    let base_cyc = dec.field(cx, ctl::CYCLES, 4);
    let read_op = cx.s.bit(dec.cw, ctl::READ_OP);
    let any_crossed = {
        let [(m1, c1), (m2, c2), (m3, c3)] = crossings;
        let t1 = cx.s.and(m1, c1);
        let t2 = cx.s.and(m2, c2);
        let t3 = cx.s.and(m3, c3);
        cx.s.any(&[t1, t2, t3])
    };
    let crossed = cx.s.and(any_crossed, read_op);
    let br_far = cx.s.and(taken, br_cross);
    // NES map: the cycle of an IO read within its instruction (0: the opcode fetch), for the host to clock its
    // PPU and APU up to it: a read's last cycle, or a read-modify-write's third from last (the two writes
    // follow). Port IO_READ carries it above the register's code.
    let io_read_word = if opts.nes {
        let read_cycle = cx.s.sum(4, &[t(base_cyc, 0), t(crossed, 0), SumTerm { node: f_rmw_mem, shift: 1, neg: true }], 15);
        cx.s.concat(&[io_code, read_cycle])
    } else {
        io_code
    };
    // Gated by `exec` where each is made (an AND of early signals), so the gating adds no layer.
    let exec_terms = {
        let read_exec = cx.s.and(read_op, exec);
        let crossed = cx.s.and(any_crossed, read_exec);
        let taken = cx.s.and(taken, exec);
        let far = cx.s.and(taken, br_cross);
        let exec4 = cx.s.sext(exec, 4);
        let base = cx.s.and(base_cyc, exec4);
        vec![t(base, 0), t(crossed, 0), t(taken, 0), t(far, 0)]
    };
    Cycles { br_far, io_read_word, exec_terms }
}
