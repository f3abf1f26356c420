//! ECALL (Unpriv §2.8; the Linux syscall ABI of qemu-riscv32): exit, bad calls, and the byte loop that write(2)
//! on fd 1 or 2 and read(2) on fd 0 share: one byte per step (`BUSY` 0, then 1, then 2 until the last byte),
//! the address in scratch row N, the last byte's address in row D; a bad fd is -EBADF in one step.

use super::decode::Decode;
use super::divider::Divider;
use super::fetch::Fetch;
use super::Ram;
use crate::face::input;
use isa_api::{CircuitBuilder, CmpKind, NodeId};

/// Linux `-EBADF`, returned by write(2) for fds other than 1 and 2 (and read(2) for fds other than 0).
pub(super) const NEG_EBADF: u64 = (-9i32) as u32 as u64;

/// What [`ecall`] hands the later sections (node ids of its signals).
#[derive(Clone)]
pub(super) struct Ecall {
    /// The byte address of this step of the loop: a1 (`BUSY = 1`) or row N.
    pub(super) wr_addr: NodeId,
    /// read(2): the step's input byte (the `STDIN` latch).
    pub(super) in_byte: NodeId,
    /// read(2): store the input byte at `wr_addr`.
    pub(super) rd_store: NodeId,
    /// read(2): ask the host for the next byte (`IN_REQ`).
    pub(super) rd_req: NodeId,
    /// read(2): the input has ended; a0 = the bytes stored.
    pub(super) rd_eof: NodeId,
    /// read(2): the bytes stored so far.
    pub(super) rd_count: NodeId,
    /// The buffer lies (partly) outside RAM (checked on the first step).
    pub(super) buf_bad: NodeId,
    /// An unsupported syscall.
    pub(super) sys_bad: NodeId,
    /// exit or exit_group.
    pub(super) sys_exit: NodeId,
    /// `wr_addr + 1` (to row N).
    pub(super) wr_addr1: NodeId,
    /// A bad fd: a0 = -EBADF in one step.
    pub(super) wr_badfd: NodeId,
    /// A byte step that is not the last: the loop continues (row N, `BUSY = 2`).
    pub(super) wr_cont: NodeId,
    /// The last byte's step: a0 = len, the instruction retires.
    pub(super) wr_done: NodeId,
    /// write(2): emit the byte at `wr_addr` on `OUT`.
    pub(super) wr_emit: NodeId,
    /// a1 + len - 1, the last byte's address (to row D).
    pub(super) wr_end1: NodeId,
    /// The first step of the loop (`BUSY = 0`, len > 0).
    pub(super) wr_init: NodeId,
    /// len = 0: a0 = 0 in one step.
    pub(super) wr_len0: NodeId,
}

