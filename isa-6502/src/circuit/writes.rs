//! The writes section: stores, read-modify-writes and pushes as one write run of up to three bytes over the four
//! banks (vetoed where the byte goes to a port, an IO register or ROM), and the console and exit ports' enables.

use super::Ctx;
use super::banks::{nes_compact, write_run};
use super::decode::{Decoded, Flag};
use super::execute::Execute;
use super::fetch::Fetch;
use super::operands::Operands;
use super::state::{CpuState6502, State};
use crate::face::Mos6502Options;
use isa_api::circuit::NodeId;

/// The writes section: the write run of the instruction of `f` or of an interrupt sequence (`st.kind`).
pub(super) fn writes(cx: &mut Ctx, opts: &Mos6502Options, st: &State, f: &Fetch, o: &Operands, e: &Execute) -> Writes {
    let inputs = WriteInputs {
        b2: f.b[2],
        ax: e.alu.ax,
        crossings: [(f.modes.abx, o.direct.cross_abx), (f.modes.aby, o.direct.cross_aby)],
        ea: o.data.ea,
        ea_mem: o.data.ea_mem,
        go: o.exec,
        take_int: st.kind.take_int,
        int_seq: st.kind.int_seq,
        f_rmw_mem: o.f_rmw_mem,
        io: o.data.io,
        rom: o.data.rom,
        f_jsr: e.pc.f_jsr,
        f_brk: o.ptr.f_brk,
        rmw_val: e.rmw.value,
        one8: o.ptr.one8,
    };
    write_stage(cx, opts, f.dec, &st.cpu, inputs)
}

/// What the write run reads besides the registers.
struct WriteInputs {
    /// The operand's high byte (SHX/SHY store the register AND it + 1).
    b2: NodeId,
    /// A AND X (SAX).
    ax: NodeId,
    /// (mode, page crossed) of abs,X and abs,Y: a page-crossing SHX/SHY writes at its value's page.
    crossings: [(NodeId, NodeId); 2],
    /// The effective address, and (NES map) its compact memory address.
    ea: NodeId,
    ea_mem: NodeId,
    /// The instruction completes this step; an interrupt sequence is taken instead; it is an NMI or IRQ
    /// sequence (three pushes).
    go: NodeId,
    take_int: NodeId,
    int_seq: NodeId,
    f_rmw_mem: NodeId,
    /// NES map: `ea` is an IO register; `ea` is in $8000-$FFFF.
    io: NodeId,
    rom: NodeId,
    f_jsr: NodeId,
    f_brk: NodeId,
    /// The read-modify-write's value.
    rmw_val: NodeId,
    /// The constant 1 (8 bits): the stack's page in the flat map.
    one8: NodeId,
}

/// What the rest of the machine reads from the write stage.
pub(super) struct Writes {
    pub(super) f_store: NodeId,
    /// The value a store writes (A, X, Y, A AND X, or SHX/SHY's).
    pub(super) store_val: NodeId,
    /// (port kind: 1 console, 2 exit; enable) of the configured store ports.
    pub(super) port_writes: Vec<(u32, NodeId)>,
    /// The exit port's enable, when configured.
    pub(super) exits: Option<NodeId>,
    /// A store or a read-modify-write to memory.
    pub(super) writes_ea: NodeId,
    /// A store or read-modify-write to an IO register or (NES map) the ROM: the host's.
    pub(super) io_write: NodeId,
}

