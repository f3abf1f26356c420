//! The four byte banks' reads and writes: a run of up to four consecutive bytes is one word of each bank, at the
//! base's row or the next (see "Why four banks" in [`super`]); and the NES map's compact bank address.

use super::Ctx;
use crate::face::mem;
use isa_api::circuit::{CmpKind, NodeId};

/// The four banks' words read at the rows that hold `n` (1..=4) bytes at `base, base+1, ...`, and the one-hot
/// of `base % 4`. With `page_wrap` the increments stay within `base`'s page (zero-page pointers, `JMP ($xxFF)`,
/// the stack), else they wrap at 64 KiB. Byte `i` is word `(j + i) % 4` when `base % 4 == j`.
pub(super) fn read_banks(cx: &mut Ctx, base: NodeId, n: usize, page_wrap: bool) -> ([NodeId; 4], Vec<NodeId>) {
    let rb = cx.row_bits;
    let lo2 = cx.s.slice(base, 0, 2);
    let row = cx.s.slice(base, 2, rb);
    let lo_is = cx.s.one_hot_decode(lo2, 4);
    let row_next = next_row(cx, row, n, page_wrap);
    let words = [0u64, 1, 2, 3].map(|k| {
        // Bank k holds byte i = (k - lo2) mod 4 of the run; it lies in the next row when k < lo2.
        let r = if n == 1 || k == 3 {
            row
        } else {
            let kk = cx.s.konst(2, k);
            let next = cx.s.cmp(CmpKind::Ltu, kk, lo2);
            let stay = cx.s.not(next);
            cx.s.one_hot(rb, &[(next, row_next), (stay, row)])
        };
        cx.s.load(mem::BANKS[k as usize], 8, r)
    });
    (words, lo_is)
}

/// [`read_run`] at one of several candidate bases (`cases`: an exclusive select and a base each, exactly one
/// select on): each candidate's bank rows are computed beside the others and the select picks rows, so the
/// read waits for the selects and the candidates, not for a picked base.
pub(super) fn read_run_of(cx: &mut Ctx, cases: &[(NodeId, NodeId)], n: usize, page_wrap: bool) -> Vec<NodeId> {
    let rb = cx.row_bits;
    let mut rows: [Vec<(NodeId, NodeId)>; 4] = Default::default();
    let mut lo2s = Vec::new();
    for &(sel, base) in cases {
        let lo2 = cx.s.slice(base, 0, 2);
        let row = cx.s.slice(base, 2, rb);
        let row_next = if page_wrap {
            let in_page = cx.s.slice(row, 0, 6);
            let page = cx.s.slice(row, 6, rb - 6);
            let inc = cx.s.add_const(in_page, 1);
            cx.s.concat(&[inc, page])
        } else {
            cx.s.add_const(row, 1)
        };
        for (k, bank_rows) in rows.iter_mut().enumerate() {
            let r = if k == 3 {
                row
            } else {
                let kk = cx.s.konst(2, k as u64);
                let next = cx.s.cmp(CmpKind::Ltu, kk, lo2);
                let stay = cx.s.not(next);
                cx.s.one_hot(rb, &[(next, row_next), (stay, row)])
            };
            bank_rows.push((sel, r));
        }
        lo2s.push((sel, lo2));
    }
    let words: Vec<NodeId> = (0..4).map(|k| {
        let r = cx.s.one_hot(rb, &rows[k]);
        cx.s.load(mem::BANKS[k], 8, r)
    }).collect();
    let lo2 = cx.s.one_hot(2, &lo2s);
    let lo_is = cx.s.one_hot_decode(lo2, 4);
    (0..n)
        .map(|i| {
            let cases: Vec<(NodeId, NodeId)> = (0..4).map(|j| (lo_is[j], words[(j + i) % 4])).collect();
            cx.s.one_hot(8, &cases)
        })
        .collect()
}

/// [`read_banks`], rotated into the `n` bytes of the run.
pub(super) fn read_run(cx: &mut Ctx, base: NodeId, n: usize, page_wrap: bool) -> Vec<NodeId> {
    let (words, lo_is) = read_banks(cx, base, n, page_wrap);
    (0..n)
        .map(|i| {
            let cases: Vec<(NodeId, NodeId)> = (0..4).map(|j| (lo_is[j], words[(j + i) % 4])).collect();
            cx.s.one_hot(8, &cases)
        })
        .collect()
}