/// ECALL (Unpriv §2.8; the Linux syscall ABI of qemu-riscv32): write(2) and read(2) byte by byte, exit, bad
/// calls.
pub(super) fn ecall(s: &mut CircuitBuilder, ram: &Ram, fetch: &Fetch, decode: &Decode, divider: &Divider) -> Ecall {
    let Ram { base, size, .. } = *ram;
    let Fetch { a0, a1, a2, a7, busy0, s_d, s_n, .. } = fetch.clone();
    let Decode { is_ecall, .. } = decode.clone();
    let Divider { c1, .. } = divider.clone();
    // ---- ECALL (Unpriv §2.8; Linux syscall ABI of qemu-riscv32) -----------------------------------------------
    // Every syscall condition is one AND over early signals (a7, a0, a2 and BUSY are ready long before the
    // fetched word is decoded).
    let e64 = s.eq_const(a7, 64);
    let ne64 = s.not(e64);
    let e63 = s.eq_const(a7, 63);
    let ne63 = s.not(e63);
    let e_exit = {
        let e93 = s.eq_const(a7, 93);
        let e94 = s.eq_const(a7, 94);
        s.or(e93, e94)
    };
    let ne_exit = s.not(e_exit);
    let sys_exit = s.and(is_ecall, e_exit);
    let sys_bad = s.all(&[is_ecall, ne64, ne63, ne_exit]);
    // write(2) on fd 1 or 2 and read(2) on fd 0 share one byte loop (`io`); a bad fd is -EBADF in one step.
    let fd_ok = {
        let f1 = s.eq_const(a0, 1);
        let f2 = s.eq_const(a0, 2);
        s.or(f1, f2)
    };
    let fd0 = s.eq_const(a0, 0);
    let w_ok = s.and(e64, fd_ok);
    let r_ok = s.and(e63, fd0);
    let io = s.or(w_ok, r_ok);
    let bad_w = {
        let nfd = s.not(fd_ok);
        s.and(e64, nfd)
    };
    let bad_r = {
        let nfd0 = s.not(fd0);
        s.and(e63, nfd0)
    };
    let bad_fd = s.or(bad_w, bad_r);
    let wr_badfd = s.and(is_ecall, bad_fd);
    let len0 = s.eq_const(a2, 0);
    let nlen0 = s.not(len0);
    let wr_len0 = s.all(&[is_ecall, io, len0, busy0]);
    // First step (BUSY = 0): store the last byte's address a1 + len - 1 in row D (read: and request the first
    // byte). Then one byte per step at the address a1 (BUSY = 1) or row N (BUSY = 2): write emits it on OUT;
    // read stores the byte the host injected on STDIN since the last step (and requests the next) or, at end
    // of input (STDIN_EOF), finishes early with a0 = the bytes stored. The step whose address equals row D
    // finishes.
    let wr_init = s.all(&[is_ecall, io, nlen0, busy0]);
    let nbusy0 = s.not(busy0);
    let wr_emit = s.all(&[is_ecall, w_ok, nbusy0]);
    let in_byte = s.input(input::STDIN, 8);
    let eof = s.input(input::STDIN_EOF, 1);
    let neof = s.not(eof);
    let wr_addr = s.select(c1, a1, s_n);
    let wr_addr1 = {
        let one = s.konst_masked(32, 1);
        s.add(wr_addr, one)
    };
    let wr_end1 = {
        let m1 = s.konst_masked(32, u32::MAX as u64);
        let e = s.add(a1, a2);
        s.add(e, m1)
    };
    let wr_last = s.eq(wr_addr, s_d);
    let wr_more = s.not(wr_last);
    let w_cont = s.all(&[is_ecall, w_ok, nbusy0, wr_more]);
    let w_done = s.all(&[is_ecall, w_ok, nbusy0, wr_last]);
    let rd_store = s.all(&[is_ecall, r_ok, nbusy0, neof]);
    let r_cont = s.all(&[is_ecall, r_ok, nbusy0, neof, wr_more]);
    let r_done = s.all(&[is_ecall, r_ok, nbusy0, neof, wr_last]);
    let rd_eof = s.all(&[is_ecall, r_ok, nbusy0, eof]);
    let r_init = s.all(&[is_ecall, r_ok, nlen0, busy0]);
    let rd_req = s.or(r_init, r_cont);
    let wr_cont = s.or(w_cont, r_cont);
    let wr_done = s.or(w_done, r_done);
    // At end of input: the bytes stored so far, wr_addr - a1.
    let rd_count = s.sub(wr_addr, a1);
    // Buffer [a1, a1 + len) inside RAM (checked on the first step): a1 >= base and a1 - base + len <= size.
    let buf_bad = {
        let a1x = s.zext(a1, 34);
        let bk = s.konst_masked(34, base);
        let off = s.sub(a1x, bk);
        let below = s.bit(off, 33);
        let lenx = s.zext(a2, 34);
        let end = s.add(off, lenx);
        let sk = s.konst_masked(34, size);
        let over = s.cmp(CmpKind::Ltu, sk, end);
        let bad = s.or(below, over);
        s.all(&[is_ecall, io, busy0, bad])
    };
    Ecall {
        wr_addr, in_byte, rd_store, rd_req, rd_eof, rd_count, buf_bad, sys_bad, sys_exit, wr_addr1, wr_badfd, wr_cont,
        wr_done, wr_emit, wr_end1, wr_init, wr_len0,
    }
}
