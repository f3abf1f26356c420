//! The RV32IM+Zba hart as an `isa-api` circuit: one machine step per forward pass of the woven network.
//!
//! Spec references ("Unpriv" = *The RISC-V Instruction Set Manual, Volume I: Unprivileged ISA* 20191213):
//! §2.2-§2.3 formats and immediates, §2.4 computational instructions, §2.5 control transfers, §2.6 loads and
//! stores, §2.7 FENCE, §2.8 ECALL/EBREAK, chapter 7 M (Table 7.1: division by zero and overflow), Bitmanip
//! 1.0.0 §2.1 Zba. The interpreter [`crate::Cpu`] is the oracle; `tests/circuit_lockstep.rs` runs both. The state,
//! ports and fault codes are listed in [`crate::face`] (re-exported here).
//!
//! [`rv32im_machine`] builds one step as a pipeline of sections, one file each: `fetch` reads the state, the
//! instruction word and the registers, `decode` names the instruction (the circuit's decoder; the interpreter's
//! is [`crate::decode`]), `pc_unit` the pc's addresses, `alu` computes the results (the circuit's ALU; its oracle
//! is [`crate::alu`]), `divider` the division micro-code, `ecall` the syscalls, `load_store` the data access,
//! `control` the jumps, `faults` the stops, `reg_write` the register-file write and `commit` the next state, the
//! memory writes and the ports. [`CircuitHart`] (in `hart`) runs the circuit on the host with the reference
//! evaluator.
//!
//! Loads and stores (Unpriv §2.6) of any width and alignment inside RAM succeed, as in qemu-riscv32 user mode.
//! Words layout: a store merges its bytes into the word it reads in the same step (read-modify-write); an
//! access that crosses a word boundary takes two steps (`BUSY` 0 then 1: the first word's bytes, then the next
//! word's; a load keeps the first word in scratch row N). Byte lanes: every access is one step (each lane is
//! written at most once).
//!
//! # Multi-step instructions (micro-code inside the circuit; pc holds until the last step)
//!
//! - DIV/DIVU/REM/REMU: radix-16 restoring division on magnitudes (Unpriv §7.2) in ten steps (`divider`):
//!   `BUSY = 0` stores `|rs1|` in `DIV_Q` and `|rs2|` in scratch row D; `BUSY = 1..=8` each decide a 4-bit
//!   quotient digit from fifteen side-by-side differences `16R + digit - j·|d|` (the remainder goes to row R, the
//!   digit replaces the dividend digit it consumed in `DIV_Q`); `BUSY = 9` reads the quotient or remainder,
//!   applies the sign and writes rd. Division by zero gives `Q = 2^32 - 1` and `R = n` straight out of the
//!   iteration (Table 7.1; DIV's quotient is not negated when the divisor is 0); signed overflow (`-2^31 / -1`)
//!   gives `Q = 2^31`, not negated, and `R = 0`.
//! - MUL/MULH/MULHSU/MULHU: combinational, one shared 64-bit `MulLo` of operands sign- or zero-extended by
//!   funct3; see the README section for the weaver's depth of it.
//! - ECALL write (a7 = 64): one byte per step from the address in scratch row N (a1 on the first step) on
//!   `OUT`; the last byte's step writes `a0 = len` and retires. The whole buffer is checked to lie in RAM on the
//!   first step (as the interpreter does before writing anything). fd other than 1/2: `a0 = -EBADF` in one step;
//!   len 0: one step.
//! - ECALL read (a7 = 63, fd 0): the same loop, storing bytes: the first step checks the buffer and asks for a
//!   byte (`IN_REQ`); each later step stores the byte the host injected on `STDIN` at the address in row N (a1
//!   first) and asks for the next, until `len` bytes (`a0 = len`) or the host's `STDIN_EOF` (`a0` = the bytes
//!   stored), as read(2) on a file returns. fd other than 0: `a0 = -EBADF`.
//!
//! # Deviations from the interpreter (documented, tested)
//!
//! - A jump, taken branch or fall-through whose target lies outside RAM stops the machine AT that instruction
//!   ([`FaultCode::JumpOutOfRam`]) after committing its effects (the link register of JAL/JALR): the circuit's
//!   pc is a RAM word index and cannot hold an address outside RAM. The interpreter retires the instruction and
//!   faults on the next fetch; registers agree, pc differs.
//! - EBREAK stops the machine with [`FaultCode::Breakpoint`] (qemu-riscv32 kills the process with SIGTRAP);
//!   the interpreter reports it as a resumable event.
//! - Exit and faults: pc stays at the ECALL / faulting instruction (the interpreter's pc moved past the exit).

