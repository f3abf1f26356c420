//! Loads and stores (Unpriv §2.6): the effective address (which also serves the syscalls' byte address), its
//! range check, the store data, and the data path of each memory layout: with [`MemoryLayout::Words`] one word
//! read and a read-modify-write of it (an access crossing a word boundary takes two steps); with
//! [`MemoryLayout::ByteLanes`] one row per lane (every access in one step).
//!
//! [`MemoryLayout::Words`]: crate::face::MemoryLayout::Words
//! [`MemoryLayout::ByteLanes`]: crate::face::MemoryLayout::ByteLanes

use super::decode::Decode;
use super::divider::Divider;
use super::ecall::Ecall;
use super::fetch::Fetch;
use super::{Ram, ram_offset};
use crate::face::mem;
use isa_api::{CircuitBuilder, NodeId, ShiftKind};

/// Where the data access reads and writes RAM.
#[derive(Clone)]
pub(super) enum DataPlan {
    /// Byte lanes: the row of each lane.
    Lanes { rows: Vec<NodeId> },
    /// Words: the row read (and written) and the read-modify-write word.
    Word { row: NodeId, data: NodeId },
}

/// What [`load_store`] hands the later sections (node ids of its signals).
#[derive(Clone)]
pub(super) struct LoadStore {
    /// The access's byte offset in its word (`ea % 4`).
    pub(super) boff: NodeId,
    /// The RAM rows the access reads and writes, and the written word (words layout).
    pub(super) data_plan: DataPlan,
    /// The effective address.
    pub(super) ea: NodeId,
    /// The effective address lies in RAM (its first byte).
    pub(super) hi_ok: NodeId,
    /// A load or a store.
    pub(super) is_ls: NodeId,
    /// Words layout: the first step of a load crossing a word boundary (it saves the first word in row N).
    pub(super) ld_hold: Option<NodeId>,
    /// The loaded value for rd, one (condition, value) case per width, signedness and byte offset.
    pub(super) load_cases: Vec<(NodeId, NodeId)>,
    /// Words layout: the first step of an access crossing a word boundary (pc holds, `BUSY = 1`).
    pub(super) ls_hold: Option<NodeId>,
    /// The effective address's offset in RAM.
    pub(super) off: NodeId,
    /// The byte at the effective address (write(2)'s byte for `OUT`).
    pub(super) out_byte: NodeId,
    /// The store data: rs2 rotated left by 8·boff.
    pub(super) sword: NodeId,
    /// A halfword access.
    pub(super) sz2: NodeId,
    /// A word access.
    pub(super) sz4: NodeId,
    /// Words layout: the word read.
    pub(super) word_read: Option<NodeId>,
}

/// The effective address's signals that both layouts' data paths read.
struct Addr {
    off: NodeId,
    boff: NodeId,
    sz2: NodeId,
    sz4: NodeId,
    is_ls: NodeId,
    /// `boff == k` for k = 0..4.
    at: Vec<NodeId>,
    sword: NodeId,
}

/// A layout's data path: the loaded values, the output byte, the RAM rows and written data, and (words layout)
/// the signals of an access crossing a word boundary.
struct Access {
    load_cases: Vec<(NodeId, NodeId)>,
    out_byte: NodeId,
    data_plan: DataPlan,
    ls_hold: Option<NodeId>,
    ld_hold: Option<NodeId>,
    word_read: Option<NodeId>,
}

