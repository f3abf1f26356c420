//! Micro-steps and waits: whether a micro-coded instruction (`DXYN` one row per step, `FX33` one digit,
//! `FX55`/`FX65` one register) holds PC for one more step, whether a host tick came before this step, and the
//! steps that wait (`DXYN` for the display, `FX0A` for a key).

use super::decode::Decode;
use super::fetch::Fetch;
use super::state::State;
use isa_api::{CircuitBuilder, NodeId};

/// The micro-step and wait signals, each 1 bit.
pub struct Micro {
    /// BUSY = X: the last micro-step of `FX55`, `FX65`.
    pub fx_last: NodeId,
    /// A host tick came before this step (the input moved since the last step's).
    pub new_tick: NodeId,
    /// A `DXYN` that runs this step (it does not wait for the display).
    pub draw_runs: NodeId,
    /// A micro-coded instruction goes on next step (gated: a running step).
    pub hold: NodeId,
    /// No key is held.
    pub no_key: NodeId,
    /// The step waits: `FX0A` with no key held, or `DXYN` waiting for the display.
    pub wait: NodeId,
}

/// The micro-step and wait signals.
pub fn micro(s: &mut CircuitBuilder, st: &State, f: &Fetch, d: &Decode) -> Micro {
    let busy = st.busy;
    let busy_is = |s: &mut CircuitBuilder, v: u64| s.eq_const(busy, v);
    let drw_last = {
        let nm1 = {
            let one4 = s.konst(4, 1);
            s.sub(f.n, one4)
        };
        let nm1z = s.zext(nm1, 6);
        let at = s.eq(busy, nm1z);
        s.or(at, d.n0)
    };
    let f33_last = busy_is(s, 2);
    let x6 = s.zext(f.x, 6);
    let fx_last = s.eq(busy, x6);
    // A host tick came before this step (the input moved since the last step's).
    let new_tick = {
        let e = s.eq(st.tick, st.last);
        s.not(e)
    };
    // DXYN waits for the display: its first micro-step runs only in a step a tick came before.
    let draw_wait = {
        let nt = s.not(new_tick);
        s.all(&[d.drw, f.busy0, nt])
    };
    let draw_runs = {
        let nw = s.not(draw_wait);
        s.and(d.drw, nw)
    };
    let more = {
        let c2 = s.not(drw_last);
        let c3 = s.not(f33_last);
        let c4 = s.not(fx_last);
        let f5565 = s.or(d.f55, d.f65);
        let b2 = s.and(draw_runs, c2);
        let c = s.and(d.f33, c3);
        let dd = s.and(f5565, c4);
        s.any(&[b2, c, dd])
    };
    let hold = d.running(s, more);
    let no_key = s.eq_const(st.keys, 0);
    let wait = {
        let keyless = s.and(d.f0a, no_key);
        s.or(keyless, draw_wait)
    };
    Micro { fx_last, new_tick, draw_runs, hold, no_key, wait }
}
