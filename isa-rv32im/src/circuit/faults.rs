//! Faults and holds: whether pc holds (a multi-step instruction or an exit), the faults that suppress the
//! instruction's effects (as the interpreter's errors do), the ones that stop the machine after committing it
//! (a jump or fall-through out of RAM, a misaligned branch), and the `FAULT` port's value: one bit per
//! [`FaultCode`](crate::face::FaultCode) and the address of the lowest one.

use super::Ram;
use super::control::Control;
use super::decode::Decode;
use super::divider::Divider;
use super::ecall::Ecall;
use super::fetch::Fetch;
use super::load_store::LoadStore;
use super::pc_unit::PcUnit;
use isa_api::{CircuitBuilder, NodeId};

/// What [`faults`] hands the later sections (node ids of its signals).
#[derive(Clone)]
pub(super) struct Faults {
    /// pc holds: a multi-step instruction before its last step, or an exit.
    pub(super) holds: NodeId,
    /// The faults that suppress the instruction's effects.
    pub(super) eff_conds: Vec<NodeId>,
    /// The negation of each of `eff_conds` (what [`Faults::gate`] ANDs).
    pub(super) not_eff: Vec<NodeId>,
    /// Every fault that stops the machine: `eff_conds` and the jumps or fall-through out of RAM or misaligned.
    pub(super) stop_conds: Vec<NodeId>,
    /// Some fault: the `FAULT` port is written and the machine stops.
    pub(super) fault: NodeId,
    /// The `FAULT` port's value: the code bits (0..8) and the address (8..40).
    pub(super) fault_code: NodeId,
}

impl Faults {
    /// `raw` AND no effect-suppressing fault, in one threshold level.
    pub(super) fn gate(&self, s: &mut CircuitBuilder, raw: NodeId) -> NodeId {
        let mut v = vec![raw];
        v.extend(&self.not_eff);
        s.all(&v)
    }
}

/// The step's holds and faults (see the module docs).
#[allow(clippy::too_many_arguments)]
pub(super) fn faults(
    s: &mut CircuitBuilder,
    ram: &Ram,
    fetch: &Fetch,
    decode: &Decode,
    pc_unit: &PcUnit,
    divider: &Divider,
    ecall: &Ecall,
    load_store: &LoadStore,
    control: &Control,
) -> Faults {
    let Ram { size, .. } = *ram;
    let Fetch { a1, .. } = fetch.clone();
    let Decode { illegal, is_ebreak, is_jal, is_jalr, is_load, is_store, .. } = decode.clone();
    let PcUnit { link, pc_addr, pc_last, .. } = pc_unit.clone();
    let Divider { d_hold, .. } = divider.clone();
    let Ecall { buf_bad, sys_bad, sys_exit, wr_cont, wr_init, .. } = ecall.clone();
    let LoadStore { ea, hi_ok, is_ls, ls_hold, off, sz2, sz4, .. } = load_store.clone();
    let Control { jmp_mis, jmp_oor, jt, jt_mis, jumps, rel_imm, rel_mis, .. } = control.clone();
    // ---- step outcome ------------------------------------------------------------------------------------------
    // pc holds during multi-step instructions and at an exit (whose next step halts).
    let mut hold_sigs = vec![d_hold, wr_init, wr_cont, sys_exit];
    hold_sigs.extend(ls_hold);
    let holds = s.any(&hold_sigs);
    let advances = s.not(holds);
    let no_jump = s.not(jumps);
    let seq_oor = s.all(&[advances, no_jump, pc_last]);
    // Faults that suppress the instruction's effects (as the interpreter's errors do). A jump or fall-through
    // out of RAM commits the instruction (link register included, as the interpreter retires it and then
    // fails to fetch) and stops with pc at the instruction; so does a misaligned branch (no effects anyway).
    let ok2 = s.ne_const(off, size - 1);
    let ok4 = s.ltu_const(off, size - 3);
    let nok2 = s.not(ok2);
    let nok4 = s.not(ok4);
    let nhi = s.not(hi_ok);
    let ls_bad = [s.and(is_ls, nhi), s.and(sz2, nok2), s.and(sz4, nok4)];
    let mis_jal = s.and(is_jal, rel_mis);
    let mis_jalr = s.and(is_jalr, jt_mis);
    let mut eff_conds = vec![illegal, is_ebreak, mis_jal, mis_jalr, buf_bad, sys_bad];
    eff_conds.extend(&ls_bad);
    let not_eff: Vec<NodeId> = eff_conds.iter().map(|c| s.not(*c)).collect();
    let mut stop_conds = eff_conds.clone();
    stop_conds.extend([jmp_mis, jmp_oor, seq_oor]);
    let fault = s.any(&stop_conds);
    let fault_code = {
        let lsb = s.any(&ls_bad);
        let ldb = s.and(lsb, is_load);
        let stb = s.and(lsb, is_store);
        let jo = s.or(jmp_oor, seq_oor);
        // Bit order = FaultCode values.
        let code = s.concat(&[illegal, is_ebreak, ldb, stb, jmp_mis, jo, buf_bad, sys_bad]);
        // The address of the reported (lowest) reason: a load/store's effective address, else a jump's target
        // (pc-relative or JALR's, bit 0 cleared), else the fall-through pc, else the write buffer.
        let rel_t = s.add(pc_addr, rel_imm);
        let jt_even = {
            let hi = s.slice(jt, 1, 31);
            let z = s.konst_masked(1, 0);
            s.concat(&[z, hi])
        };
        let jump_t = s.select(is_jalr, jt_even, rel_t);
        let jump_bad = s.any(&[jmp_mis, jmp_oor, mis_jal, mis_jalr]);
        let a_seq = s.select(seq_oor, link, a1);
        let a_jump = s.select(jump_bad, jump_t, a_seq);
        let addr = s.select(lsb, ea, a_jump);
        s.concat(&[code, addr])
    };
    Faults { holds, eff_conds, not_eff, stop_conds, fault, fault_code }
}
