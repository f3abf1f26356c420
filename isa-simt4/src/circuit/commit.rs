//! Commit of the lanes' registers: each lane's one write a step, to `rd` (ALU ops and loads in active lanes, the
//! atomic's `rd` in lane `BUSY`, a division's last step) or to `r31` (counter ops, only where the word changes).

use super::decode::{Decode, Operands};
use super::fault::Faults;
use super::lane::Lane;
use crate::face::mem;
use isa_api::CircuitBuilder;

/// Each lane's register write: its data at row `row_w`, enabled per opcode class.
pub(super) fn lane_writes(s: &mut CircuitBuilder, d: &Decode, o: &Operands, faults: &Faults, ls: &[Lane]) {
    for (l, x) in ls.iter().enumerate() {
        let (data, changed) = (x.data, x.changed);
        let e_alu = s.and(d.alu, x.act);
        let e_ld = s.and(faults.ld_ok, x.act);
        let e_atom = s.all(&[d.atom, x.bsel, x.act, x.inb]);
        let e_ctr = s.and(d.ctr, changed);
        let e_div = s.all(&[d.div, d.step.last, x.act]);
        let en = s.any(&[e_alu, e_ld, e_atom, e_ctr, e_div]);
        s.mem_write(mem::lane(l as u32), o.row_w, data, en);
    }
}
