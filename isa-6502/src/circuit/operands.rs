//! The operands section: the effective addresses that need no pointer, level B (the pointer read: zero-page
//! pointers, JMP's pointer, pulls, vectors), level C (the effective address and the byte read there, the
//! operand) and, in the NES map, whether the instruction reads an IO register (answered within the step).

use super::Ctx;
use super::banks::{nes_compact, read_banks, read_run_of};
use super::decode::{Decoded, Flag, ctl, mode_code};
use super::fetch::{Fetch, Modes};
use super::nes_read::{NesRead, nes_byte_cases, nes_read_run_of};
use super::state::State;
use crate::face::{Mos6502Options, PrgBanking, input};
use crate::opcode::AddressingMode;
use isa_api::circuit::{CmpKind, NodeId, SumTerm};

/// The operands section's results.
pub(super) struct Operands {
    /// The addresses that need no pointer.
    pub(super) direct: DirectAddresses,
    /// Level B.
    pub(super) ptr: PointerRead,
    /// Whether (zp),Y's address crossed a page.
    pub(super) cross_izy: NodeId,
    /// Level C.
    pub(super) data: DataRead,
    /// The instruction reads, modifies and writes memory.
    pub(super) f_rmw_mem: NodeId,
    /// NES map: the instruction reads an IO register ([`io_read`]): its request on port `IO_READ`, answered within
    /// the step on input `IO_DATA`.
    pub(super) io_read: NodeId,
    /// The instruction completes this step (the fetch's `exec`): every case of the next values is gated by it.
    pub(super) exec: NodeId,
}

/// The operands section: the addresses from the fetched bytes and X, Y (`st`), the pointer read, the effective
/// address of the mode `f` selects (or the DMA's) and the data read there, and whether it reads an IO register.
pub(super) fn operands(cx: &mut Ctx, opts: &Mos6502Options, st: &State, f: &Fetch) -> Operands {
    let (a, x, y, sp) = (st.cpu.a, st.cpu.x, st.cpu.y, st.cpu.sp);
    let ([op, b1, b2], m) = (f.b, f.modes);
    let direct = direct_addresses(cx, b1, b2, x, y, &m, opts.nes.then_some(op));
    let DirectAddresses { op16, ea_zp, ea_zpx, ea_zpy, ea_abx, ea_aby, .. } = direct;
    // Level B: the pointer read (zero-page pointers, JMP's pointer, pulls, vectors).
    // NES map: the pointer read's bases gated by the flags of the modes that read them (`Ctx::gated`), so that
    // each base's bank rows, next rows and row selects hold still in the other instructions. The flags come
    // straight from the opcode's lookup, a layer before the mode selects, and the NES map's read has that layer
    // to spare; (zp,X)'s operands are gated by its opcodes' pattern instead (`gated_by_opcode`), since its sum
    // comes after the gate. The flat map's read has no layer to spare (one more layer), and neither has JMP's
    // pointer under MMC1's and MMC3's window banks (its ROM rows go through the window's bank): those bases
    // stay ungated.
    let ptr_bases = if opts.nes {
        let zero8 = cx.s.konst(8, 0);
        let f_izy = f.dec.flag(cx, Flag::ModeIzy);
        // (zp,X)'s zp + X from both operands gated by its opcodes' pattern: 0 in every other instruction.
        let zpx = {
            let b = gated_by_opcode(cx, b1, op, IZX_OPCODES);
            let x = gated_by_opcode(cx, x, op, IZX_OPCODES);
            cx.s.add(b, x)
        };
        let zp = cx.gated(b1, f_izy);
        let jind = match opts.prg.banking {
            PrgBanking::Fixed | PrgBanking::Uxrom => {
                let f_jind = f.dec.flag(cx, Flag::JmpInd);
                cx.gated(op16, f_jind)
            }
            PrgBanking::Mmc1 | PrgBanking::Mmc3 => op16,
        };
        [cx.s.concat(&[zpx, zero8]), cx.s.concat(&[zp, zero8]), jind]
    } else {
        [ea_zpx, ea_zp, op16]
    };
    let ptr = pointer_read(cx, opts, f.dec, f.mode, sp, [st.kind.take_int, st.kind.nmi_vector], ptr_bases);
    // (zp),Y's Y gated by its mode's flag (the pointer read returns the vector most steps; Y moves more often).
    let (ea_izy, cross_izy) = {
        let f_izy = f.dec.flag(cx, Flag::ModeIzy);
        let y = cx.gated(y, f_izy);
        indexed(cx, ptr.ptr16, y)
    };
    // Level C: the data read at the effective address.
    let mut ea_cases = vec![(m.zp, ea_zp), (m.zpx, ea_zpx), (m.zpy, ea_zpy), (m.abs, op16), (m.abx, ea_abx)];
    ea_cases.extend([(m.aby, ea_aby), (m.izx, ptr.ptr16), (m.izy, ea_izy)]);
    if opts.nes {
        let z2 = cx.s.konst(2, 0);
        let ea_dma = cx.s.concat(&[z2, st.dma.row, st.dma.page]);
        ea_cases.push((st.kind.dma_step, ea_dma));
    }
    let data = data_read(cx, opts, &ea_cases, [m.imm, m.acc], a, b1);
    // NES map: an instruction that reads an IO register asks the host within the step (see `io_read`).
    let f_rmw_mem = f.dec.flag(cx, Flag::RmwMem);
    let io_read = io_read(cx, opts, f.dec, [f.exec, data.io_asks], f_rmw_mem);
    Operands { direct, ptr, cross_izy, data, f_rmw_mem, io_read, exec: f.exec }
}