mod alu;
mod commit;
mod control;
mod decode;
mod divider;
mod ecall;
mod faults;
mod fetch;
mod hart;
mod load_store;
mod pc_unit;
mod reg_write;

pub use crate::face::{
    BUSY_STOPPING, CircuitError, FaultCode, MemoryLayout, Rv32MachineOptions, fault_address, input, mem, port,
    ram_image, reg,
};
pub use hart::{CircuitHart, HartError, HartStep, InstrOutcome};
use isa_api::{CircuitBuilder, MachineDesc, NodeId};

/// Build the RV32IM+Zba machine: one step as a short pipeline of named sections, each a function that adds its
/// nodes to the circuit and hands its signals on (the order of the calls is the order of the nodes).
pub fn rv32im_machine(opts: &Rv32MachineOptions) -> Result<MachineDesc, CircuitError> {
    opts.validate()?;
    let ram = &Ram::of(opts);
    let mut b = CircuitBuilder::new();
    let s = &mut b;
    let fetch = fetch::fetch(s, ram);
    let decode = decode::decode(s, &fetch);
    let pc_unit = pc_unit::pc_unit(s, ram, &fetch);
    let alu = alu::alu(s, &fetch, &decode, &pc_unit);
    let divider = divider::divider(s, &fetch, &decode);
    let ecall = ecall::ecall(s, ram, &fetch, &decode, &divider);
    let load_store = load_store::load_store(s, ram, &fetch, &decode, &divider, &ecall);
    let control = control::control(s, ram, &fetch, &decode);
    let faults = faults::faults(s, ram, &fetch, &decode, &pc_unit, &divider, &ecall, &load_store, &control);
    let reg_write = reg_write::reg_write(s, &fetch, &decode, &pc_unit, &alu, &divider, &ecall, &load_store, &faults);
    let next = commit::next_state(s, &fetch, &decode, &pc_unit, &divider, &ecall, &load_store, &control, &faults);
    commit::commit(s, &fetch, &decode, &ecall, &load_store, &faults, &reg_write, &next);
    Ok(crate::face::machine(opts, b.finish()))
}

/// Scratch rows of the register-file memory used by micro-code.
mod scratch {
    /// The current byte address (ECALL write); the first word of a word-crossing load.
    pub const N: u64 = 32;
    /// The last byte's address (ECALL write); |divisor| (division).
    pub const D: u64 = 33;
    /// Partial remainder (division).
    pub const R: u64 = 34;
}

/// The RAM geometry every section reads: address width of a word index, base, size, and whether the base is a
/// multiple of the size (then RAM offsets are the low bits of an address and "in RAM" is one equality).
#[derive(Clone, Copy)]
struct Ram {
    aw: u32,
    base: u64,
    size: u64,
    aligned_base: bool,
    /// [`MemoryLayout::Words`] (else byte lanes).
    words: bool,
}

impl Ram {
    fn of(opts: &Rv32MachineOptions) -> Ram {
        let base = opts.ram_base as u64;
        let size = opts.ram_size as u64;
        let words = opts.layout == MemoryLayout::Words;
        Ram { aw: opts.lane_addr_width(), base, size, aligned_base: base.is_multiple_of(size), words }
    }
}

/// Offset of a 32-bit address in RAM (aw + 2 bits) and whether the address is at or above base and below
/// base + 2^(aw+2) (= base + size).
fn ram_offset(s: &mut CircuitBuilder, ram: &Ram, addr: NodeId) -> (NodeId, NodeId) {
    let Ram { aw, base, aligned_base, .. } = *ram;
    let hiw = 32 - (aw + 2);
    if aligned_base {
        let lo = s.slice(addr, 0, aw + 2);
        let hi = s.slice(addr, aw + 2, hiw);
        let ok = s.eq_const(hi, base >> (aw + 2));
        (lo, ok)
    } else {
        let bk = s.konst_masked(32, base);
        let off = s.sub(addr, bk);
        let lo = s.slice(off, 0, aw + 2);
        let hi = s.slice(off, aw + 2, hiw);
        let ok = s.eq_const(hi, 0);
        (lo, ok)
    }
}
