//! The state section: the registers and input lines as the step reads them, what kind of step it is (boot, stop,
//! IO wait, DMA, an interrupt, an instruction), the NES map's OAM DMA and PRG bank registers; and the state the
//! boot step loads from `INIT`.

use super::Ctx;
use super::mapper::prg_bank_registers;
use crate::face::{BUSY_DMA, BUSY_STOPPING, CYCLE_BITS, Mos6502Options, POLL_BITS, init_row, input, mem, reg};
use isa_api::circuit::NodeId;

/// NES map: the OAM DMA's registers (the constant 0 in the flat map).
#[derive(Clone, Copy)]
pub(super) struct DmaRegs {
    /// The page the DMA copies (8 bits).
    pub(super) page: NodeId,
    /// The next group of four bytes (6 bits).
    pub(super) row: NodeId,
    /// The DMA takes 514 cycles (1 bit).
    pub(super) long: NodeId,
}

/// What the step starts from.
pub(super) struct State {
    /// The registers and input lines.
    pub(super) cpu: CpuState6502,
    /// What the step does.
    pub(super) kind: StepKind,
    /// NES map: the OAM DMA's registers.
    pub(super) dma: DmaRegs,
}

/// The state section: reads the registers and inputs, decides the step's kind, and (NES map) reads the PRG bank
/// registers into `cx.prg_regs` and the OAM DMA's registers.
pub(super) fn state(cx: &mut Ctx, opts: &Mos6502Options) -> State {
    let cpu = cpu_state(cx);
    let kind = step_kind(cx, opts, &cpu);
    if opts.nes {
        cx.prg_regs = prg_bank_registers(cx.s, opts.prg);
    }
    let dma = if opts.nes {
        DmaRegs { page: cx.s.reg(reg::DMA_PAGE, 8), row: cx.s.reg(reg::DMA_ROW, 6), long: cx.s.reg(reg::DMA_LONG, 1) }
    } else {
        DmaRegs { page: cx.zero, row: cx.zero, long: cx.zero }
    };
    State { cpu, kind, dma }
}

/// The 2A03's registers and input lines as the circuit reads them (see the module's table), with P's flags.
#[derive(Clone, Copy)]
pub(super) struct CpuState6502 {
    pub(super) pc: NodeId,
    pub(super) a: NodeId,
    pub(super) x: NodeId,
    pub(super) y: NodeId,
    pub(super) sp: NodeId,
    pub(super) p: NodeId,
    pub(super) cyc: NodeId,
    pub(super) busy: NodeId,
    pub(super) run: NodeId,
    pub(super) nmi_pend: NodeId,
    pub(super) poll_i: NodeId,
    pub(super) poll: NodeId,
    pub(super) nmi_in: NodeId,
    pub(super) irq_in: NodeId,
    pub(super) flag_c: NodeId,
    pub(super) flag_z: NodeId,
    pub(super) flag_i: NodeId,
    pub(super) flag_v: NodeId,
    pub(super) flag_n: NodeId,
}

/// Reads the registers and input lines.
fn cpu_state(cx: &mut Ctx) -> CpuState6502 {
    let pc = cx.s.reg(reg::PC, 16);
    let a = cx.s.reg(reg::A, 8);
    let x = cx.s.reg(reg::X, 8);
    let y = cx.s.reg(reg::Y, 8);
    let sp = cx.s.reg(reg::S, 8);
    let p = cx.s.reg(reg::P, 8);
    let cyc_poll = cx.s.reg(reg::CYC, CYCLE_BITS + POLL_BITS);
    let cyc = cx.s.slice(cyc_poll, POLL_BITS, CYCLE_BITS);
    let busy = cx.s.reg(reg::BUSY, 8);
    let run = cx.s.reg(reg::RUN, 1);
    let nmi_pend = cx.s.reg(reg::NMI_PEND, 1);
    let poll_i = cx.s.reg(reg::POLL_I, 2);
    let poll = cx.s.slice(cyc_poll, 0, POLL_BITS);
    let nmi_in = cx.s.input(input::NMI, 3);
    let irq_in = cx.s.input(input::IRQ, 2);
    let flag_c = cx.s.bit(p, 0);
    let flag_z = cx.s.bit(p, 1);
    let flag_i = cx.s.bit(p, 2);
    let flag_v = cx.s.bit(p, 6);
    let flag_n = cx.s.bit(p, 7);
    CpuState6502 { pc, a, x, y, sp, p, cyc, busy, run, nmi_pend, poll_i, poll, nmi_in, irq_in, flag_c, flag_z, flag_i, flag_v, flag_n }
}