/// The effective address, its range check and the data access (Unpriv §2.6).
pub(super) fn load_store(
    s: &mut CircuitBuilder,
    ram: &Ram,
    fetch: &Fetch,
    decode: &Decode,
    divider: &Divider,
    ecall: &Ecall,
) -> LoadStore {
    let Fetch { a, bv, w, .. } = fetch.clone();
    let Decode { imm_i, imm_s, is_load, is_store, is_sys, ld, st, .. } = decode.clone();
    let Ecall { wr_addr, .. } = ecall.clone();
    // ---- effective address, range check, byte lanes (Unpriv §2.6) ---------------------------------------------
    // ECALL has rs1 = x0 and imm = 0, so one adder serves loads, stores and the write's byte address.
    let st_bit = s.bit(w, 5); // opcode bit 5: STORE (0100011) vs LOAD (0000011)
    let imm_ls = s.select(st_bit, imm_s, imm_i);
    let ea_x = s.select(is_sys, wr_addr, imm_ls);
    let ea = s.add(a, ea_x);
    let (off, hi_ok) = ram_offset(s, ram, ea);
    let boff = s.slice(off, 0, 2);
    let sz2 = s.any(&[ld[1], ld[4], st[1]]);
    let sz4 = s.any(&[ld[2], st[2]]);
    let is_ls = s.or(is_load, is_store);
    let at: Vec<NodeId> = (0..4).map(|k| s.eq_const(boff, k)).collect();
    // Store data: byte i of the access's word(s) is rs2 rotated left by 8·boff.
    let rot = {
        let z = s.konst_masked(3, 0);
        s.concat(&[z, boff])
    };
    let sword = s.shift(ShiftKind::Rotl, bv, rot);
    let addr = Addr { off, boff, sz2, sz4, is_ls, at, sword };
    let Access { load_cases, out_byte, data_plan, ls_hold, ld_hold, word_read } = if ram.words {
        words_access(s, ram, fetch, decode, divider, ecall, &addr)
    } else {
        lanes_access(s, ram, decode, &addr)
    };
    LoadStore {
        boff, data_plan, ea, hi_ok, is_ls, ld_hold, load_cases, ls_hold, off, out_byte, sword, sz2, sz4, word_read,
    }
}

/// Words layout: the word at the access's row (the next row in the second step of a crossing access), the
/// loaded values, and the read-modify-write word (the store's bytes, or read(2)'s input byte, merged in).
fn words_access(
    s: &mut CircuitBuilder,
    ram: &Ram,
    fetch: &Fetch,
    decode: &Decode,
    divider: &Divider,
    ecall: &Ecall,
    addr: &Addr,
) -> Access {
    let Ram { aw, .. } = *ram;
    let Fetch { busy0, s_n, .. } = fetch.clone();
    let Decode { ld, st, .. } = decode.clone();
    let Divider { c1, .. } = divider.clone();
    let Ecall { in_byte, rd_store, .. } = ecall.clone();
    let Addr { off, boff, sz2, sz4, is_ls, ref at, sword } = *addr;
    let mut load_cases = Vec::new();
    // Words layout: the first step of an access crossing a word boundary (holds; a load saves the first word in
    // scratch row N, a store writes the first word's bytes).
    let ph1 = s.and(is_ls, c1); // second step of a crossing access: the next word
    let row0 = s.slice(off, 2, aw);
    let z = s.konst_masked(aw, 0);
    let row = s.add_c(row0, z, ph1);
    let word = s.load(mem::RAM0, 32, row);
    let wb: Vec<NodeId> = (0..4).map(|j| s.slice(word, 8 * j, 8)).collect();
    let nb: Vec<NodeId> = (0..4).map(|j| s.slice(s_n, 8 * j, 8)).collect();
    // First step of a crossing access: (halfword at offset 3 or word at offset 1..3) and BUSY = 0, as
    // equalities over (boff, half, word, busy0): two threshold levels after the address.
    let crossing_first = |s: &mut CircuitBuilder, half: NodeId, word: NodeId| {
        let key = s.concat(&[boff, half, word, busy0]);
        let pats: Vec<NodeId> =
            [3u64 | 1 << 2, 1 | 1 << 3, 2 | 1 << 3, 3 | 1 << 3].iter().map(|p| s.eq_const(key, p | 1 << 4)).collect();
        s.any(&pats)
    };
    let hold = crossing_first(s, sz2, sz4);
    let ld_half = s.or(ld[1], ld[4]);
    let ld_hold = Some(crossing_first(s, ld_half, ld[2]));
    let ls_hold = Some(hold);
    for k in 0..4usize {
        for (t, n) in [1usize, 2, 4, 1, 2].into_iter().enumerate() {
            // Byte j of the value: byte k + j of the first word (this step's word, or row N in the second
            // step of a crossing load), then bytes of the second word.
            let crossing = k + n > 4;
            let bytes: Vec<NodeId> = (0..n)
                .map(|j| if k + j < 4 { if crossing { nb[k + j] } else { wb[k + j] } } else { wb[k + j - 4] })
                .collect();
            let raw = s.concat(&bytes);
            let v = if t < 3 { s.sext(raw, 32) } else { s.zext(raw, 32) };
            let sel = if crossing { s.all(&[ld[t], at[k], c1]) } else { s.and(ld[t], at[k]) };
            load_cases.push((sel, v));
        }
    }
    let out_byte = {
        let c: Vec<(NodeId, NodeId)> = (0..4).map(|k| (at[k], wb[k])).collect();
        s.and_or(8, &c)
    };
    // Read-modify-write: byte i of the written word is new iff the access covers it in this step.
    let key = s.concat(&[boff, c1]);
    let mut new_bytes = Vec::new();
    for (i, old_byte) in wb.iter().enumerate() {
        let mut hits = Vec::new();
        for (t, n) in [1usize, 2, 4].into_iter().enumerate() {
            for k in 0..4usize {
                for p in 0..2usize {
                    let covers = if p == 0 { k <= i && i < k + n } else { k + n > 4 && i < k + n - 4 };
                    if covers {
                        let kk = s.concat(&[key, st[t]]);
                        hits.push(s.eq_const(kk, (k | p << 2 | 1 << 3) as u64));
                    }
                }
            }
        }
        let m = s.any(&hits);
        let nbyte = s.slice(sword, 8 * i as u32, 8);
        // read(2): the input byte goes to byte boff of the word.
        let rk = s.concat(&[boff, rd_store]);
        let r_i = s.eq_const(rk, i as u64 | 1 << 2);
        let keep = s.any(&[m, r_i]);
        let nkeep = s.not(keep);
        new_bytes.push(s.and_or(8, &[(m, nbyte), (r_i, in_byte), (nkeep, *old_byte)]));
    }
    let new_word = s.concat(&new_bytes);
    let data_plan = DataPlan::Word { row, data: new_word };
    Access { load_cases, out_byte, data_plan, ls_hold, ld_hold, word_read: Some(word) }
}

