//! NES map: the cartridge's PRG banking as the circuit runs it: the boards' bank registers (UxROM, MMC3, MMC1),
//! the bank a window shows, and the registers' next values after a store to $8000-$FFFF.

use super::Ctx;
use crate::face::{PrgBanking, PrgRom, reg};
use isa_api::circuit::{CircuitBuilder, NodeId};

/// NES map: the board's PRG bank registers (UxROM: `PRG_BANK`; MMC3: `MMC3_SELECT`, `R6`, `R7`; MMC1: `MMC1_SHIFT`,
/// `MMC1_COUNT`, `MMC1_MODE`, `MMC1_PRG` and on 512 KiB boards `MMC1_OUTER`), in [`reg`]'s order.
pub(super) fn prg_bank_registers(s: &mut CircuitBuilder, prg: PrgRom) -> Vec<NodeId> {
    match prg.banking {
        PrgBanking::Fixed => Vec::new(),
        PrgBanking::Uxrom => vec![s.reg(reg::PRG_BANK, prg.bank16_bits())],
        PrgBanking::Mmc3 => {
            let bb = prg.bank8_bits();
            vec![s.reg(reg::MMC3_SELECT, 4), s.reg(reg::MMC3_R6, bb), s.reg(reg::MMC3_R7, bb)]
        }
        PrgBanking::Mmc1 => {
            let mut regs = vec![s.reg(reg::MMC1_SHIFT, 4), s.reg(reg::MMC1_COUNT, 3), s.reg(reg::MMC1_MODE, 2), s.reg(reg::MMC1_PRG, prg.mmc1_prg_bits())];
            if prg.mmc1_outer() {
                regs.push(s.reg(reg::MMC1_OUTER, 1));
            }
            regs
        }
    }
}

/// NES map, MMC1: the 16 KiB bank of `base`'s window (or with `next`, of the $C000 window), one select per bit
/// over (`addr[14]`, the PRG mode): mode 0-1 `bank & !1` and `bank | 1`; mode 2 the first bank and `bank`; mode 3
/// `bank` and the last. A 512 KiB board's top bit is `MMC1_OUTER` in every mode.
pub(super) fn mmc1_bank(cx: &mut Ctx, base: NodeId, next: bool) -> NodeId {
    let (mode, bank) = (cx.prg_regs[2], cx.prg_regs[3]);
    let bb = cx.prg.mmc1_prg_bits();
    let a14 = if next { cx.one } else { cx.s.bit(base, 14) };
    let key = cx.s.concat(&[a14, mode]);
    let sels: Vec<NodeId> = (0..8u64).map(|v| cx.s.eq_const(key, v)).collect();
    let mut bits = Vec::new();
    for j in 0..bb {
        let bj = cx.s.bit(bank, j);
        let mut cases = Vec::new();
        for v in 0..8u64 {
            let (hi, mode) = (v & 1, v >> 1);
            // None: 0; Some(None): 1; Some(Some(b)): bank bit j.
            let src: Option<Option<NodeId>> = match (mode, hi, j) {
                (0 | 1, 0, 0) => None,
                (0 | 1, 1, 0) => Some(None),
                (0 | 1, _, _) | (2, 1, _) | (3, 0, _) => Some(Some(bj)),
                (2, 0, _) => None,
                _ => Some(None),
            };
            match src {
                Some(Some(b)) => cases.push((sels[v as usize], b)),
                Some(None) => cases.push((sels[v as usize], cx.one)),
                None => {}
            }
        }
        bits.push(cx.s.one_hot(1, &cases));
    }
    if let Some(&outer) = cx.prg_regs.get(4) {
        bits.push(outer);
    }
    cx.s.concat(&bits)
}