/// `base + idx` (one 16-bit add), and whether it crossed a page (the high byte moved).
fn indexed(cx: &mut Ctx, base: NodeId, idx: NodeId) -> (NodeId, NodeId) {
    let i16 = cx.s.zext(idx, 16);
    let sum = cx.s.add(base, i16);
    let (h0, h1) = (cx.s.slice(base, 8, 8), cx.s.slice(sum, 8, 8));
    (sum, cx.s.cmp(CmpKind::Ne, h0, h1))
}

/// The effective addresses that need no pointer read, from the operand bytes `b1`, `b2` and X, Y.
pub(super) struct DirectAddresses {
    /// The operand word (absolute).
    pub(super) op16: NodeId,
    pub(super) ea_zp: NodeId,
    pub(super) ea_zpx: NodeId,
    pub(super) ea_zpy: NodeId,
    /// abs,X and abs,Y, and whether each crossed a page.
    pub(super) ea_abx: NodeId,
    pub(super) cross_abx: NodeId,
    pub(super) ea_aby: NodeId,
    pub(super) cross_aby: NodeId,
}

/// The addresses of the direct modes (zero page, absolute, indexed). zp,Y, abs,X and abs,Y add Y or X to the
/// operand gated by their mode (`m`; see `Ctx::gated`): every reader of such an address or of its page crossing
/// selects it by that mode.
///
/// `op`: in the NES map, the opcode byte, by which zp,X's operand is gated ([`gated_by_opcode`]; the pointer read
/// has its own (zp,X) sum there). Elsewhere zp,X is not gated: (zp,X) reads its pointer there, on the critical
/// path, where a gate's layer would add one to the machine.
fn direct_addresses(cx: &mut Ctx, b1: NodeId, b2: NodeId, x: NodeId, y: NodeId, m: &Modes, op: Option<NodeId>) -> DirectAddresses {
    let zero8 = cx.s.konst(8, 0);
    let op16 = cx.s.concat(&[b1, b2]);
    let zpx = match op {
        Some(op) => {
            let b = gated_by_opcode(cx, b1, op, ZPX_OPCODES);
            cx.s.add(b, x)
        }
        None => cx.s.add(b1, x),
    };
    let zpy = {
        let b = cx.gated(b1, m.zpy);
        cx.s.add(b, y)
    };
    let ea_zp = cx.s.concat(&[b1, zero8]);
    let ea_zpx = cx.s.concat(&[zpx, zero8]);
    let ea_zpy = cx.s.concat(&[zpy, zero8]);
    let (ea_abx, cross_abx) = {
        let base = cx.gated(op16, m.abx);
        indexed(cx, base, x)
    };
    let (ea_aby, cross_aby) = {
        let base = cx.gated(op16, m.aby);
        indexed(cx, base, y)
    };
    DirectAddresses { op16, ea_zp, ea_zpx, ea_zpy, ea_abx, cross_abx, ea_aby, cross_aby }
}