/// Byte lanes: the row of each lane (lane i holds byte (i - boff) mod 4 of the access) and the loaded values.
fn lanes_access(s: &mut CircuitBuilder, ram: &Ram, decode: &Decode, addr: &Addr) -> Access {
    let Ram { aw, .. } = *ram;
    let Decode { ld, .. } = decode.clone();
    let Addr { off, ref at, .. } = *addr;
    let mut load_cases = Vec::new();
    // Lane i holds byte (i - boff) mod 4 of the access, in row (off + 3 - i) >> 2.
    let rows: Vec<NodeId> = (0..4u64)
        .map(|i| {
            let x = if i == 3 {
                off
            } else {
                let c = s.konst_masked(aw + 2, 3 - i);
                s.add(off, c)
            };
            s.slice(x, 2, aw)
        })
        .collect();
    let lanes: Vec<NodeId> = (0..4).map(|i| s.load(mem::RAM0 + i, 8, rows[i as usize])).collect();
    // Loaded values per byte offset k: byte j of the access is lane (k + j) mod 4.
    for k in 0..4usize {
        let l = |j: usize| lanes[(k + j) % 4];
        let half = s.concat(&[l(0), l(1)]);
        let word = s.concat(&[l(0), l(1), l(2), l(3)]);
        let vals = [s.sext(l(0), 32), s.sext(half, 32), word, s.zext(l(0), 32), s.zext(half, 32)];
        for (t, v) in vals.into_iter().enumerate() {
            let sel = s.and(ld[t], at[k]);
            load_cases.push((sel, v));
        }
    }
    let out_byte = {
        let c: Vec<(NodeId, NodeId)> = (0..4).map(|k| (at[k], lanes[k])).collect();
        s.and_or(8, &c)
    };
    let data_plan = DataPlan::Lanes { rows };
    Access { load_cases, out_byte, data_plan, ls_hold: None, ld_hold: None, word_read: None }
}
