//! The next-values section: each register's value after the step, one select over the boot step's value, an
//! interrupt's, the instruction's cases, else the register kept; the control registers (`POLL_I`, `BUSY`,
//! `NMI_PEND`, `POLL`) and the NES map's OAM DMA control.

use super::Ctx;
use super::commit::DmaNext;
use super::execute::{Execute, RegisterCases};
use super::fetch::Fetch;
use super::mapper::RomStore;
use super::operands::Operands;
use super::pc::PcTargets;
use super::state::{BootState, CpuState6502, State, StepKind, boot_state, irq_hits, nmi_seen};
use super::writes::Writes;
use crate::face::{BUSY_DMA, BUSY_STOPPING, CYCLE_BITS, Mos6502Options};
use isa_api::circuit::{NodeId, SumTerm};

/// The next values of the registers, and (NES map) what the DMA's and PRG bank registers' next values read.
pub(super) struct Next {
    /// PC, A, X, Y, S, P and CYC.
    pub(super) regs: [NodeId; 7],
    /// `BUSY`, `NMI_PEND`, `POLL_I` and `POLL`.
    pub(super) busy: NodeId,
    pub(super) pend: NodeId,
    pub(super) poll_i: NodeId,
    pub(super) poll: NodeId,
    /// NES map: the OAM DMA's registers and the store to $8000-$FFFF the PRG banking sees.
    pub(super) nes: Option<(DmaNext, RomStore)>,
}

/// The next-values section: the boot step's state, the DMA's control, then every register's next value.
pub(super) fn next(
    cx: &mut Ctx,
    opts: &Mos6502Options,
    st: &State,
    f: &Fetch,
    o: &Operands,
    e: &Execute,
    w: &Writes,
) -> Next {
    let (kind, exec, p) = (&st.kind, o.exec, &o.ptr);
    // The boot step: registers from INIT.
    let boot = boot_state(cx);
    // OAM DMA (NES map): a store to $4014 starts it; the step with DMA_ROW = 63 ends it.
    let [dma_start, dma_last, dma_more] =
        dma_control(cx, opts, o.data.ea, [w.f_store, exec], [kind.dma_step, st.dma.row]);
    // One select each over boot, interrupt, the instruction's cases, else keep.
    let pk = Picker { booting: kind.booting, take_int: kind.take_int, exec };
    let cases = InstructionCases { regs: e.regs.clone(), p_bit_cases: e.flags.p_bit_cases.clone(), exec_cycles: e.cycles.exec_terms.clone() };
    let (flags, seq) = ([p.f_jmp_ind, p.f_rts, p.f_rti, p.f_brk], [kind.int_seq, dma_last, st.dma.long]);
    let (regs, cyc_step) = registers_next(cx, opts, pk, &boot, &st.cpu, &e.pc, cases, [o.direct.op16, p.ptr16], flags, seq);
    let stop = match w.exits {
        Some(exit) => cx.s.or(f.fault, exit),
        None => f.fault,
    };
    let [poll_i, busy, pend] =
        control_next(cx, &st.cpu, kind, [exec, stop, dma_more], [e.flags.f_cli, e.flags.f_sei, p.f_plp]);
    let poll = poll_next(cx, opts, &st.cpu, kind, [e.pc.taken, e.cycles.br_far, p.f_brk, exec], st.dma.row);
    // NES map: the step stores to $8000-$FFFF (the mapper's registers).
    let nes = opts.nes.then(|| {
        let t = cx.s.and(w.writes_ea, o.data.rom);
        let rom_store = cx.s.and(exec, t);
        let (page, row, long, step) = (st.dma.page, st.dma.row, st.dma.long, kind.dma_step);
        let dma = DmaNext { page, row, long, start: dma_start, step, cyc_step };
        let (ea, f_store, store_val, operand) = (o.data.ea, w.f_store, w.store_val, o.data.operand);
        (dma, RomStore { rom_store, ea, data: e.rmw.value, f_store, store_val, operand })
    });
    Next { regs, busy, pend, poll_i, poll, nes }
}

/// The next value's select: the boot step's value, an interrupt's, the instruction's cases, else the register
/// kept.
#[derive(Clone, Copy)]
struct Picker {
    booting: NodeId,
    take_int: NodeId,
    exec: NodeId,
}

impl Picker {
    /// One select over boot, interrupt (when given), `cases`, else `keep` (`w` bits).
    fn next(self, cx: &mut Ctx, w: u32, boot: NodeId, int: Option<NodeId>, cases: Vec<(NodeId, NodeId)>, keep: NodeId) -> NodeId {
        let mut all = vec![(self.booting, boot)];
        all.extend(int.map(|v| (self.take_int, v)));
        all.extend(cases);
        cx.s.one_hot_or(w, &all, keep)
    }
    /// Instruction cases whose default is a computed value: (exec AND NOT any special) selects the default.
    fn with_default(self, cx: &mut Ctx, cases: Vec<(NodeId, NodeId)>, default: NodeId) -> Vec<(NodeId, NodeId)> {
        let exec = self.exec;
        let sels: Vec<NodeId> = cases.iter().map(|c| c.0).collect();
        let any = cx.s.any(&sels);
        let c = cx.s.concat(&[exec, any]);
        let plain = cx.s.eq_const(c, 0b01);
        let mut out: Vec<(NodeId, NodeId)> = cases.into_iter().map(|(s, v)| (cx.s.and(exec, s), v)).collect();
        out.push((plain, default));
        out
    }
}

