//! The fetch section (level A): the opcode and two operand bytes at PC, decoded by one lookup into the control
//! word and flags ([`super::decode`]), and the addressing mode's one-hot selects.

use super::Ctx;
use super::banks::read_run;
use super::decode::{Decoded, Flag, control_tables, ctl};
use super::nes_read::nes_read_run_of;
use super::state::State;
use crate::face::Mos6502Options;
use isa_api::circuit::NodeId;

/// One select per addressing mode that reads an operand or an address (none during a DMA step).
#[derive(Clone, Copy)]
pub(super) struct Modes {
    /// Accumulator.
    pub(super) acc: NodeId,
    /// Immediate.
    pub(super) imm: NodeId,
    /// Zero page, zero page,X and zero page,Y.
    pub(super) zp: NodeId,
    pub(super) zpx: NodeId,
    pub(super) zpy: NodeId,
    /// Absolute, absolute,X and absolute,Y.
    pub(super) abs: NodeId,
    pub(super) abx: NodeId,
    pub(super) aby: NodeId,
    /// (zp,X) and (zp),Y.
    pub(super) izx: NodeId,
    pub(super) izy: NodeId,
}

/// Level A: the opcode and two operand bytes at PC, decoded.
pub(super) struct Fetch {
    /// The opcode and the two bytes after it.
    pub(super) b: [NodeId; 3],
    /// The control word and flags of the opcode.
    pub(super) dec: Decoded,
    /// The addressing mode (`mode_code`), and one select per mode (none during a DMA step, whose address is
    /// the DMA's).
    pub(super) mode: NodeId,
    pub(super) modes: Modes,
    /// The step would run an unsupported (JAM or unstable) opcode: it faults.
    pub(super) fault: NodeId,
    /// The step runs a supported instruction.
    pub(super) exec: NodeId,
}

/// The fetch section: the three bytes at PC (`st.cpu.pc`), their decode, and whether the step runs them
/// (`st.kind.instr`) or faults.
pub(super) fn fetch(cx: &mut Ctx, opts: &Mos6502Options, st: &State) -> Fetch {
    let (pc, dma, instr) = (st.cpu.pc, st.kind.dma, st.kind.instr);
    let one = cx.one;
    let fetched = if opts.nes { nes_read_run_of(cx, &[(one, pc)], None, 3, false).bytes } else { read_run(cx, pc, 3, false) };
    let (b0, b1, b2) = (fetched[0], fetched[1], fetched[2]);
    let (fields_table, flags_table) = control_tables();
    let cw = cx.s.lookup(ctl::WIDTH, fields_table, b0);
    let fw = cx.s.lookup(Flag::CondValue as u32 + 1, flags_table, b0);
    let d = Decoded { cw, fw };
    let mode = d.field(cx, ctl::MODE, 4);
    // Addressing modes, none during a DMA step (whose address is the DMA's) or an interrupt step (whose level C
    // then reads where the RTI after it does, and not where the interrupted instruction will).
    let veto = cx.s.concat(&[dma, st.kind.take_int]);
    let m: Vec<NodeId> = (0..13).map(|v| cx.s.eq_const_unless(mode, v, veto)).collect();
    let modes = Modes {
        acc: m[1],
        imm: m[2],
        zp: m[3],
        zpx: m[4],
        zpy: m[5],
        abs: m[6],
        abx: m[7],
        aby: m[8],
        izx: m[10],
        izy: m[11],
    };
    let f_unsupported = d.flag(cx, Flag::Unsupported);
    let fault = cx.s.and(instr, f_unsupported);
    let exec = {
        let ok = cx.s.not(f_unsupported);
        cx.s.and(instr, ok)
    };
    Fetch { b: [b0, b1, b2], dec: d, mode, modes, fault, exec }
}