/// The opcodes of one or more addressing modes as a pattern of the opcode byte, `(mask, value)`: every opcode of
/// the modes has `op & mask == value` (others may too). `tests::opcode_patterns_cover_their_modes` checks them
/// against the opcode matrix.
type OpcodePattern = (u8, u8);

/// zp,X: columns $x4-$x7 of the odd rows (`$14`, `$15`, ...; with the zp,Y opcodes `$96`, `$97`, `$B6`, `$B7`).
const ZPX_OPCODES: OpcodePattern = (0x1C, 0x14);
/// (zp,X): columns $x1 and $x3 of the even rows.
const IZX_OPCODES: OpcodePattern = (0x1D, 0x01);

/// `v` where the opcode byte `op` matches `pattern`, else 0: per bit one lookup over that bit and the opcode bits
/// the pattern's mask names, a single step each. Straight from the fetched bytes (and registers), so one layer,
/// where gating by a decoded flag ([`Ctx::gated`]) takes two: the opcode's lookup, then the AND. A sum of gated
/// operands holds still in the instructions the pattern excludes, where the fetched operand byte changes at
/// every step.
fn gated_by_opcode(cx: &mut Ctx, v: NodeId, op: NodeId, (mask, value): OpcodePattern) -> NodeId {
    let op_bits: Vec<NodeId> = (0..8).filter(|i| mask >> i & 1 == 1).map(|i| cx.s.bit(op, i)).collect();
    let want = (0..8).filter(|i| mask >> i & 1 == 1).enumerate().fold(0u64, |k, (j, i)| k | u64::from(value >> i & 1) << j);
    let bits: Vec<NodeId> = (0..cx.s.width(v))
        .map(|i| {
            let b = cx.s.bit(v, i);
            let key = cx.s.concat(&[&[b][..], &op_bits].concat());
            cx.s.truth_table(key, move |k| k & 1 == 1 && k >> 1 == want)
        })
        .collect();
    cx.s.concat(&bits)
}

/// Level B's results and the decoded flags it reads.
pub(super) struct PointerRead {
    pub(super) f_pla: NodeId,
    pub(super) f_plp: NodeId,
    pub(super) f_rts: NodeId,
    pub(super) f_rti: NodeId,
    pub(super) f_brk: NodeId,
    pub(super) f_jmp_ind: NodeId,
    /// The constant 1 (8 bits).
    pub(super) one8: NodeId,
    /// The three bytes read: a pointer (its two bytes), the pulled bytes, or a vector.
    pub(super) p: [NodeId; 3],
    /// `p[0]` and `p[1]` as an address.
    pub(super) ptr16: NodeId,
}

