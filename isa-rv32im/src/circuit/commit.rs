//! Commit: the step's outcome. The next pc (sequential, a jump's target, or held) and `BUSY` (the micro-step,
//! 0 when the instruction retires, [`BUSY_STOPPING`] at a stop); the RAM write (per lane, or the
//! read-modify-write word), the register-file write, the ports (`OUT`, `IN_REQ`, `EXIT`, `FAULT`), and the halt
//! of a stopping machine.

use super::control::Control;
use super::decode::Decode;
use super::divider::Divider;
use super::ecall::Ecall;
use super::faults::Faults;
use super::fetch::Fetch;
use super::load_store::{DataPlan, LoadStore};
use super::pc_unit::PcUnit;
use super::reg_write::RegWrite;
use crate::face::{BUSY_BITS, BUSY_STOPPING, mem, port, reg};
use isa_api::{CircuitBuilder, NodeId};

/// What [`next_state`] hands [`commit`]: the next values of `PC` and `BUSY`.
#[derive(Clone)]
pub(super) struct Next {
    /// The next `PC`.
    pub(super) pc_next: NodeId,
    /// The next `BUSY`.
    pub(super) busy_next: NodeId,
}

/// Next pc and BUSY.
#[allow(clippy::too_many_arguments)]
pub(super) fn next_state(
    s: &mut CircuitBuilder,
    fetch: &Fetch,
    decode: &Decode,
    pc_unit: &PcUnit,
    divider: &Divider,
    ecall: &Ecall,
    load_store: &LoadStore,
    control: &Control,
    faults: &Faults,
) -> Next {
    let Fetch { pc, .. } = fetch.clone();
    let Decode { illegal, is_jalr, .. } = decode.clone();
    let PcUnit { pc_last, pc_seq, .. } = pc_unit.clone();
    let Divider { d_hold, div_busy_next, .. } = divider.clone();
    let Ecall { sys_exit, wr_cont, wr_init, .. } = ecall.clone();
    let LoadStore { ls_hold, .. } = load_store.clone();
    let Control { jt_ok, jumps, pc_jump, rel_ok, t_mis, .. } = control.clone();
    let Faults { holds, eff_conds, stop_conds, .. } = faults.clone();
    // pc stays during multi-step instructions and at every stop; split by `jumps` so that the range checks of
    // both kinds of target run in parallel with the branch comparison.
    let stay_j = {
        let jalr_bad = {
            let n = s.not(jt_ok);
            s.and(is_jalr, n)
        };
        let rel_bad = {
            let n = s.not(rel_ok);
            let nj = s.not(is_jalr);
            s.and(nj, n)
        };
        // A jump never holds; of the effect faults only an illegal word can look like a jump.
        s.any(&[illegal, jalr_bad, rel_bad, t_mis])
    };
    let stay_s = {
        let mut v = vec![holds, pc_last];
        v.extend(&eff_conds);
        s.any(&v)
    };
    let pc_j = s.select(stay_j, pc, pc_jump);
    let pc_s = s.select(stay_s, pc, pc_seq);
    let pc_next = s.select(jumps, pc_j, pc_s);
    let stop = {
        let mut v = stop_conds.clone();
        v.push(sys_exit);
        s.any(&v)
    };
    let busy_norm = {
        let one = s.konst_masked(BUSY_BITS, 1);
        let two = s.konst_masked(BUSY_BITS, 2);
        let mut c = vec![(d_hold, div_busy_next), (wr_init, one), (wr_cont, two)];
        if let Some(h) = ls_hold {
            c.push((h, one));
        }
        s.and_or(BUSY_BITS, &c)
    };
    let stop_k = s.konst_masked(BUSY_BITS, BUSY_STOPPING);
    let busy_next = s.select(stop, stop_k, busy_norm);
    Next { pc_next, busy_next }
}

/// The step's writes: RAM, the register file, the ports, the next `PC` and `BUSY`, and the halt.
#[allow(clippy::too_many_arguments)]
pub(super) fn commit(
    s: &mut CircuitBuilder,
    fetch: &Fetch,
    decode: &Decode,
    ecall: &Ecall,
    load_store: &LoadStore,
    faults: &Faults,
    reg_write: &RegWrite,
    next: &Next,
) {
    let Fetch { a0, stopping, .. } = fetch.clone();
    let Decode { is_store, st, .. } = decode.clone();
    let Ecall { in_byte, rd_req, rd_store, sys_exit, wr_emit, .. } = ecall.clone();
    let LoadStore { boff, data_plan, out_byte, sword, .. } = load_store.clone();
    let Faults { fault, fault_code, .. } = faults.clone();
    let RegWrite { x_addr, x_data, we_x } = reg_write.clone();
    let Next { pc_next, busy_next } = next.clone();
    match &data_plan {
        DataPlan::Lanes { rows } => {
            // Stores: lane i written iff (i - boff) mod 4 < n: SW always, SH when boff is i or i - 1, SB when
            // boff is i.
            let kind_off = s.concat(&[boff, st[0], st[1]]);
            for i in 0..4u64 {
                let sb_i = s.eq_const(kind_off, i | 1 << 2);
                let sh_a = s.eq_const(kind_off, i | 1 << 3);
                let sh_b = s.eq_const(kind_off, ((i + 3) % 4) | (1 << 3));
                // read(2): the input byte goes to lane boff.
                let rk = s.concat(&[boff, rd_store]);
                let rd_i = s.eq_const(rk, i | 1 << 2);
                let raw = s.any(&[st[2], sb_i, sh_a, sh_b, rd_i]);
                let en = faults.gate(s, raw);
                let st_byte = s.slice(sword, 8 * i as u32, 8);
                let data = s.select(rd_i, in_byte, st_byte);
                s.mem_write(mem::RAM0 + i as u32, rows[i as usize], data, en);
            }
        }
        DataPlan::Word { row, data, .. } => {
            let st_any = s.or(is_store, rd_store);
            let en = faults.gate(s, st_any);
            s.mem_write(mem::RAM0, *row, *data, en);
        }
    }
    s.mem_write(mem::X, x_addr, x_data, we_x);
    let out_en = faults.gate(s, wr_emit);
    s.output(port::OUT, out_byte, out_en);
    let req_en = faults.gate(s, rd_req);
    let one_bit = s.konst_masked(1, 1);
    s.output(port::IN_REQ, one_bit, req_en);
    let exit_en = faults.gate(s, sys_exit);
    let exit_v = s.slice(a0, 0, 8);
    s.output(port::EXIT, exit_v, exit_en);
    s.output(port::FAULT, fault_code, fault);
    s.set_next(reg::PC, pc_next);
    s.set_next(reg::BUSY, busy_next);
    s.halt(stopping);
}
