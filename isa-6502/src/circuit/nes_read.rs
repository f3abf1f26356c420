//! NES map: the reads of the RAM banks and the PRG ROM (through the board's banks) at CPU addresses: a run of
//! bytes at one of several candidate bases, from the RAM or PRG RAM banks at the base's compact address or from
//! the PRG ROM's even and odd words.

use super::Ctx;
use super::banks::{nes_compact_parts, next_row};
use super::mapper::{mmc1_bank, mmc3_bank};
use crate::face::{PrgBanking, mem};
use isa_api::circuit::{NodeId, SumTerm};

/// NES map: the memories a read of `n` bytes at one of several bases reads, and its bytes.
pub(super) struct NesRead {
    /// The four banks' words (one byte each) at the rows of the selected base's RAM bytes.
    pub(super) banks: [NodeId; 4],
    /// The PRG ROM's even and odd words at the rows of the selected base's ROM bytes.
    pub(super) prg: [NodeId; 2],
    /// Byte `i` at `base + i` (`0` where the selected base is an IO register, or no base is selected).
    pub(super) bytes: Vec<NodeId>,
    /// The selects of [`nes_byte_cases`].
    pub(super) ram_is: Vec<NodeId>,
    pub(super) rom_is: Vec<NodeId>,
}

/// NES map: `n` (1..=3) bytes at one of several candidate bases (`cases`: an exclusive select and a 16-bit
/// CPU address each, at most one select on), from the RAM banks at the base's compact address
/// ([`crate::face::nes_bank_address`]) or from the PRG ROM, by the base's region; with `page_wrap` the bytes stay within the
/// base's page. Every candidate's rows are computed beside the others and the selects pick rows, as in
/// [`super::banks::read_run_of`]; one select per byte then takes the RAM bank or the ROM word lane that holds it.
///
/// The PRG ROM's word `w` (bytes `$8000 + 4w ..`) is in `PRG_EVEN` (`w` even) or `PRG_ODD` at row `w / 2`: the
/// bytes at `base ..= base + 2` are in `base`'s word and the next, one of each parity. Byte `i` lies at
/// position `p = base % 8 + i` of the eight bytes from `base & !7`: `PRG_EVEN`'s lanes for `p < 4`, `PRG_ODD`'s
/// for `4 <= p < 8`, and the next row of `PRG_EVEN` for `p >= 8`.
///
/// `rows`: where the memories read, when not at the selected case's rows: the candidates of the RAM banks' rows
/// and of the PRG ROM's, each list with exclusive selects (`None`: `cases` for both). A list may select a base
/// outside its memories or a base no case has, so that a memory the read is not in holds still (its bytes are
/// never taken: the byte selects follow `cases`).
pub(super) fn nes_read_run_of(cx: &mut Ctx, cases: &[(NodeId, NodeId)], rows: Option<[&[(NodeId, NodeId)]; 2]>, n: usize, page_wrap: bool) -> NesRead {
    let rb = cx.row_bits;
    let mut bank_rows: [Vec<(NodeId, NodeId)>; 4] = Default::default();
    let (mut even_rows, mut odd_rows) = (Vec::new(), Vec::new());
    let [bank_cases, rom_cases] = rows.unwrap_or([cases, cases]);
    for &(sel, base) in bank_cases {
        // Every row select is one lookup over the candidate's select and its address bits: (select, base % 4,
        // top three bits) for the banks (RAM at top 0, PRG RAM at top 3), (select, bit 15) for the ROM.
        let lo2 = cx.s.slice(base, 0, 2);
        let hi3 = cx.s.slice(base, 13, 3);
        let key = cx.s.concat(&[sel, lo2, hi3]);
        let (ram_c, prg_ram_c) = nes_compact_parts(cx, base);
        for (top, compact) in [(0u64, ram_c), (3, prg_ram_c)] {
            let row = cx.s.slice(compact, 2, rb);
            let row_next = next_row(cx, row, n, page_wrap);
            for (k, rows) in bank_rows.iter_mut().enumerate() {
                let k = k as u64;
                let here = move |v: u64| v & 1 == 1 && v >> 3 == top;
                if n == 1 || k == 3 {
                    let s = cx.s.truth_table(key, here);
                    rows.push((s, row));
                } else {
                    // Bank k holds byte (k - base % 4) mod 4 of the run, in the next row when k < base % 4.
                    let next = cx.s.truth_table(key, move |v| here(v) && k < (v >> 1) & 3);
                    let stay = cx.s.truth_table(key, move |v| here(v) && k >= (v >> 1) & 3);
                    rows.push((next, row_next));
                    rows.push((stay, row));
                }
            }
        }
    }
    for &(sel, base) in rom_cases {
        // ROM: the odd row is `base`'s; the even row is the next one when `base`'s word is odd.
        let rom = {
            let b15 = cx.s.bit(base, 15);
            let c = cx.s.concat(&[sel, b15]);
            cx.s.eq_const(c, 0b11)
        };
        let (even_row, odd_row) = prg_rows(cx, base, n, page_wrap);
        even_rows.push((rom, even_row));
        odd_rows.push((rom, odd_row));
    }
    let banks = [0usize, 1, 2, 3].map(|k| {
        let r = cx.s.one_hot(rb, &bank_rows[k]);
        cx.s.load(mem::BANKS[k], 8, r)
    });
    // One candidate: its rows as they are (the byte selects already ignore them outside the ROM).
    let prb = cx.prg.row_bits();
    let pick = |cx: &mut Ctx, rows: &[(NodeId, NodeId)]| if let [(_, r)] = rows { *r } else { cx.s.one_hot(prb, rows) };
    let er = pick(cx, &even_rows);
    let or = pick(cx, &odd_rows);
    let prg = [cx.s.load(mem::PRG_EVEN, 32, er), cx.s.load(mem::PRG_ODD, 32, or)];
    // The byte selects, from (select, base % 8, top three bits) of the selected candidate: one lookup over the
    // raw bits for one candidate; for several, over the picked base's bits (every candidate list here has one
    // select on). RAM: bank `j` holds byte 0 when `base % 4 == j`; ROM: position `k = base % 8`.
    // MMC3: a fetch whose next word is in the next 8 KiB window (`addr[12:2]` all ones) takes that word, the next
    // window's bank's first, from PRG_FIRST; bit 7 of the select key says so.
    let mut first = None;
    let key = match cases {
        [(sel, base)] => {
            let lo3 = cx.s.slice(*base, 0, 3);
            let hi3 = cx.s.slice(*base, 13, 3);
            let windowed = matches!(cx.prg.banking, PrgBanking::Mmc3 | PrgBanking::Mmc1);
            if windowed && n > 1 && !page_wrap && !cx.prg_regs.is_empty() {
                let (cross, row) = if cx.prg.banking == PrgBanking::Mmc3 {
                    let w = cx.s.slice(*base, 2, 11);
                    (cx.s.eq_const(w, 0x7FF), mmc3_bank(cx, *base, 1))
                } else {
                    // From $BFFC-$BFFF into the $C000 window (from $FFFF the address space wraps to RAM).
                    let w = cx.s.slice(*base, 2, 13);
                    (cx.s.eq_const(w, 0xFFF), mmc1_bank(cx, *base, true))
                };
                first = Some(cx.s.load(mem::PRG_FIRST, 32, row));
                cx.s.concat(&[*sel, lo3, hi3, cross])
            } else {
                cx.s.concat(&[*sel, lo3, hi3])
            }
        }
        _ => {
            let lo3s: Vec<(NodeId, NodeId)> = cases.iter().map(|&(sel, base)| (sel, cx.s.slice(base, 0, 3))).collect();
            let hi3s: Vec<(NodeId, NodeId)> = cases.iter().map(|&(sel, base)| (sel, cx.s.slice(base, 13, 3))).collect();
            let lo3 = cx.s.one_hot(3, &lo3s);
            let hi3 = cx.s.one_hot(3, &hi3s);
            let one = cx.one;
            cx.s.concat(&[one, lo3, hi3])
        }
    };
    let is_ram = |hi: u64| hi == 0 || hi == 3;
    let ram_is = (0..4u64).map(|j| cx.s.truth_table(key, move |v| v & 1 == 1 && (v >> 1) & 3 == j && is_ram((v >> 4) & 7))).collect::<Vec<_>>();
    let rom_is = (0..8u64).map(|k| cx.s.truth_table(key, move |v| v & 1 == 1 && (v >> 1) & 7 == k && v >> 6 & 3 == 1)).collect::<Vec<_>>();
    // With PRG_FIRST: the same positions when the next word crosses into the next window.
    let rom_x = match first {
        Some(_) => (0..8u64).map(|k| cx.s.truth_table(key, move |v| v & 1 == 1 && (v >> 1) & 7 == k && v >> 6 == 3)).collect::<Vec<_>>(),
        None => Vec::new(),
    };
    let bytes = (0..n)
        .map(|i| {
            let mut cases = nes_byte_cases(cx, &banks, prg, &ram_is, &rom_is, i);
            if let Some(f) = first {
                // Positions 8.. are the next window's first word; the others as without crossing.
                cases.extend(nes_byte_cases(cx, &banks, [f, prg[1]], &[], &rom_x, i).into_iter().enumerate().map(|(k, c)| {
                    if k + i >= 8 { c } else { (c.0, nes_lane(cx, prg, k + i)) }
                }));
            }
            cx.s.one_hot(8, &cases)
        })
        .collect();
    NesRead { banks, prg, bytes, ram_is, rom_is }
}

