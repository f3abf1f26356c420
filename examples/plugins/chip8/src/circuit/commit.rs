//! The next values of the other registers, each gated by a running step: SP (call, return), I (`ANNN`, `FX1E`,
//! `FX29`, the end of `FX55`/`FX65`), the clock (`LAST`, the timers, the beeper), `BUSY` and the `LFSR`, VF, and
//! `STOP` with the fault port.

use super::alu::Alu;
use super::decode::Decode;
use super::fetch::Fetch;
use super::keys::Keys;
use super::micro::Micro;
use super::screen::Screen;
use super::stack::Stack;
use super::state::State;
use super::vregs::VWrite;
use crate::face::{port, reg};
use isa_api::{CircuitBuilder, NodeId, ShiftKind};

/// SP: + 1 on `2NNN`, - 1 on `00EE`.
pub fn sp(s: &mut CircuitBuilder, st: &State, d: &Decode, stack: &Stack) {
    let sp_p1 = s.add(st.sp, stack.one4);
    let call_g = d.running(s, d.call);
    let ret_s = d.running(s, d.ret);
    let sp_keep = {
        let c = s.or(call_g, ret_s);
        s.not(c)
    };
    let sp_next = s.and_or(4, &[(call_g, sp_p1), (ret_s, stack.sp_m1), (sp_keep, st.sp)]);
    s.set_next(reg::SP, sp_next);
}

/// I: NNN (`ANNN`), I + VX (`FX1E`), VX's font digit (`FX29`), I + X + 1 after the last byte of `FX55`/`FX65`.
pub fn i(s: &mut CircuitBuilder, st: &State, f: &Fetch, d: &Decode, m: &Micro, k: &Keys) {
    let i = st.i;
    let vx12 = s.zext(f.vx, 12);
    let i_add = s.add(i, vx12);
    let font = s.lookup(12, (0..16u64).map(|v| v * 5).collect(), k.vx4);
    let x12 = s.zext(f.x, 12);
    let i_x1 = {
        let a = s.add(i, x12);
        s.add(a, f.one12)
    };
    let fx_done = {
        let f5565 = s.or(d.f55, d.f65);
        s.and(f5565, m.fx_last)
    };
    let ldi_g = d.running(s, d.ldi);
    let f1e_g = d.running(s, d.f1e);
    let f29_g = d.running(s, d.f29);
    let fx_g = d.running(s, fx_done);
    let i_keep = {
        let c = s.any(&[ldi_g, f1e_g, f29_g, fx_g]);
        s.not(c)
    };
    let i_next = s.and_or(12, &[(ldi_g, f.nnn), (f1e_g, i_add), (f29_g, font), (fx_g, i_x1), (i_keep, i)]);
    s.set_next(reg::I, i_next);
}

/// The clock: `LAST` takes the tick count; DT and ST take VX (`FX15`, `FX18`) or count down at a new tick; the
/// beeper follows ST.
pub fn clock(s: &mut CircuitBuilder, st: &State, f: &Fetch, d: &Decode, m: &Micro) {
    s.set_next(reg::LAST, st.tick);
    let timer = |s: &mut CircuitBuilder, t: NodeId, set: NodeId| {
        let z = s.eq_const(t, 0);
        let one8 = s.konst(8, 1);
        let dec = s.sub(t, one8);
        let nz = s.not(z);
        let dec_ok = s.and(m.new_tick, nz);
        let set_g = d.running(s, set);
        let nset = s.not(set_g);
        let dd = s.and(dec_ok, nset);
        let keep = {
            let c = s.or(dd, set_g);
            s.not(c)
        };
        s.and_or(8, &[(set_g, f.vx), (dd, dec), (keep, t)])
    };
    let dt_next = timer(s, st.dt, d.f15);
    let st_next = timer(s, st.st, d.f18);
    s.set_next(reg::DT, dt_next);
    s.set_next(reg::ST, st_next);
    let beep_on = s.ne_const(st_next, 0);
    let was_on = s.ne_const(st.st, 0);
    let beep_changes = s.xor(beep_on, was_on);
    s.output(port::BEEP, beep_on, beep_changes);
}

/// `BUSY`: + 1 while an instruction holds, else 0; the `LFSR` steps once per instruction (each step that is not
/// inside a micro-coded one, or a fault).
pub fn busy_and_lfsr(s: &mut CircuitBuilder, st: &State, d: &Decode, m: &Micro) {
    let one6 = s.konst(6, 1);
    let busy_p1 = s.add(st.busy, one6);
    let zero6 = s.konst(6, 0);
    let busy_next = s.select(m.hold, busy_p1, zero6);
    s.set_next(reg::BUSY, busy_next);

    let lfsr = st.lfsr;
    let lfsr_step = {
        let a = s.shift_const(ShiftKind::Shr, lfsr, 1);
        let b0 = s.bit(lfsr, 0);
        let taps = s.konst(16, 0xB400);
        let z16 = s.konst(16, 0);
        let t16 = s.select(b0, taps, z16);
        s.xor(a, t16)
    };
    let lfsr_moves = {
        let c = s.any(&[m.hold, d.illegal, st.stop]);
        s.not(c)
    };
    let lfsr_next = s.select(lfsr_moves, lfsr_step, lfsr);
    s.set_next(reg::LFSR, lfsr_next);
}

/// VF: a flag op's flag; DXYN's collision (OR over its rows); a VX write to V15; FX65's byte for V15.
#[allow(clippy::too_many_arguments)]
pub fn vf(
    s: &mut CircuitBuilder, st: &State, f: &Fetch, d: &Decode, m: &Micro, alu: &Alu, v: &VWrite, screen: &Screen,
) {
    let to15 = s.and(v.any, v.to15);
    let to15_plain = {
        let nf = s.not(alu.flag_op);
        s.and(to15, nf)
    };
    let flag_g = d.running(s, alu.flag_op);
    let to15_g = d.running(s, to15_plain);
    let drw_g = d.running(s, m.draw_runs);
    let ndrw0 = s.not(f.busy0);
    let drw_first = s.and(drw_g, f.busy0);
    let drw_more = s.and(drw_g, ndrw0);
    let hit8 = s.zext(screen.hit, 8);
    let vf_or = s.or(st.vf, hit8);
    let vf_keep = {
        let c = s.any(&[flag_g, to15_g, drw_g]);
        s.not(c)
    };
    let vf_next = s.and_or(8, &[(flag_g, alu.flag), (to15_g, v.data), (drw_first, hit8), (drw_more, vf_or), (vf_keep, st.vf)]);
    s.set_next(reg::VF, vf_next);
}

/// A fault: the opcode on `FAULT`, and the next step halts.
pub fn fault(s: &mut CircuitBuilder, st: &State, f: &Fetch, d: &Decode) {
    s.output(port::FAULT, f.op, d.illegal);
    let stop_next = s.or(st.stop, d.illegal);
    s.set_next(reg::STOP, stop_next);
    s.halt(st.stop);
}
