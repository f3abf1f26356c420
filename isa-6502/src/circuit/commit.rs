//! The commit section: every register's next value ([`super::next`]) set, and in the NES map the OAM DMA's and
//! the board's PRG bank registers' next values.

use super::Ctx;
use super::mapper::{RomStore, prg_banking_next};
use super::next::Next;
use crate::face::{Mos6502Options, PrgBanking, reg};
use isa_api::circuit::{CircuitBuilder, NodeId};

/// The commit section: sets the next values `n` (`RUN` to 1: every step after the boot step runs).
pub(super) fn commit(cx: &mut Ctx, opts: &Mos6502Options, n: &Next) {
    let one = cx.one;
    let s = &mut *cx.s;
    let [pc, a, x, y, sp, p, cyc] = n.regs;
    s.set_next(reg::PC, pc);
    s.set_next(reg::A, a);
    s.set_next(reg::X, x);
    s.set_next(reg::Y, y);
    s.set_next(reg::S, sp);
    s.set_next(reg::P, p);
    // `POLL` rides in `CYC`'s low bits (see `reg::CYC`).
    let cyc_poll = s.concat(&[n.poll, cyc]);
    s.set_next(reg::CYC, cyc_poll);
    s.set_next(reg::BUSY, n.busy);
    s.set_next(reg::RUN, one);
    s.set_next(reg::NMI_PEND, n.pend);
    s.set_next(reg::POLL_I, n.poll_i);
    if let Some((dma, rom)) = n.nes {
        nes_registers_next(s, opts.prg.banking, &cx.prg_regs, dma, rom);
    }
}

/// NES map: the OAM DMA's registers and their inputs.
#[derive(Clone, Copy)]
pub(super) struct DmaNext {
    pub(super) page: NodeId,
    pub(super) row: NodeId,
    pub(super) long: NodeId,
    /// A store to $4014 starts a DMA; this step copies four bytes.
    pub(super) start: NodeId,
    pub(super) step: NodeId,
    /// `CYC` after the step (at a DMA's start, after the store that starts it: the DMA is long when the store
    /// ends on an even cycle).
    pub(super) cyc_step: NodeId,
}

/// NES map: the next values of the DMA's registers and of the board's PRG bank registers. `w.data` is the
/// read-modify-write's value, selected here against the store's.
fn nes_registers_next(s: &mut CircuitBuilder, banking: PrgBanking, prg_regs: &[NodeId], d: DmaNext, w: RomStore) {
    let page_next = s.select(d.start, w.store_val, d.page);
    s.set_next(reg::DMA_PAGE, page_next);
    let row_inc = s.add_const(d.row, 1);
    let row_next = s.select(d.step, row_inc, d.row);
    s.set_next(reg::DMA_ROW, row_next);
    let odd = s.bit(d.cyc_step, 0);
    let even = s.not(odd);
    let long_next = s.select(d.start, even, d.long);
    s.set_next(reg::DMA_LONG, long_next);
    // The value of a store (or a read-modify-write's last write) to $8000-$FFFF.
    let data = s.select(w.f_store, w.store_val, w.data);
    prg_banking_next(s, banking, prg_regs, RomStore { data, ..w });
}
