//! The V registers' write: VX (or V[BUSY] for `FX65`) gets the value of its instruction; rows 0..14 go to the
//! memory `V` here, row 15 is the `VF` register (written by [`super::commit::vf`]).

use super::alu::Alu;
use super::decode::Decode;
use super::fetch::Fetch;
use super::keys::Keys;
use super::micro::Micro;
use super::state::State;
use crate::face::mem;
use isa_api::{CircuitBuilder, NodeId};

/// The V write of this step.
pub struct VWrite {
    /// The value written, 8 bits.
    pub data: NodeId,
    /// The instruction writes a V register (before the running gate).
    pub any: NodeId,
    /// The register written is V15 (VF).
    pub to15: NodeId,
}

/// Write VX (or V[BUSY] for `FX65`) to the memory `V` unless it is V15.
pub fn vregs(s: &mut CircuitBuilder, st: &State, f: &Fetch, d: &Decode, m: &Micro, alu: &Alu, k: &Keys) -> VWrite {
    let added = s.add(f.vx, f.lo);
    let lfsr_lo = s.slice(st.lfsr, 0, 8);
    let rnd_v = s.and(lfsr_lo, f.lo);
    let key_ok = s.not(m.no_key);
    let f0a_set = s.and(d.f0a, key_ok);
    let any_alu = s.any(&d.alu);
    let vx_val = s.and_or(8, &[(d.ld, f.lo), (d.addk, added), (any_alu, alu.val), (d.rnd, rnd_v), (d.f07, st.dt), (f0a_set, k.first_key)]);
    let writes_vx = s.any(&[d.ld, d.addk, any_alu, d.rnd, d.f07, f0a_set]);
    let v_addr = s.select(d.f65, f.busy4, f.x);
    let data = s.select(d.f65, f.mb, vx_val);
    let any = s.or(writes_vx, d.f65);
    let to15 = s.eq_const(v_addr, 15);
    let v_mem = {
        let n15 = s.not(to15);
        let a = s.and(any, n15);
        d.running(s, a)
    };
    s.mem_write(mem::V, v_addr, data, v_mem);
    VWrite { data, any, to15 }
}