/// What the step does: boot, stop, copy DMA bytes (NES map), take an interrupt (its cases, one equality each)
/// or run an instruction.
#[derive(Clone, Copy)]
pub(super) struct StepKind {
    pub(super) booting: NodeId,
    pub(super) stopping: NodeId,
    pub(super) dma: NodeId,
    /// An interrupt sequence (7 cycles, three pushes), NMI or IRQ.
    pub(super) int_seq: NodeId,
    /// Any interrupt step: a sequence, or a hijack (PC from the NMI vector, nothing else).
    pub(super) take_int: NodeId,
    /// The step fetches the NMI vector (an NMI sequence or a hijack).
    pub(super) nmi_vector: NodeId,
    pub(super) instr: NodeId,
    pub(super) dma_step: NodeId,
}

/// The step's kind ([`StepKind`]) from `BUSY`, `RUN`, the NMI and IRQ lines and the poll registers.
fn step_kind(cx: &mut Ctx, opts: &Mos6502Options, st: &CpuState6502) -> StepKind {
    let CpuState6502 { busy, run, nmi_pend, poll, nmi_in, .. } = *st;
    let zero = cx.zero;
    let booting = cx.s.not(run);
    let stopping = cx.s.eq_const(busy, BUSY_STOPPING);
    // NES map: a DMA finishes before any interrupt.
    let dma = if opts.nes { cx.s.eq_const(busy, BUSY_DMA) } else { zero };
    // The interrupt poll at a boundary (running, BUSY 0 or 1: not stopping or in a DMA), as the
    // interpreter's `Cpu::step`: after an instruction, a pending NMI or a new edge old enough for where it
    // polled (`POLL` 0: age 2, 1: age 3), else the IRQ level there, unmasked (I, or the I before a
    // CLI/SEI/PLP); after BRK or an IRQ sequence (`POLL` 2), an NMI of age 4 or pending hijacks its vector;
    // after an OAM DMA whose store saw an interrupt (`POLL` 4), NMI if any is pending, else IRQ. Each case is one
    // equality over the raw bits (two layers in all), since the pointer read's address waits for it.
    let busy_hi = cx.s.slice(busy, 1, 7);
    let (nmi_seq, hijack) = {
        // bits: run, BUSY[1..8], NMI age (3), NMI_PEND, POLL (3).
        let c = cx.s.concat(&[run, busy_hi, nmi_in, nmi_pend, poll]);
        let (mut seq, mut hij) = (Vec::new(), Vec::new());
        for tail in 0..128u64 {
            let (age, pend, k) = (tail & 7, (tail >> 3) & 1 == 1, tail >> 4);
            if age > u64::from(crate::Lines::NMI_AGE_MAX) {
                continue;
            }
            if nmi_seen(k, age, pend) == Some(true) {
                seq.push(cx.s.eq_const(c, 1 | (tail << 8)));
            }
            if k == 2 && (pend || age >= u64::from(crate::Lines::NMI_AGE_MAX)) {
                hij.push(cx.s.eq_const(c, 1 | (tail << 8)));
            }
        }
        (seq, hij)
    };
    let irq_seq = {
        let mut hits = irq_hits(cx, st, &[run, busy_hi]);
        // After a DMA whose store's poll saw an interrupt: serviced now, IRQ unless an NMI is pending.
        let c = cx.s.concat(&[run, busy_hi, poll]);
        hits.push(cx.s.eq_const(c, 1 | (4 << 8)));
        hits
    };
    // An interrupt sequence (7 cycles, three pushes), NMI or IRQ.
    let int_seq = {
        let all: Vec<NodeId> = nmi_seq.iter().chain(&irq_seq).copied().collect();
        cx.s.any(&all)
    };
    // Any interrupt step: a sequence, or a hijack (PC from the NMI vector, nothing else).
    let take_int = {
        let all: Vec<NodeId> = nmi_seq.iter().chain(&irq_seq).chain(&hijack).copied().collect();
        cx.s.any(&all)
    };
    // The step fetches the NMI vector (an NMI sequence or a hijack).
    let nmi_vector = {
        let all: Vec<NodeId> = nmi_seq.iter().chain(&hijack).copied().collect();
        cx.s.any(&all)
    };
    let (instr, dma_step) = {
        // bits: run, stopping, an interrupt taken, DMA.
        let c = cx.s.concat(&[run, stopping, take_int, dma]);
        // Not booting, not stopping, no DMA, no interrupt taken: the step runs an instruction (or faults on it).
        let d = cx.s.concat(&[run, stopping, dma]);
        (cx.s.eq_const(c, 0b0001), cx.s.eq_const(d, 0b101))
    };
    StepKind { booting, stopping, dma, int_seq, take_int, nmi_vector, instr, dma_step }
}