/// The instruction's cases of the registers, computed by the sections.
struct InstructionCases {
    /// A's, X's and Y's cases and S's moved value ([`super::execute`]).
    regs: RegisterCases,
    p_bit_cases: Vec<Vec<(NodeId, NodeId)>>,
    /// The instruction's cycles as sum terms, zero unless it completes ([`super::pc::Cycles::exec_terms`]).
    exec_cycles: Vec<SumTerm>,
}

/// The next values of PC, A, X, Y, S, P and CYC, each one select over boot, interrupt, the instruction's cases,
/// else kept; and `CYC` plus the step's cycles (CYC's next value but at the boot step). `addrs`: the operand word
/// and the pointer; `flags`: JMP (ind), RTS, RTI, BRK; `seq`: an interrupt sequence, the DMA's last step, its long
/// form.
#[allow(clippy::too_many_arguments)]
fn registers_next(cx: &mut Ctx, opts: &Mos6502Options, pk: Picker, boot: &BootState, st: &CpuState6502, targets: &PcTargets, cases: InstructionCases, [op16, ptr16]: [NodeId; 2], [f_jmp_ind, f_rts, f_rti, f_brk]: [NodeId; 4], [int_seq, dma_last, dma_long]: [NodeId; 3]) -> ([NodeId; 7], NodeId) {
    let (one, zero) = (cx.one, cx.zero);
    let CpuState6502 { pc, a, x, y, sp, p, cyc, .. } = *st;
    let BootState { pc: i_pc, a: i_a, x: i_x, y: i_y, s: i_s, p: i_p, cyc: i_cyc } = *boot;
    let PcTargets { pc_seq, taken, target, jump_abs, rts_target, rti_target, .. } = *targets;
    let InstructionCases { regs: RegisterCases { a_cases, x_cases, y_cases, s_moved, f_txs, .. }, p_bit_cases, exec_cycles } = cases;
    let pc_cases = pk.with_default(cx, vec![(taken, target), (jump_abs, op16), (f_jmp_ind, ptr16), (f_rts, rts_target), (f_rti, rti_target), (f_brk, ptr16)], pc_seq);
    let pc_next = pk.next(cx, 16, i_pc, Some(ptr16), pc_cases, pc);
    let a_next = pk.next(cx, 8, i_a, None, a_cases, a);
    let x_next = pk.next(cx, 8, i_x, None, x_cases, x);
    let y_next = pk.next(cx, 8, i_y, None, y_cases, y);
    let s_int = cx.s.add_const(sp, 0xFD);
    let s_cases = pk.with_default(cx, vec![(f_txs, x)], s_moved);
    let mut s_cases = s_cases;
    s_cases.push((int_seq, s_int));
    let s_next = pk.next(cx, 8, i_s, None, s_cases, sp);
    let p_int = {
        let i = cx.s.konst(8, 0x04);
        cx.s.or(p, i)
    };
    let p_next = {
        let mut bits = Vec::new();
        for (b, cases) in p_bit_cases.into_iter().enumerate() {
            let bit = match b {
                4 => zero,
                5 => one,
                _ => {
                    let (ib, pb, nb) = (cx.s.bit(i_p, b as u32), cx.s.bit(p_int, b as u32), cx.s.bit(p, b as u32));
                    pk.next(cx, 1, ib, Some(pb), cases, nb)
                }
            };
            bits.push(bit);
        }
        cx.s.concat(&bits)
    };
    // CYC plus the step's cycles, one sum whose terms are zero but the step's kind's (the selects are exclusive):
    // the instruction's when it completes, 7 for an interrupt sequence, 513 (514 long) at the DMA's last step,
    // else none. One adder, not one per kind selected after: every unit of each changed with CYC at every step.
    let t = |node: NodeId, shift: u32| SumTerm { node, shift, neg: false };
    let mut terms = vec![t(cyc, 0)];
    terms.extend(exec_cycles);
    terms.extend([t(int_seq, 0), t(int_seq, 1), t(int_seq, 2)]);
    if opts.nes {
        let long_last = cx.s.and(dma_last, dma_long);
        terms.extend([t(dma_last, 0), t(dma_last, 9), t(long_last, 0)]);
    }
    let cyc_step = cx.s.sum(CYCLE_BITS, &terms, 0);
    let cyc_next = pk.next(cx, CYCLE_BITS, i_cyc, None, vec![], cyc_step);
    ([pc_next, a_next, x_next, y_next, s_next, p_next, cyc_next], cyc_step)
}

