//! The register-file write: one write to `X` per step, to rd, a scratch row (N, D, R) or a0, with the value of
//! whichever instruction or micro-step is active (one-hot cases; the data need not be gated, as the write is
//! disabled when none is active), enabled unless an effect-suppressing fault occurred.

use super::alu::Alu;
use super::decode::Decode;
use super::divider::Divider;
use super::ecall::{Ecall, NEG_EBADF};
use super::faults::Faults;
use super::fetch::Fetch;
use super::load_store::LoadStore;
use super::pc_unit::PcUnit;
use super::scratch;
use isa_api::{CircuitBuilder, NodeId};

/// What [`reg_write`] hands [`super::commit`]: the write to `X`.
#[derive(Clone)]
pub(super) struct RegWrite {
    /// The row written (6 bits).
    pub(super) x_addr: NodeId,
    /// The value written.
    pub(super) x_data: NodeId,
    /// The write enable.
    pub(super) we_x: NodeId,
}

/// Register-file write: rd, a scratch row or a0, one-hot; data need not be gated (NONE when disabled).
#[allow(clippy::too_many_arguments)]
pub(super) fn reg_write(
    s: &mut CircuitBuilder,
    fetch: &Fetch,
    decode: &Decode,
    pc_unit: &PcUnit,
    alu: &Alu,
    divider: &Divider,
    ecall: &Ecall,
    load_store: &LoadStore,
    faults: &Faults,
) -> RegWrite {
    let Fetch { a2, rd, rd6, .. } = fetch.clone();
    let Decode {
        add, addi, and, andi, imm_u, is_auipc, is_jal, is_jalr, is_lui, mul, mulh, mulhsu, mulhu, or, ori, sh1, sh2,
        sh3, sll, slli, slt, slti, sltiu, sltu, sra, srai, srl, srli, sub, writes_rd, xor, xori, ..
    } = decode.clone();
    let PcUnit { link, .. } = pc_unit.clone();
    let Alu { r_add, r_and, r_auipc, r_mul, r_mulhi, r_or, r_sh, r_sll, r_slt, r_sltu, r_sra, r_srl, r_sub, r_xor } =
        alu.clone();
    let Divider { d_c0, d_fin, d_iter, div_res, mag_d, r_next, .. } = divider.clone();
    let Ecall { rd_count, rd_eof, wr_addr1, wr_badfd, wr_cont, wr_done, wr_end1, wr_init, wr_len0, .. } = ecall.clone();
    let LoadStore { ld_hold, load_cases, word_read, .. } = load_store.clone();
    let mut cases: Vec<(NodeId, NodeId)> = vec![(is_lui, imm_u), (is_auipc, r_auipc), (is_jal, link), (is_jalr, link)];
    cases.extend(load_cases);
    if let (Some(h), Some(wd)) = (ld_hold, word_read) {
        cases.push((h, wd)); // first word of a crossing load -> row N
    }
    cases.extend([(addi, r_add), (add, r_add), (sub, r_sub)]);
    cases.extend([(slti, r_slt), (slt, r_slt), (sltiu, r_sltu), (sltu, r_sltu)]);
    cases.extend([(xori, r_xor), (xor, r_xor), (ori, r_or), (or, r_or), (andi, r_and), (and, r_and)]);
    cases.extend([(slli, r_sll), (sll, r_sll), (srli, r_srl), (srl, r_srl), (srai, r_sra), (sra, r_sra)]);
    cases.extend([(mul, r_mul), (mulh, r_mulhi), (mulhsu, r_mulhi), (mulhu, r_mulhi)]);
    cases.extend([(sh1, r_sh[0]), (sh2, r_sh[1]), (sh3, r_sh[2]), (d_fin, div_res)]);
    let ebadf = s.konst_masked(32, NEG_EBADF);
    cases.extend([(d_c0, mag_d), (d_iter, r_next)]);
    cases.extend([(wr_init, wr_end1), (wr_cont, wr_addr1), (wr_badfd, ebadf), (wr_len0, a2), (wr_done, a2)]);
    cases.push((rd_eof, rd_count));
    let x_data = s.and_or(32, &cases);
    let to_rd = s.any(&[writes_rd, d_fin]);
    let to_a0 = s.any(&[wr_badfd, wr_len0, wr_done, rd_eof]);
    let to_n = wr_cont;
    let to_d = s.any(&[d_c0, wr_init]);
    let x_addr = {
        let kn = s.konst_masked(6, scratch::N);
        let kd = s.konst_masked(6, scratch::D);
        let kr = s.konst_masked(6, scratch::R);
        let ka0 = s.konst_masked(6, 10);
        let x = s.and_or(6, &[(to_rd, rd6), (to_n, kn), (to_d, kd), (d_iter, kr), (to_a0, ka0)]);
        // The first step of a crossing load (words layout) saves the first word in row N instead of writing rd.
        match ld_hold {
            Some(h) => s.select(h, kn, x),
            None => x,
        }
    };
    let rd_nz = s.ne_const(rd, 0);
    let to_rd_nz = s.and(to_rd, rd_nz);
    let mut we_sigs = vec![to_rd_nz, to_n, to_d, d_iter, to_a0];
    we_sigs.extend(ld_hold);
    let we_any = s.any(&we_sigs);
    let we_x = faults.gate(s, we_any);
    RegWrite { x_addr, x_data, we_x }
}