/// NES map, MMC3: the 8 KiB bank of the window `ahead` windows after `base`'s (modulo 4), one select per bit
/// over (`addr[13]`, `addr[14]`, the PRG mode): $8000 `R6` or the second-last bank, $A000 `R7`, $C000 the second-last
/// bank or `R6`, $E000 the last.
pub(super) fn mmc3_bank(cx: &mut Ctx, base: NodeId, ahead: u64) -> NodeId {
    let (select, r6, r7) = (cx.prg_regs[0], cx.prg_regs[1], cx.prg_regs[2]);
    let bb = cx.prg.bank8_bits();
    let banks = 1u64 << bb;
    let (second_last, last) = (banks - 2, banks - 1);
    let a13 = cx.s.bit(base, 13);
    let a14 = cx.s.bit(base, 14);
    let mode = cx.s.bit(select, 3);
    let key = cx.s.concat(&[a13, a14, mode]);
    let sels: Vec<NodeId> = (0..8u64).map(|v| cx.s.eq_const(key, v)).collect();
    let mut bits = Vec::new();
    for j in 0..bb {
        let mut cases = Vec::new();
        for v in 0..8u64 {
            let (w, mode) = (((v & 3) + ahead) % 4, v >> 2);
            let constant = |c: u64| if (c >> j) & 1 == 1 { Some(None) } else { None };
            let src: Option<Option<NodeId>> = match (w, mode) {
                (0, 0) | (2, 1) => Some(Some(r6)),
                (1, _) => Some(Some(r7)),
                (0, _) | (2, _) => constant(second_last),
                _ => constant(last),
            };
            match src {
                Some(Some(reg)) => {
                    let b = cx.s.bit(reg, j);
                    cases.push((sels[v as usize], b));
                }
                Some(None) => cases.push((sels[v as usize], cx.one)),
                None => {}
            }
        }
        bits.push(cx.s.one_hot(1, &cases));
    }
    cx.s.concat(&bits)
}

/// NES map: a store to $8000-$FFFF, as the PRG banking registers see it.
#[derive(Clone, Copy)]
pub(super) struct RomStore {
    /// The step stores to $8000-$FFFF (1 bit).
    pub(super) rom_store: NodeId,
    /// The effective address (16 bits).
    pub(super) ea: NodeId,
    /// The value of the store, or of a read-modify-write's last write (8 bits).
    pub(super) data: NodeId,
    /// The instruction is a plain store (1 bit): else a read-modify-write, whose first write is `operand`.
    pub(super) f_store: NodeId,
    /// The plain store's value (8 bits).
    pub(super) store_val: NodeId,
    /// The byte read at `ea`: a read-modify-write's first, unmodified write (8 bits).
    pub(super) operand: NodeId,
}