/// Level B: the pointer read. (zp,X)'s and (zp),Y's zero-page pointers (`addrs`: zp+X, zp, the operand word),
/// JMP's indirect pointer, the bytes a pull takes from the stack above `sp`, an interrupt's vector
/// (`int`: an interrupt taken, the NMI's vector) or BRK's, which is also every other instruction's don't-care
/// read.
fn pointer_read(cx: &mut Ctx, opts: &Mos6502Options, d: Decoded, mode: NodeId, sp: NodeId, [take_int, nmi_vector]: [NodeId; 2], [ea_zpx, ea_zp, op16]: [NodeId; 3]) -> PointerRead {
    let f_pla = d.flag(cx, Flag::Pla);
    let f_plp = d.flag(cx, Flag::Plp);
    let f_rts = d.flag(cx, Flag::Rts);
    let f_rti = d.flag(cx, Flag::Rti);
    let f_brk = d.flag(cx, Flag::Brk);
    let f_jmp_ind = d.flag(cx, Flag::JmpInd);
    let sp1 = cx.s.add_const(sp, 1);
    let one8 = cx.s.konst(8, 1);
    let pull_base = cx.s.concat(&[sp1, one8]);
    let irq_vec = cx.s.konst(16, 0xFFFE);
    let nmi_vec = cx.s.konst(16, 0xFFFA);
    let ptr = {
        // Explicit, exclusive selects, each one gate of the decoded bits and the interrupt decision.
        let izx = cx.s.eq_const_unless(mode, mode_code(AddressingMode::IndexedIndirect), take_int);
        let izy = cx.s.eq_const_unless(mode, mode_code(AddressingMode::IndirectIndexed), take_int);
        let jind = cx.s.eq_const_unless(f_jmp_ind, 1, take_int);
        let f_pull = d.flag(cx, Flag::Pull);
        let pull = cx.s.eq_const_unless(f_pull, 1, take_int);
        let f_ptr = d.flag(cx, Flag::PtrRead);
        // An interrupt's vector (NMI or IRQ); else BRK's, which is also the don't-care read of every
        // instruction without a pointer.
        let c = cx.s.concat(&[take_int, nmi_vector]);
        let nmi = cx.s.eq_const(c, 0b11);
        let irq = cx.s.eq_const(c, 0b01);
        let brk = cx.s.eq_const_unless(f_ptr, 0, take_int);
        let cases = [(izx, ea_zpx), (izy, ea_zp), (jind, op16), (pull, pull_base), (nmi, nmi_vec), (irq, irq_vec), (brk, irq_vec)];
        if opts.nes {
            // The memories a read is not in hold still, at one candidate each whose select and base stay put
            // over an instruction, an interrupt and its RTI: the RAM banks of every read but a zero-page or JMP
            // pointer's at the stack bytes from `S + 1` (a pull) or `S - 2` (anything else: where the RTI after an
            // interrupt's three pushes pulls, the same sum); the PRG ROM of every read but JMP's pointer and the
            // NMI's vector at the IRQ vector's words. An IRQ whose handler is a lone RTI, after every
            // instruction of a game that leaves the frame IRQ unacknowledged, then moves neither.
            let ind = mode_code(AddressingMode::IndexedIndirect);
            let idy = mode_code(AddressingMode::IndirectIndexed);
            let mw = cx.s.width(mode);
            let key = cx.s.concat(&[mode, f_jmp_ind, take_int, nmi_vector]);
            let mode_of = move |v: u64| v & ((1 << mw) - 1);
            let (jind_bit, int_bit, nmi_bit) = (1u64 << mw, 1u64 << (mw + 1), 1u64 << (mw + 2));
            let stack = cx.s.truth_table(key, move |v| v & int_bit != 0 || (mode_of(v) != ind && mode_of(v) != idy && v & jind_bit == 0));
            let vector = cx.s.truth_table(key, move |v| if v & int_bit != 0 { v & nmi_bit == 0 } else { v & jind_bit == 0 });
            let t = |node: NodeId, neg: bool, shift: u32| SumTerm { node, shift, neg };
            let not_pull = cx.s.not(f_pull);
            let stack_lo = cx.s.sum(8, &[t(sp, false, 0), t(not_pull, true, 0), t(not_pull, true, 1)], 1);
            let stack_base = cx.s.concat(&[stack_lo, one8]);
            let bank_cases = [(izx, ea_zpx), (izy, ea_zp), (jind, op16), (stack, stack_base)];
            let rom_cases = [(jind, op16), (nmi, nmi_vec), (vector, irq_vec)];
            nes_read_run_of(cx, &cases, Some([&bank_cases, &rom_cases]), 3, true).bytes
        } else {
            read_run_of(cx, &cases, 3, true)
        }
    };
    let (p0, p1, p2) = (ptr[0], ptr[1], ptr[2]);
    let ptr16 = cx.s.concat(&[p0, p1]);
    PointerRead { f_pla, f_plp, f_rts, f_rti, f_brk, f_jmp_ind, one8, p: [p0, p1, p2], ptr16 }
}