/// NES map: byte `p` (0..12) of the PRG ROM's even word then odd word then even word (see [`nes_read_run_of`]).
fn nes_lane(cx: &mut Ctx, prg: [NodeId; 2], p: usize) -> NodeId {
    let (word, lane) = match p {
        0..=3 => (prg[0], p),
        4..=7 => (prg[1], p - 4),
        _ => (prg[0], p - 8),
    };
    cx.s.slice(word, 8 * lane as u32, 8)
}

/// NES map: the cases of byte `i` of a run: the bank words (`ram_is[j]`: the run starts in bank `j`) and the
/// PRG ROM's even and odd words' lanes (`rom_is[k]`: the run starts at position `k` of its eight bytes; see
/// [`nes_read_run_of`]), at most one select on.
pub(super) fn nes_byte_cases(cx: &mut Ctx, banks: &[NodeId; 4], prg: [NodeId; 2], ram_is: &[NodeId], rom_is: &[NodeId], i: usize) -> Vec<(NodeId, NodeId)> {
    let mut cases: Vec<(NodeId, NodeId)> = ram_is.iter().enumerate().map(|(j, &sel)| (sel, banks[(j + i) % 4])).collect();
    for (k, &sel) in rom_is.iter().enumerate() {
        let byte = nes_lane(cx, prg, k + i);
        cases.push((sel, byte));
    }
    cases
}