/// Whether poll kind `k` (`POLL`) services an NMI of age `age` (`pend`: `NMI_PEND`); None: it is not a poll that
/// takes interrupts.
pub(super) fn nmi_seen(k: u64, age: u64, pend: bool) -> Option<bool> {
    match k {
        0 => Some(pend || age >= 2),
        1 => Some(pend || age >= 3),
        4 => Some(pend || age >= 1),
        _ => None,
    }
}

/// The IRQ cases of a poll: one equality each over `head`'s bits then `POLL`, `IRQ`, `POLL_I` and I (an NMI case
/// may hold at once: `nmi_vector` then picks the NMI).
pub(super) fn irq_hits(cx: &mut Ctx, st: &CpuState6502, head: &[NodeId]) -> Vec<NodeId> {
    let CpuState6502 { poll, poll_i, irq_in, flag_i, .. } = *st;
    // bits: head, POLL (3), IRQ (2), POLL_I valid, POLL_I old I, I.
    let pv = cx.s.bit(poll_i, 0);
    let po = cx.s.bit(poll_i, 1);
    let mut parts = head.to_vec();
    parts.extend([poll, irq_in, pv, po, flag_i]);
    let c = cx.s.concat(&parts);
    let shift: u32 = head.iter().map(|&h| cx.s.width(h)).sum();
    let low = if head.is_empty() { 0 } else { 1 };
    let mut hits = Vec::new();
    for tail in 0..256u64 {
        let (k, irq, valid, old, i) = (tail & 7, (tail >> 3) & 3, (tail >> 5) & 1, (tail >> 6) & 1, (tail >> 7) & 1);
        let masked = if valid == 1 { old == 1 } else { i == 1 };
        let level = match k {
            0 => irq & 1 == 1,
            1 => irq & 2 == 2,
            _ => false,
        };
        if level && !masked {
            hits.push(cx.s.eq_const(c, low | (tail << shift)));
        }
    }
    hits
}

/// The registers the boot step loads from `INIT` (see the module's table; P with bit 5 set and B clear).
#[derive(Clone, Copy)]
pub(super) struct BootState {
    pub(super) pc: NodeId,
    pub(super) a: NodeId,
    pub(super) x: NodeId,
    pub(super) y: NodeId,
    pub(super) s: NodeId,
    pub(super) p: NodeId,
    pub(super) cyc: NodeId,
}

/// Loads the boot step's registers from `INIT`.
pub(super) fn boot_state(cx: &mut Ctx) -> BootState {
    let init = |cx: &mut Ctx, row: u64| {
        let r = cx.s.konst(4, row);
        cx.s.load(mem::INIT, 8, r)
    };
    let i_pcl = init(cx, init_row::PC_LO);
    let i_pch = init(cx, init_row::PC_HI);
    let i_pc = cx.s.concat(&[i_pcl, i_pch]);
    let i_a = init(cx, init_row::A);
    let i_x = init(cx, init_row::X);
    let i_y = init(cx, init_row::Y);
    let i_s = init(cx, init_row::S);
    let i_p_raw = init(cx, init_row::P);
    let i_p = {
        let m = cx.s.konst(8, 0xCF);
        let t = cx.s.and(i_p_raw, m);
        let u = cx.s.konst(8, 0x20);
        cx.s.or(t, u)
    };
    let i_cyc_bytes: Vec<NodeId> = (0..4).map(|k| init(cx, init_row::CYC + k)).collect();
    let i_cyc_word = cx.s.concat(&i_cyc_bytes);
    let i_cyc = cx.s.slice(i_cyc_word, 0, CYCLE_BITS);
    BootState { pc: i_pc, a: i_a, x: i_x, y: i_y, s: i_s, p: i_p, cyc: i_cyc }
}
