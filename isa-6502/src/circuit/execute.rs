//! The execute section: the read-modify-write and ALU stages ([`super::alu`]), the registers' instruction cases,
//! the flags' cases (each bit of P one select over its sources, so no intermediate "new P" is formed), the
//! program counter's candidates and the cycle counts ([`super::pc`]).

use super::Ctx;
use super::alu::{AluStage, RmwStage, alu_stage, rmw_stage};
use super::decode::{CarrySrc, Decoded, Flag, Nz, OverflowSrc, ctl};
use super::fetch::Fetch;
use super::operands::Operands;
use super::pc::{Cycles, PcTargets, cycles, pc_targets};
use super::state::{CpuState6502, State};
use crate::face::Mos6502Options;
use isa_api::circuit::NodeId;

/// The execute section's results.
pub(super) struct Execute {
    /// The read-modify-write stage.
    pub(super) rmw: RmwStage,
    /// The ALU stage.
    pub(super) alu: AluStage,
    /// The instruction cases of A, X, Y and S.
    pub(super) regs: RegisterCases,
    /// The cases of P's bits.
    pub(super) flags: FlagCases,
    /// Where PC can go.
    pub(super) pc: PcTargets,
    /// The cycle counts.
    pub(super) cycles: Cycles,
}

/// The execute section on the operand of `o` (every case gated by `o.exec`, an instruction that completes).
pub(super) fn execute(cx: &mut Ctx, opts: &Mos6502Options, st: &State, f: &Fetch, o: &Operands) -> Execute {
    let CpuState6502 { a, x, y, flag_c, .. } = st.cpu;
    let (dec, exec, operand, m) = (f.dec, o.exec, o.data.operand, f.modes);
    let [p0, p1, p2] = o.ptr.p;
    let rmw = rmw_stage(cx, dec, operand, flag_c);
    let alu = alu_stage(cx, dec, [a, x, y], operand, &rmw.variants, rmw.value, rmw.alu_cin, flag_c);
    let regs =
        register_cases(cx, dec, exec, &st.cpu, &alu.cases, [operand, rmw.value, p0, alu.sum], [alu.is_axs, o.ptr.f_pla]);
    let (brk_plp_rti, values) = ([o.ptr.f_brk, o.ptr.f_plp, o.ptr.f_rti], [operand, rmw.value, rmw.shift_c, p0]);
    let flags = flag_cases(cx, dec, exec, &alu, &regs.transfers, values, brk_plp_rti);
    let pc = pc_targets(cx, dec, &st.cpu, f.b[1], o.ptr.ptr16, [p1, p2]);
    let crossings = [(m.abx, o.direct.cross_abx), (m.aby, o.direct.cross_aby), (m.izy, o.cross_izy)];
    let cycles = cycles(cx, opts, dec, exec, crossings, (pc.taken, pc.br_cross), o.f_rmw_mem, o.data.io_code);
    Execute { rmw, alu, regs, flags, pc, cycles }
}

/// The instruction cases of A, X and Y (each select `exec AND` a decoded flag), S's moved value and TXS's flag,
/// and the transfers and steps whose values set N and Z.
#[derive(Clone)]
pub(super) struct RegisterCases {
    pub(super) a_cases: Vec<(NodeId, NodeId)>,
    pub(super) x_cases: Vec<(NodeId, NodeId)>,
    pub(super) y_cases: Vec<(NodeId, NodeId)>,
    /// S plus the instruction's stack delta (pushes and pulls).
    pub(super) s_moved: NodeId,
    pub(super) f_txs: NodeId,
    /// (decoded flag, value) of TAX, TSX, INX, DEX, TAY, INY, DEY, TXA, TYA, PLA.
    pub(super) transfers: [(NodeId, NodeId); 10],
}

