//! The keypad: whether the key VX names is held (`EX9E`, `EXA1`) and the lowest key held (`FX0A`).

use super::fetch::Fetch;
use super::state::State;
use isa_api::{CircuitBuilder, NodeId, ShiftKind};

/// What the instructions read from the keys.
pub struct Keys {
    /// VX's low 4 bits: a key, a font digit.
    pub vx4: NodeId,
    /// The key VX is held, 1 bit.
    pub key_bit: NodeId,
    /// The lowest key held, 8 bits (0 when none).
    pub first_key: NodeId,
}

/// Read the keys.
pub fn keys(s: &mut CircuitBuilder, st: &State, f: &Fetch) -> Keys {
    let keys = st.keys;
    let vx4 = s.slice(f.vx, 0, 4);
    let key_bit = {
        let k = s.shift(ShiftKind::Shr, keys, vx4);
        s.bit(k, 0)
    };
    let first_key = {
        let cases: Vec<(NodeId, NodeId)> = (0..16u32)
            .map(|k| {
                let bk = s.bit(keys, k);
                let sel = if k == 0 {
                    bk
                } else {
                    let low = s.slice(keys, 0, k);
                    let none = s.eq_const(low, 0);
                    s.and(bk, none)
                };
                (sel, s.konst(8, k as u64))
            })
            .collect();
        s.and_or(8, &cases)
    };
    Keys { vx4, key_bit, first_key }
}
