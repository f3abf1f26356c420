//! The next PC: PC stays while an instruction is micro-coded, waits or faults (and after a fault); otherwise a
//! skip adds 4, a jump or call goes to NNN, `00EE` to the return address, `BNNN` to NNN + V0, the rest add 2.

use super::decode::Decode;
use super::fetch::Fetch;
use super::keys::Keys;
use super::micro::Micro;
use super::stack::Stack;
use super::state::State;
use crate::face::reg;
use isa_api::CircuitBuilder;

/// Commit the next PC.
pub fn pc(s: &mut CircuitBuilder, st: &State, f: &Fetch, d: &Decode, m: &Micro, k: &Keys, stack: &Stack) {
    let (pc, vx) = (st.pc, f.vx);
    let four12 = s.konst(12, 4);
    let pc4 = s.add(pc, four12);
    let skip = {
        let eqk = s.eq(vx, f.lo);
        let neqk = s.not(eqk);
        let eqv = s.eq(vx, f.vy);
        let neqv = s.not(eqv);
        let nkey = s.not(k.key_bit);
        let c = [s.and(d.se, eqk), s.and(d.sne, neqk), s.and(d.sexy, eqv), s.and(d.snexy, neqv), s.and(d.skp, k.key_bit), s.and(d.sknp, nkey)];
        s.any(&c)
    };
    let v0_12 = s.zext(f.v0, 12);
    let jv = s.add(f.nnn, v0_12);
    let stay = s.any(&[m.hold, m.wait, d.illegal, st.stop]);
    let nstay = s.not(stay);
    let jumps = s.or(d.jp, d.call);
    let skip_g = s.and(skip, nstay);
    let jump_g = s.and(jumps, nstay);
    let ret_g = s.and(d.ret, nstay);
    let jpv_g = s.and(d.jpv0, nstay);
    let plain = {
        let other = s.any(&[skip, jumps, d.ret, d.jpv0]);
        let no = s.not(other);
        s.and(no, nstay)
    };
    let pc_next = s.and_or(12, &[(stay, pc), (skip_g, pc4), (jump_g, f.nnn), (ret_g, stack.ret_to), (jpv_g, jv), (plain, stack.pc2)]);
    s.set_next(reg::PC, pc_next);
}