/// NES map: the rows of `PRG_EVEN` and `PRG_ODD` that hold the bytes at `base .. base + n` ($8000-$FFFF; see
/// [`nes_read_run_of`]), through the board's banks. The odd row is `base`'s word's; the even row is the next
/// one when `base`'s word is odd (within `base`'s page with `page_wrap`).
///
/// With UxROM banking the row is the 16 KiB bank's number above `addr[13:3]`: `PRG_BANK` at $8000-$BFFF, the last
/// bank (every bit 1) at $C000-$FFFF, so each bank bit is `PRG_BANK`'s bit OR `addr[14]`. A fetch at
/// $BFFC-$BFFF whose next word is at $C000 takes the even word's bank bits from the last bank too (OR the one
/// equality saying so), and its row bits wrap to 0: both computed beside the odd row's, no deeper.
fn prg_rows(cx: &mut Ctx, base: NodeId, n: usize, page_wrap: bool) -> (NodeId, NodeId) {
    let t = |node: NodeId| SumTerm { node, shift: 0, neg: false };
    let b2 = cx.s.bit(base, 2);
    // The row's bits within a bank (all of them without banking).
    let low_bits = match cx.prg.banking {
        PrgBanking::Fixed => cx.prg.row_bits(),
        PrgBanking::Uxrom | PrgBanking::Mmc1 => 11,
        PrgBanking::Mmc3 => 10,
    };
    let odd_low = cx.s.slice(base, 3, low_bits);
    let even_low = if n == 1 {
        odd_low
    } else if page_wrap {
        let in_page = cx.s.slice(base, 3, 5);
        let page = cx.s.slice(base, 8, low_bits - 5);
        let inc = cx.s.sum(5, &[t(in_page), t(b2)], 0);
        cx.s.concat(&[inc, page])
    } else {
        cx.s.sum(low_bits, &[t(odd_low), t(b2)], 0)
    };
    match (cx.prg.banking, cx.prg_regs.first().copied()) {
        (PrgBanking::Mmc1, Some(_)) => {
            let bank = mmc1_bank(cx, base, false);
            (cx.s.concat(&[even_low, bank]), cx.s.concat(&[odd_low, bank]))
        }
        (PrgBanking::Mmc3, Some(_)) => {
            // The word after a window's last word is in the next window, at another bank: such a fetch takes
            // it from PRG_FIRST (see `nes_read_run_of`); here both rows are in `base`'s window.
            let bank = mmc3_bank(cx, base, 0);
            (cx.s.concat(&[even_low, bank]), cx.s.concat(&[odd_low, bank]))
        }
        (PrgBanking::Uxrom, Some(bank)) => {
            let a14 = cx.s.bit(base, 14);
            // The fetch's next word crosses from $BFFF into the fixed bank.
            let cross = if n == 1 || page_wrap {
                None
            } else {
                let w = cx.s.slice(base, 2, 12);
                Some(cx.s.eq_const(w, 0xFFF))
            };
            let (mut odd_bits, mut even_bits) = (Vec::new(), Vec::new());
            for j in 0..cx.prg.bank16_bits() {
                let bj = cx.s.bit(bank, j);
                odd_bits.push(cx.s.or(bj, a14));
                even_bits.push(match cross {
                    Some(c) => cx.s.any(&[bj, a14, c]),
                    None => cx.s.or(bj, a14),
                });
            }
            let mut odd = vec![odd_low];
            odd.extend(odd_bits);
            let mut even = vec![even_low];
            even.extend(even_bits);
            (cx.s.concat(&even), cx.s.concat(&odd))
        }
        _ => (even_low, odd_low),
    }
}
