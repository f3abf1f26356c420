//! The display: `DXYN` XORs one sprite row per micro-step into `SCREEN` row (VY mod 32) + BUSY, clipped at the
//! bottom and right edges, and reports a collision; `CLS` clears `SCREEN` in one step (`mem_clear`).

use super::decode::Decode;
use super::fetch::Fetch;
use super::micro::Micro;
use super::state::State;
use crate::face::mem;
use isa_api::{CircuitBuilder, NodeId, ShiftKind};

/// What the screen reports.
pub struct Screen {
    /// This step's sprite row turned a lit pixel off, 1 bit.
    pub hit: NodeId,
}

/// Draw this step's sprite row; clear the screen on `CLS`.
pub fn screen(s: &mut CircuitBuilder, st: &State, f: &Fetch, d: &Decode, m: &Micro) -> Screen {
    let row_sum = {
        let vy5 = s.slice(f.vy, 0, 5);
        let a = s.zext(vy5, 6);
        s.add(a, st.busy)
    };
    let row_ok = {
        let b5 = s.bit(row_sum, 5);
        s.not(b5)
    };
    let row = s.slice(row_sum, 0, 5);
    let cur = s.load(mem::SCREEN, 64, row);
    let mask = {
        let rev: Vec<NodeId> = (0..8).rev().map(|k| s.bit(f.mb, k)).collect();
        let r8 = s.concat(&rev);
        let r64 = s.zext(r8, 64);
        let x0 = s.slice(f.vx, 0, 6);
        s.shift(ShiftKind::Shl, r64, x0)
    };
    let drawn = s.xor(cur, mask);
    let nn0 = s.not(d.n0);
    let draws = s.all(&[m.draw_runs, row_ok, nn0]);
    let hit = {
        let a = s.and(cur, mask);
        let z = s.eq_const(a, 0);
        let nz = s.not(z);
        s.and(draws, nz)
    };
    let scr_en = d.running(s, draws);
    s.mem_write(mem::SCREEN, row, drawn, scr_en);
    // CLS: one step, whose clear token zeroes the display's Gated DeltaNet state (decay 0).
    let cls_g = d.running(s, d.cls);
    s.mem_clear(mem::SCREEN, cls_g);
    Screen { hit }
}