/// The registers' instruction cases: loads, transfers, increments, the ALU's results (`alu_cases`, ungated),
/// the read-modify-write on A, PLA (`p0`), AXS (`sum`).
fn register_cases(cx: &mut Ctx, d: Decoded, exec: NodeId, st: &CpuState6502, alu_cases: &[(NodeId, NodeId)], [operand, rmw_val, p0, sum]: [NodeId; 4], [is_axs, f_pla]: [NodeId; 2]) -> RegisterCases {
    let CpuState6502 { a, x, y, sp, .. } = *st;
    let when = |cx: &mut Ctx, f: NodeId| cx.s.and(exec, f);
    let f_load_a = d.flag(cx, Flag::LoadA);
    let f_load_x = d.flag(cx, Flag::LoadX);
    let f_load_y = d.flag(cx, Flag::LoadY);
    let f_rmw_acc = d.flag(cx, Flag::RmwAcc);
    let f_txa = d.flag(cx, Flag::Txa);
    let f_tya = d.flag(cx, Flag::Tya);
    let f_tax = d.flag(cx, Flag::Tax);
    let f_tay = d.flag(cx, Flag::Tay);
    let f_tsx = d.flag(cx, Flag::Tsx);
    let f_txs = d.flag(cx, Flag::Txs);
    let f_inx = d.flag(cx, Flag::Inx);
    let f_iny = d.flag(cx, Flag::Iny);
    let f_dex = d.flag(cx, Flag::Dex);
    let f_dey = d.flag(cx, Flag::Dey);
    let x_inc = cx.s.add_const(x, 1);
    let x_dec = cx.s.add_const(x, 0xFF);
    let y_inc = cx.s.add_const(y, 1);
    let y_dec = cx.s.add_const(y, 0xFF);
    let mut a_cases: Vec<(NodeId, NodeId)> = alu_cases.iter().map(|&(s, v)| (cx.s.and(exec, s), v)).collect();
    for (f, v) in [(f_load_a, operand), (f_rmw_acc, rmw_val), (f_txa, x), (f_tya, y), (f_pla, p0)] {
        a_cases.push((when(cx, f), v));
    }
    let mut x_cases = Vec::new();
    for (f, v) in [(f_load_x, operand), (f_tax, a), (f_tsx, sp), (f_inx, x_inc), (f_dex, x_dec), (is_axs, sum)] {
        x_cases.push((when(cx, f), v));
    }
    let mut y_cases = Vec::new();
    for (f, v) in [(f_load_y, operand), (f_tay, a), (f_iny, y_inc), (f_dey, y_dec)] {
        y_cases.push((when(cx, f), v));
    }
    let s_delta = d.field(cx, ctl::S_DELTA, 8);
    let s_moved = cx.s.add(sp, s_delta);
    let transfers = [(f_tax, a), (f_tsx, sp), (f_inx, x_inc), (f_dex, x_dec), (f_tay, a), (f_iny, y_inc), (f_dey, y_dec), (f_txa, x), (f_tya, y), (f_pla, p0)];
    RegisterCases { a_cases, x_cases, y_cases, s_moved, f_txs, transfers }
}

/// Each bit of P's cases (C Z I D B 1 V N), each one select of `exec AND` a decoded source, and the decoded CLI
/// and SEI (the interrupt poll's I).
#[derive(Clone)]
pub(super) struct FlagCases {
    pub(super) p_bit_cases: Vec<Vec<(NodeId, NodeId)>>,
    pub(super) f_cli: NodeId,
    pub(super) f_sei: NodeId,
}