/// The next values of `POLL_I` (CLI, SEI or PLP, and the I before it), `BUSY` (stopping, booted, in a DMA,
/// else 0) and `NMI_PEND` (cleared by the boot step and by a step that fetches the NMI vector; else any new
/// edge joins it: a DMA step's input is the boundary's again, and joining it twice changes nothing). `step`:
/// the instruction completes, the machine stops, a DMA goes on.
fn control_next(cx: &mut Ctx, st: &CpuState6502, kind: &StepKind, [exec, stop, dma_more]: [NodeId; 3], [f_cli, f_sei, f_plp]: [NodeId; 3]) -> [NodeId; 3] {
    let CpuState6502 { flag_i, nmi_in, nmi_pend, .. } = *st;
    let StepKind { booting, nmi_vector, .. } = *kind;
    let poll_i_next = {
        let sets = cx.s.any(&[f_cli, f_sei, f_plp]);
        let valid = cx.s.and(exec, sets);
        let old = cx.s.and(valid, flag_i);
        cx.s.concat(&[valid, old])
    };
    let busy_next = {
        let b255 = cx.s.konst(8, BUSY_STOPPING);
        let b1 = cx.s.konst(8, 1);
        let b0 = cx.s.konst(8, 0);
        let bd = cx.s.konst(8, BUSY_DMA);
        cx.s.one_hot_or(8, &[(stop, b255), (booting, b1), (dma_more, bd)], b0)
    };
    let pend_next = {
        let none = cx.s.eq_const(nmi_in, 0);
        let new_edge = cx.s.not(none);
        let joined = cx.s.or(nmi_pend, new_edge);
        let clear = cx.s.or(booting, nmi_vector);
        let keep = cx.s.not(clear);
        cx.s.and(keep, joined)
    };
    [poll_i_next, busy_next, pend_next]
}

/// POLL: where the next boundary's poll looks. An instruction: 1 after a taken branch on its page, 2 after
/// BRK, else 0; an NMI sequence or a hijack 3, an IRQ sequence 2; the first DMA step polls as the store that
/// started it would have (4 when it sees an interrupt, else 3); boot 0; else (DMA) kept.
/// `instr` is (a taken branch, to another page, BRK, the instruction completes); `dma_row` the DMA's next row.
fn poll_next(cx: &mut Ctx, opts: &Mos6502Options, st: &CpuState6502, kind: &StepKind, instr: [NodeId; 4], dma_row: NodeId) -> NodeId {
    let CpuState6502 { nmi_in, nmi_pend, poll, .. } = *st;
    let StepKind { booting, nmi_vector, int_seq, dma_step, .. } = *kind;
    let [taken, br_far, f_brk, exec] = instr;
    let k = |cx: &mut Ctx, v: u64| cx.s.konst(3, v);
    let (k0, k1, k2, k3, k4) = (k(cx, 0), k(cx, 1), k(cx, 2), k(cx, 3), k(cx, 4));
    let near = cx.s.not(br_far);
    let early = cx.s.and(taken, near);
    let instr_poll = cx.s.one_hot_or(3, &[(early, k1), (f_brk, k2)], k0);
    let irq_only = {
        let c = cx.s.concat(&[int_seq, nmi_vector]);
        cx.s.eq_const(c, 0b01)
    };
    let mut cases = vec![(booting, k0), (nmi_vector, k3), (irq_only, k2), (exec, instr_poll)];
    if opts.nes {
        // The first DMA step: the store's poll (POLL 0 or 1) over this boundary's lines.
        let first = {
            let c = cx.s.concat(&[dma_step, dma_row]);
            cx.s.eq_const(c, 1)
        };
        let c = cx.s.concat(&[nmi_in, nmi_pend, poll]);
        let mut hits = irq_hits(cx, st, &[]);
        for tail in 0..128u64 {
            let (age, pend, kind) = (tail & 7, (tail >> 3) & 1 == 1, tail >> 4);
            if age <= u64::from(crate::Lines::NMI_AGE_MAX) && kind <= 1 && nmi_seen(kind, age, pend) == Some(true) {
                hits.push(cx.s.eq_const(c, tail));
            }
        }
        let sees = cx.s.any(&hits);
        let due = cx.s.select(sees, k4, k3);
        cases.push((first, due));
    }
    cx.s.one_hot_or(3, &cases, poll)
}

/// NES map: the OAM DMA's start (a store to $4014 that completes), its last step (`DMA_ROW` = 63) and whether
/// the next step is a DMA step.
fn dma_control(cx: &mut Ctx, opts: &Mos6502Options, ea: NodeId, [f_store, go]: [NodeId; 2], [dma_step, dma_row]: [NodeId; 2]) -> [NodeId; 3] {
    let zero = cx.zero;
    if opts.nes {
        let hit = cx.s.eq_const(ea, 0x4014);
        let st = cx.s.and(f_store, hit);
        let start = cx.s.and(go, st);
        let c = cx.s.concat(&[dma_step, dma_row]);
        let last = cx.s.eq_const(c, 1 | (63 << 1));
        let not_last = cx.s.not(last);
        let goes_on = cx.s.and(dma_step, not_last);
        let more = cx.s.or(start, goes_on);
        [start, last, more]
    } else {
        [zero, zero, zero]
    }
}