/// NES map: the next values of the board's PRG bank registers `regs` ([`prg_bank_registers`]) after `w`.
pub(super) fn prg_banking_next(s: &mut CircuitBuilder, banking: PrgBanking, regs: &[NodeId], w: RomStore) {
    let RomStore { rom_store, ea, data, f_store, store_val, operand } = w;
    match (banking, regs) {
        (PrgBanking::Uxrom, &[bank]) => {
            // UxROM: any such store selects the bank.
            let value = s.slice(data, 0, s.width(bank));
            let next = s.select(rom_store, value, bank);
            s.set_next(reg::PRG_BANK, next);
        }
        (PrgBanking::Mmc3, &[select, r6, r7]) => {
            // MMC3: $8000-$9FFF even sets the select, odd the selected register (only R6 and R7 are PRG's).
            let (a0, a13, a14) = (s.bit(ea, 0), s.bit(ea, 13), s.bit(ea, 14));
            let c = s.concat(&[rom_store, a0, a13, a14]);
            let to_select = s.eq_const(c, 0b0001);
            let d_lo = s.slice(data, 0, 3);
            let d_mode = s.bit(data, 6);
            let sel_value = s.concat(&[d_lo, d_mode]);
            let sel_next = s.select(to_select, sel_value, select);
            s.set_next(reg::MMC3_SELECT, sel_next);
            let index = s.slice(select, 0, 3);
            for (r, node, k) in [(reg::MMC3_R6, r6, 6u64), (reg::MMC3_R7, r7, 7)] {
                let c = s.concat(&[rom_store, a0, a13, a14, index]);
                let write = s.eq_const(c, 0b0011 | (k << 4));
                let value = s.slice(data, 0, s.width(node));
                let next = s.select(write, value, node);
                s.set_next(r, next);
            }
        }
        (PrgBanking::Mmc1, &[shift, count, mode, prg, ref outer @ ..]) => {
            // MMC1: a read-modify-write's first write, the unmodified byte, is the one that counts. Every
            // next value is one lookup (or one select) over the store, bits 7 and 0 of its byte, the count and
            // the address's window, so the serial port adds no depth after the store's decision.
            let data = s.select(f_store, store_val, operand);
            let (b7, b0) = (s.bit(data, 7), s.bit(data, 0));
            let (a13, a14) = (s.bit(ea, 13), s.bit(ea, 14));
            // key bits: store, b7, count (3), b0, then per use.
            let key = s.concat(&[rom_store, b7, count, b0]);
            let field = |v: u64| (v & 1 == 1, (v >> 1) & 1 == 1, (v >> 2) & 7, (v >> 5) & 1);
            let mut bits = Vec::new();
            for i in 0..4u64 {
                let old = s.bit(shift, i as u32);
                let k = s.concat(&[key, old]);
                let table: Vec<u64> = (0..128u64)
                    .map(|v| {
                        let (st, b7, cnt, b0) = field(v);
                        let old = v >> 6;
                        match (st, b7, cnt) {
                            (false, _, _) => old,
                            (true, true, _) | (true, false, 4) => 0,
                            (true, false, c) if c == i => b0,
                            _ => old,
                        }
                    })
                    .collect();
                bits.push(s.lookup(1, table, k));
            }
            let shift_next = s.concat(&bits);
            s.set_next(reg::MMC1_SHIFT, shift_next);
            let count_table: Vec<u64> = (0..64u64)
                .map(|v| {
                    let (st, b7, cnt, _) = field(v);
                    match (st, b7, cnt) {
                        (false, _, c) => c,
                        (true, true, _) | (true, false, 4) => 0,
                        (true, false, c) => (c + 1) & 7,
                    }
                })
                .collect();
            let count_next = s.lookup(3, count_table, key);
            s.set_next(reg::MMC1_COUNT, count_next);
            // The fifth bit writes control ($8000-$9FFF) or the PRG bank ($E000-$FFFF); bit 7 sets mode 3.
            let wkey = s.concat(&[key, a13, a14]);
            let sel = |s: &mut CircuitBuilder, f: &dyn Fn(bool, bool, u64, u64) -> bool| {
                s.truth_table(wkey, |v| {
                    let (st, b7, cnt, _) = field(v);
                    f(st, b7, cnt, v >> 6)
                })
            };
            let reset = sel(s, &|st, b7, _, _| st && b7);
            let to_control = sel(s, &|st, b7, cnt, w| st && !b7 && cnt == 4 && w == 0);
            let keep_mode = sel(s, &|st, b7, cnt, w| !(st && (b7 || (cnt == 4 && w == 0))));
            if let [outer] = outer {
                // SUROM: the fifth bit of a write to CHR bank 0 ($A000-$BFFF) is the 256 KiB half.
                let to_chr0 = sel(s, &|st, b7, cnt, w| st && !b7 && cnt == 4 && w == 1);
                let outer_next = s.select(to_chr0, b0, *outer);
                s.set_next(reg::MMC1_OUTER, outer_next);
            }
            let to_prg = sel(s, &|st, b7, cnt, w| st && !b7 && cnt == 4 && w == 3);
            let keep_prg = sel(s, &|st, b7, cnt, w| !(st && !b7 && cnt == 4 && w == 3));
            let three = s.konst(2, 3);
            let written_mode = s.slice(shift, 2, 2);
            let mode_next = s.one_hot(2, &[(reset, three), (to_control, written_mode), (keep_mode, mode)]);
            s.set_next(reg::MMC1_MODE, mode_next);
            let written_prg = s.slice(shift, 0, s.width(prg));
            let prg_next = s.one_hot(s.width(prg), &[(to_prg, written_prg), (keep_prg, prg)]);
            s.set_next(reg::MMC1_PRG, prg_next);
        }
        _ => {}
    }
}
