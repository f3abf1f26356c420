//! RAM writes: `FX33` writes VX's decimal digit BUSY, `FX55` writes V[BUSY], both at I + BUSY.

use super::decode::Decode;
use super::fetch::Fetch;
use super::state::State;
use crate::face::mem;
use isa_api::CircuitBuilder;

/// Write this step's byte of `FX33` or `FX55` to RAM.
pub fn ram(s: &mut CircuitBuilder, st: &State, f: &Fetch, d: &Decode) {
    let busy_is = |s: &mut CircuitBuilder, v: u64| s.eq_const(st.busy, v);
    let digit = {
        let h = s.lookup(8, (0..256u64).map(|v| v / 100).collect(), f.vx);
        let te_ = s.lookup(8, (0..256u64).map(|v| v / 10 % 10).collect(), f.vx);
        let o = s.lookup(8, (0..256u64).map(|v| v % 10).collect(), f.vx);
        let b0 = busy_is(s, 0);
        let b1 = busy_is(s, 1);
        let b2 = busy_is(s, 2);
        s.and_or(8, &[(b0, h), (b1, te_), (b2, o)])
    };
    let ram_data = s.select(d.f33, digit, f.vb);
    let ram_en = {
        let a = s.or(d.f33, d.f55);
        d.running(s, a)
    };
    s.mem_write(mem::RAM, f.i_b, ram_data, ram_en);
}