/// Level C: the effective address and the byte read there.
pub(super) struct DataRead {
    /// The effective address (16 bits; 0 in a mode without one), and its address in the byte banks (the NES
    /// map's compact one).
    pub(super) ea: NodeId,
    pub(super) ea_mem: NodeId,
    /// NES map: `ea` is an IO register (PPU, APU and pads, expansion area); `ea` is in $8000-$FFFF.
    pub(super) io: NodeId,
    pub(super) rom: NodeId,
    /// NES map: `ea` is an IO register the host answers a read of (the PPU's, $4015-$4017; the other IO
    /// addresses read the open bus, `ea`'s high byte), and that read's code on port `IO_READ` (4 bits,
    /// [`crate::face::nes_io_read_code`]).
    pub(super) io_asks: NodeId,
    pub(super) io_code: NodeId,
    /// NES map: the read (banks, PRG ROM words, selects).
    pub(super) nes_data: Option<NesRead>,
    /// The four banks' words at `ea`'s row.
    pub(super) dwords: [NodeId; 4],
    /// The operand: the immediate byte, A, the host's IO answer, or the byte at `ea`.
    pub(super) operand: NodeId,
}

/// NES map: where a data address lies among the IO registers: the PPU's ($2000-$3FFF), the APU's, pads' and
/// expansion area's ($4000-$5FFF), and each of $4015, $4016, $4017 (the reads the host answers there).
struct IoRegions {
    is_ppu: NodeId,
    is_apu: NodeId,
    apu_reads: Vec<NodeId>,
}

/// Level C: the effective address from the modes' cases (`ea_cases`: mode select, address), the data read
/// there, and the operand (`[m_imm, m_acc]`: the immediate and accumulator modes, which read `b1` and `a`).
fn data_read(cx: &mut Ctx, opts: &Mos6502Options, ea_cases: &[(NodeId, NodeId)], [m_imm, m_acc]: [NodeId; 2], a: NodeId, b1: NodeId) -> DataRead {
    let zero = cx.zero;
    // No default: a mode without an effective address leaves it 0 (nothing reads or writes it then).
    let ea = cx.s.one_hot(16, ea_cases);
    // NES map: RAM mirrored through $1FFF; IO registers at $2000-$3FFF and $4000-$401F; ROM from $8000.
    let (ea_mem, io, rom, regions, io_asks, io_code) = if opts.nes {
        // The IO registers: the PPU's at $2000-$3FFF, the APU's and pads' at $4000-$401F, and the cartridge's
        // expansion area up to $5FFF. The host answers a read of the PPU's and of $4015-$4017; the others read
        // the open bus (`crate::face::nes_io_read_code`).
        let hi3 = cx.s.slice(ea, 13, 3);
        let ea_mem = nes_compact(cx, ea);
        let is_ppu = cx.s.eq_const(hi3, 1);
        let is_apu = cx.s.eq_const(hi3, 2);
        // The APU's status and the pads, $4015, $4016, $4017: one equality each.
        let apu_reads: Vec<NodeId> = (0x4015..=0x4017).map(|a| cx.s.eq_const(ea, a)).collect();
        let asks = cx.s.any(&[&[is_ppu][..], &apu_reads].concat());
        // The code: ea[0..2], ea[2] on the PPU, and 8 off it.
        let code = {
            let lo2 = cx.s.slice(ea, 0, 2);
            let b2 = cx.s.bit(ea, 2);
            let b2 = cx.s.and(b2, is_ppu);
            let not_ppu = cx.s.not(is_ppu);
            cx.s.concat(&[lo2, b2, not_ppu])
        };
        (ea_mem, cx.s.or(is_ppu, is_apu), cx.s.bit(ea, 15), Some(IoRegions { is_ppu, is_apu, apu_reads }), asks, code)
    } else {
        (ea, zero, zero, None, zero, zero)
    };
    // NES map: RAM, PRG RAM and ROM read in one level (the memory modes only: the immediate and A take no
    // memory select).
    let mem_mode = opts.nes.then(|| {
        let c = cx.s.concat(&[m_imm, m_acc]);
        cx.s.eq_const(c, 0)
    });
    let nes_data = mem_mode.map(|mem_mode| nes_read_run_of(cx, &[(mem_mode, ea)], None, 1, false));
    let dwords = match &nes_data {
        Some(r) => r.banks,
        None => read_banks(cx, ea_mem, 1, false).0,
    };
    // The operand: the immediate byte, A, the host's IO answer, or the byte of the bank `ea % 4` names (one
    // select).
    let operand = {
        let mut cases = vec![(m_imm, b1), (m_acc, a)];
        if let Some(r) = &nes_data {
            cases.extend(nes_byte_cases(cx, &r.banks, r.prg, &r.ram_is, &r.rom_is, 0));
        } else {
            // Each select is one equality over the address's low bits and the mode.
            let ea_lo2 = cx.s.slice(ea, 0, 2);
            let c = cx.s.concat(&[ea_lo2, m_imm, m_acc]);
            let mut c_cases = vec![(m_imm, b1), (m_acc, a)];
            for (k, &word) in dwords.iter().enumerate() {
                let sel = cx.s.eq_const(c, k as u64);
                c_cases.push((sel, word));
            }
            cases = c_cases;
        }
        if let (Some(mem_mode), Some(IoRegions { is_ppu, is_apu, apu_reads })) = (mem_mode, &regions) {
            // An IO register (PPU or APU/IO, never both) in a memory mode: the host's answer where it has one
            // (the PPU's, $4015-$4017: exclusive selects), else the open bus (`ea`'s high byte).
            let io_data = cx.s.input(input::IO_DATA, 8);
            let asked: Vec<(NodeId, NodeId)> = [&[*is_ppu][..], apu_reads].concat().into_iter().map(|r| (r, mem_mode)).collect();
            let sel = cx.s.one_hot(1, &asked);
            // Key bits: m_imm, m_acc, is_apu, the equalities with $4015-$4017.
            let key = cx.s.concat(&[&[m_imm, m_acc, *is_apu][..], apu_reads].concat());
            let sel_open = cx.s.truth_table(key, |k| k == 0b100);
            let hi = cx.s.slice(ea, 8, 8);
            cases.push((sel, io_data));
            cases.push((sel_open, hi));
        }
        cx.s.one_hot(8, &cases)
    };
    DataRead { ea, ea_mem, io, rom, io_asks, io_code, nes_data, dwords, operand }
}