/// Stores, read-modify-writes and pushes: one write run of up to three bytes (a store's or read-modify-write's
/// byte, PHA/PHP's, JSR's two, BRK's and an interrupt's three), vetoed where the byte goes to a port, an IO
/// register or ROM.
fn write_stage(cx: &mut Ctx, opts: &Mos6502Options, d: Decoded, st: &CpuState6502, w: WriteInputs) -> Writes {
    let CpuState6502 { pc, a, x, y, sp, p, .. } = *st;
    let WriteInputs { b2, ax, crossings, ea, ea_mem, go, take_int, int_seq, f_rmw_mem, io, rom, f_jsr, f_brk, rmw_val, one8 } = w;
    let [(m_abx, cross_abx), (m_aby, cross_aby)] = crossings;
    let f_store = d.flag(cx, Flag::Store);
    let f_store_x = d.flag(cx, Flag::StoreX);
    let f_store_y = d.flag(cx, Flag::StoreY);
    let f_store_ax = d.flag(cx, Flag::StoreAx);
    let f_pha = d.flag(cx, Flag::Pha);
    let f_php = d.flag(cx, Flag::Php);
    let f_store_high = d.flag(cx, Flag::StoreHigh);
    let store_val = {
        // SHY / SHX store the register AND (the base's high byte + 1), of the byte gated by their flag
        // (`Ctx::gated`: no other instruction reads it).
        let b2 = cx.gated(b2, f_store_high);
        let hi1 = cx.s.add_const(b2, 1);
        let (xh, yh) = (cx.s.and(x, hi1), cx.s.and(y, hi1));
        let c = cx.s.concat(&[f_store_x, f_store_y, f_store_high]);
        let (sx, sy, shx, shy) = (cx.s.eq_const(c, 0b001), cx.s.eq_const(c, 0b010), cx.s.eq_const(c, 0b101), cx.s.eq_const(c, 0b110));
        cx.s.one_hot_or(8, &[(sx, x), (sy, y), (f_store_ax, ax), (shx, xh), (shy, yh)], a)
    };
    // Where a page-crossing SHY / SHX writes: the stored value is the address's high byte.
    let sh_cross = {
        let crossed = cx.s.one_hot(1, &[(m_abx, cross_abx), (m_aby, cross_aby)]);
        cx.s.and(f_store_high, crossed)
    };
    let ea_sh = {
        let lo = cx.s.slice(ea, 0, 8);
        cx.s.concat(&[lo, store_val])
    };
    let mut diverted = Vec::new();
    let mut port_writes = Vec::new();
    let mut exits = None;
    for (addr, kind) in [(opts.console, 1), (opts.exit, 2)] {
        if let Some(addr) = addr {
            let hit = cx.s.eq_const(ea, u64::from(addr));
            let st = cx.s.and(f_store, hit);
            let en = cx.s.and(go, st);
            diverted.push(st);
            port_writes.push((kind, en));
            if kind == 2 {
                exits = Some(en);
            }
        }
    }
    // Stores and read-modify-writes reach memory unless diverted to a port, an IO register or ROM.
    let writes_ea = cx.s.or(f_store, f_rmw_mem);
    // A store or read-modify-write whose byte goes to a port, an IO register or ROM writes no memory: a veto
    // on the write run's enables, so that the run's byte count does not wait for the address.
    let ea_veto = {
        diverted.push(io);
        diverted.push(rom);
        let d = cx.s.any(&diverted);
        let ni = cx.s.not(take_int);
        let c = cx.s.concat(&[writes_ea, d, ni]);
        cx.s.eq_const(c, 0b111)
    };
    // An IO register's store, or (NES map) a store to the ROM: the cartridge's mapper registers, the host's.
    let io_write = {
        let to_host = cx.s.or(io, rom);
        let t = cx.s.and(writes_ea, to_host);
        cx.s.and(go, t)
    };
    let pushed_p = {
        let bu = cx.s.konst(8, 0x30);
        cx.s.or(p, bu)
    };
    let jsr_brk = cx.s.or(f_jsr, f_brk);
    // The return address JSR and BRK push, of PC gated by them (`Ctx::gated`).
    let pc2 = {
        let pc = cx.gated(pc, jsr_brk);
        cx.s.add_const(pc, 2)
    };
    let ret_lo = cx.s.slice(pc2, 0, 8);
    let ret_hi = cx.s.slice(pc2, 8, 8);
    let pc_lo = cx.s.slice(pc, 0, 8);
    let pc_hi = cx.s.slice(pc, 8, 8);
    let (st_store, st_rmw) = {
        let nt = cx.s.not(take_int);
        let s1 = cx.s.and(f_store, nt);
        let s2 = cx.s.and(f_rmw_mem, nt);
        (s1, s2)
    };
    let nt = cx.s.not(take_int);
    let pha = cx.s.and(f_pha, nt);
    let php = cx.s.and(f_php, nt);
    let jsr_brk_i = cx.s.and(jsr_brk, nt);
    let brk_i = cx.s.and(f_brk, nt);
    let w0 = cx.s.one_hot(8, &[(st_store, store_val), (st_rmw, rmw_val), (pha, a), (php, pushed_p), (jsr_brk_i, ret_hi), (int_seq, pc_hi)]);
    let w1 = cx.s.one_hot(8, &[(jsr_brk_i, ret_lo), (int_seq, pc_lo)]);
    let w2 = cx.s.one_hot(8, &[(brk_i, pushed_p), (int_seq, p)]);
    let one_byte = cx.s.any(&[writes_ea, f_pha, f_php]);
    let count = {
        let (c1, c2, c3, c0) = (cx.s.konst(2, 1), cx.s.konst(2, 2), cx.s.konst(2, 3), cx.s.konst(2, 0));
        let jsr = cx.s.and(f_jsr, nt);
        let brk_or_int = cx.s.or(brk_i, int_seq);
        let one_b = cx.s.and(one_byte, nt);
        cx.s.one_hot_or(2, &[(one_b, c1), (jsr, c2), (brk_or_int, c3)], c0)
    };
    // NES map: the stack page at its compact address (RAM at 0x2000).
    let stack_base = if opts.nes {
        let page = cx.s.konst(8, 0x21);
        cx.s.concat(&[sp, page])
    } else {
        cx.s.concat(&[sp, one8])
    };
    let ea_sh = if opts.nes { nes_compact(cx, ea_sh) } else { ea_sh };
    let push_base = {
        let pushes = cx.s.any(&[f_pha, f_php, f_jsr, f_brk, int_seq]);
        let c = cx.s.concat(&[pushes, sh_cross]);
        let (plain, high) = (cx.s.eq_const(c, 0b00), cx.s.eq_const(c, 0b10));
        cx.s.one_hot(16, &[(pushes, stack_base), (plain, ea_mem), (high, ea_sh)])
    };
    let write_en = cx.s.or(go, take_int);
    write_run(cx, push_base, [w0, w1, w2], count, write_en, ea_veto);
    Writes { f_store, store_val, port_writes, exits, writes_ea, io_write }
}
