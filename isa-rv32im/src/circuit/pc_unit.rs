//! The pc unit: pc (a RAM word index) as a byte address, the link value pc + 4 of JAL/JALR, the sequential
//! next pc and whether pc is the last word of RAM (the fall-through leaves RAM).

use super::Ram;
use super::fetch::Fetch;
use isa_api::{CircuitBuilder, NodeId};

/// What [`pc_unit`] hands the later sections (node ids of its signals).
#[derive(Clone)]
pub(super) struct PcUnit {
    /// pc as a 32-bit byte address.
    pub(super) pc_addr: NodeId,
    /// pc + 4 as a byte address (the link value).
    pub(super) link: NodeId,
    /// pc is the last word of RAM.
    pub(super) pc_last: NodeId,
    /// The next word index, pc + 1 (modulo the RAM's words).
    pub(super) pc_seq: NodeId,
}

/// pc as an address: the link value, the sequential pc, the last word of RAM.
pub(super) fn pc_unit(s: &mut CircuitBuilder, ram: &Ram, fetch: &Fetch) -> PcUnit {
    let Ram { aw, base, .. } = *ram;
    let Fetch { pc, .. } = fetch.clone();
    // ---- pc as an address -------------------------------------------------------------------------------------
    let pc_addr = {
        let z = s.konst_masked(2, 0);
        let x = s.concat(&[z, pc]);
        let x = s.zext(x, 32);
        let bk = s.konst_masked(32, base);
        s.add(x, bk)
    };
    let four = s.konst_masked(32, 4);
    let link = s.add(pc_addr, four);
    let one_aw = s.konst_masked(aw, 1);
    let pc_seq = s.add(pc, one_aw);
    let pc_last = s.eq_const(pc, (1u64 << aw) - 1);
    PcUnit { pc_addr, link, pc_last, pc_seq }
}