/// The flags: each bit of P is one select over its sources (N and Z straight from every value an instruction may
/// set them by: the adder, the operand, the read-modify-write value, the ALU's results, `transfers`; BIT's; the
/// carries, overflows, CLI/SEI/CLD/SED, and P pulled by PLP and RTI as `p0`).
fn flag_cases(cx: &mut Ctx, d: Decoded, exec: NodeId, alu: &AluStage, transfers: &[(NodeId, NodeId)], [operand, rmw_val, shift_c, p0]: [NodeId; 4], [f_brk, f_plp, f_rti]: [NodeId; 3]) -> FlagCases {
    let (sum, sum_c, sum_v, a_and_op, arr) = (alu.sum, alu.sum_c, alu.sum_v, alu.a_and_op, alu.arr);
    let (one, zero) = (cx.one, cx.zero);
    let when = |cx: &mut Ctx, f: NodeId| cx.s.and(exec, f);
    let nz_src = d.field(cx, ctl::NZ, 4);
    let nz_is = cx.s.one_hot_decode(nz_src, 9);
    let mut nz_sources: Vec<(NodeId, NodeId)> =
        vec![(nz_is[Nz::Adder as usize], sum), (nz_is[Nz::Operand as usize], operand), (nz_is[Nz::Rmw as usize], rmw_val)];
    // AluA: the ALU op's own value; NewX/NewY/NewA: the transfer's or step's source.
    nz_sources.extend(alu.cases.iter().map(|&(s, v)| (cx.s.and(exec, s), v)));
    nz_sources.extend_from_slice(transfers);
    let (mut z_cases, mut n_cases) = (Vec::new(), Vec::new());
    for (sel, v) in nz_sources {
        let e = when(cx, sel);
        let z = cx.s.eq_const(v, 0);
        let n = cx.s.bit(v, 7);
        z_cases.push((e, z));
        n_cases.push((e, n));
    }
    // BIT: Z from A AND the operand, N from the operand's bit 7.
    let bit_sel = when(cx, nz_is[Nz::Bit as usize]);
    let bit_z = cx.s.eq_const(a_and_op, 0);
    let o_b7 = cx.s.bit(operand, 7);
    z_cases.push((bit_sel, bit_z));
    n_cases.push((bit_sel, o_b7));
    let c_src = d.field(cx, ctl::C, 3);
    let c_is = cx.s.one_hot_decode(c_src, 8);
    let a_and_b0 = cx.s.bit(a_and_op, 0);
    let (arr_b6, arr_b5) = (cx.s.bit(arr, 6), cx.s.bit(arr, 5));
    let and_b7 = cx.s.bit(a_and_op, 7);
    let mut c_cases = Vec::new();
    for (k, v) in [
        (CarrySrc::Shift, shift_c),
        (CarrySrc::Adder, sum_c),
        (CarrySrc::Clear, zero),
        (CarrySrc::Set, one),
        (CarrySrc::Bit7, and_b7),
        (CarrySrc::AndBit0, a_and_b0),
        (CarrySrc::Bit6, arr_b6),
    ] {
        let e = when(cx, c_is[k as usize]);
        c_cases.push((e, v));
    }
    let v_src = d.field(cx, ctl::V, 3);
    let v_is = cx.s.one_hot_decode(v_src, 5);
    let o_b6 = cx.s.bit(operand, 6);
    let arr_v = cx.s.xor(arr_b6, arr_b5);
    let mut v_cases = Vec::new();
    for (k, v) in [(OverflowSrc::Adder, sum_v), (OverflowSrc::Operand6, o_b6), (OverflowSrc::Clear, zero), (OverflowSrc::Arr, arr_v)] {
        let e = when(cx, v_is[k as usize]);
        v_cases.push((e, v));
    }
    let f_cli = d.flag(cx, Flag::Cli);
    let f_sei = d.flag(cx, Flag::Sei);
    let f_cld = d.flag(cx, Flag::Cld);
    let f_sed = d.flag(cx, Flag::Sed);
    let i_set = cx.s.or(f_sei, f_brk);
    let i_cases = vec![(when(cx, f_cli), zero), (when(cx, i_set), one)];
    let d_cases = vec![(when(cx, f_cld), zero), (when(cx, f_sed), one)];
    // PLP and RTI: P from the stack, bits 4 and 5 as stored (B = 0, 1).
    let pulls_p = {
        let f = cx.s.or(f_plp, f_rti);
        when(cx, f)
    };
    let mut p_bit_cases: Vec<Vec<(NodeId, NodeId)>> = vec![c_cases, z_cases, i_cases, d_cases, vec![], vec![], v_cases, n_cases];
    for (b, cases) in p_bit_cases.iter_mut().enumerate() {
        if b != 4 && b != 5 {
            let pulled = cx.s.bit(p0, b as u32);
            cases.push((pulls_p, pulled));
        }
    }
    FlagCases { p_bit_cases, f_cli, f_sei }
}