/// Writes `bytes[i]` at `base - i` (descending, within `base`'s page: stack pushes) for `i < count`, or one
/// byte at `base`: one write per bank. `count` is a 2-bit node (0..=3), `enable` gates all of it and `veto`
/// (late: a store diverted to a port, an IO register or ROM) cancels it, in the same gate.
pub(super) fn write_run(cx: &mut Ctx, base: NodeId, bytes: [NodeId; 3], count: NodeId, enable: NodeId, veto: NodeId) {
    let rb = cx.row_bits;
    let lo2 = cx.s.slice(base, 0, 2);
    let row = cx.s.slice(base, 2, rb);
    let in_page = cx.s.slice(row, 0, 6);
    let page = cx.s.slice(row, 6, rb - 6);
    let dec = cx.s.add_const(in_page, 63);
    let row_prev = cx.s.concat(&[dec, page]);
    let lo_is = cx.s.one_hot_decode(lo2, 4);
    let zero = cx.s.konst(8, 0);
    for k in 0..4usize {
        // Bank k holds byte i = (lo2 - k) mod 4, one row down when k > lo2.
        let data_cases: Vec<(NodeId, NodeId)> = (0..4).map(|j| (lo_is[j], bytes.get((j + 4 - k) % 4).copied().unwrap_or(zero))).collect();
        let data = cx.s.one_hot(8, &data_cases);
        let idx_cases: Vec<(NodeId, NodeId)> = (0..4)
            .map(|j| {
                let c = cx.s.konst(2, ((j + 4 - k) % 4) as u64);
                (lo_is[j], c)
            })
            .collect();
        let idx = cx.s.one_hot(2, &idx_cases);
        let within = cx.s.cmp(CmpKind::Ltu, idx, count);
        let c = cx.s.concat(&[within, enable, veto]);
        let en = cx.s.eq_const(c, 0b011);
        let r = if k == 0 {
            row
        } else {
            let kk = cx.s.konst(2, k as u64);
            let below = cx.s.cmp(CmpKind::Ltu, lo2, kk);
            let same = cx.s.not(below);
            cx.s.one_hot(rb, &[(below, row_prev), (same, row)])
        };
        cx.s.mem_write(mem::BANKS[k], r, data, en);
    }
}

/// NES map: the compact bank address (16 bits) of CPU address `addr` ([`crate::face::nes_bank_address`]; 0 for IO and ROM).
pub(super) fn nes_compact(cx: &mut Ctx, addr: NodeId) -> NodeId {
    let hi3 = cx.s.slice(addr, 13, 3);
    let in_ram = cx.s.eq_const(hi3, 0);
    let in_prg_ram = cx.s.eq_const(hi3, 3);
    let (ram_c, prg_ram_c) = nes_compact_parts(cx, addr);
    cx.s.one_hot(16, &[(in_ram, ram_c), (in_prg_ram, prg_ram_c)])
}

/// NES map: `addr`'s compact bank address were it in RAM (0x2000 + `addr % 0x800`) and were it in PRG RAM
/// (`addr % 0x2000`), 16 bits each.
pub(super) fn nes_compact_parts(cx: &mut Ctx, addr: NodeId) -> (NodeId, NodeId) {
    let low11 = cx.s.slice(addr, 0, 11);
    let at_ram = cx.s.konst(5, 0x2000 >> 11);
    let ram_c = cx.s.concat(&[low11, at_ram]);
    let low13 = cx.s.slice(addr, 0, 13);
    let z3 = cx.s.konst(3, 0);
    let prg_ram_c = cx.s.concat(&[low13, z3]);
    (ram_c, prg_ram_c)
}

/// The row after `row` (a bank row of `cx.row_bits` bits) for a run of `n` bytes: `row` itself for one byte; within
/// its page (64 rows) with `page_wrap`; else modulo the banks' size.
pub(super) fn next_row(cx: &mut Ctx, row: NodeId, n: usize, page_wrap: bool) -> NodeId {
    let rb = cx.row_bits;
    if n == 1 {
        row
    } else if page_wrap {
        let in_page = cx.s.slice(row, 0, 6);
        let page = cx.s.slice(row, 6, rb - 6);
        let inc = cx.s.add_const(in_page, 1);
        cx.s.concat(&[inc, page])
    } else {
        cx.s.add_const(row, 1)
    }
}