/// NES map: an instruction that reads an IO register the host answers (`io`; a read or a read-modify-write,
/// `f_rmw_mem` on memory) asks the host on port `IO_READ`, which leads the step's trace; the host injects the answer on input
/// `IO_DATA` right there and the rest of the step (its registers, writes and ports) is computed with it, in the
/// same step. Nothing that `IO_READ` carries depends on the answer.
fn io_read(cx: &mut Ctx, opts: &Mos6502Options, dec: Decoded, [exec, io]: [NodeId; 2], f_rmw_mem: NodeId) -> NodeId {
    if opts.nes {
        let read_op = cx.s.bit(dec.cw, ctl::READ_OP);
        let reads = cx.s.or(read_op, f_rmw_mem);
        let c = cx.s.concat(&[exec, io, reads]);
        cx.s.eq_const(c, 0b111)
    } else {
        cx.zero
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opcode::decode;

    /// Every opcode of the modes a pattern stands for matches it, so a gated operand is the operand wherever its
    /// mode is selected.
    #[test]
    fn opcode_patterns_cover_their_modes() {
        for ((mask, value), mode, count) in [(ZPX_OPCODES, AddressingMode::ZeroPageX, 28), (IZX_OPCODES, AddressingMode::IndexedIndirect, 16)] {
            let of_mode: Vec<u8> = (0..=255u8).filter(|&c| decode(c).mode == mode).collect();
            assert_eq!(of_mode.len(), count, "{mode:?}");
            for c in of_mode {
                assert_eq!(c & mask, value, "opcode ${c:02X} ({mode:?}) outside its pattern");
            }
        }
    }
}
