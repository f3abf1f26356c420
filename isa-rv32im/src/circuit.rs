//! The RV32IM+Zba hart as an `isa-api` circuit: one machine step per forward pass of the woven network.
//!
//! Spec references ("Unpriv" = *The RISC-V Instruction Set Manual, Volume I: Unprivileged ISA* 20191213):
//! §2.2-§2.3 formats and immediates, §2.4 computational instructions, §2.5 control transfers, §2.6 loads and
//! stores, §2.7 FENCE, §2.8 ECALL/EBREAK, chapter 7 M (Table 7.1: division by zero and overflow), Bitmanip
//! 1.0.0 §2.1 Zba. The interpreter [`crate::Cpu`] is the oracle; `tests/circuit_lockstep.rs` runs both.
//!
//! # State (what a step writes to the trace when it changes)
//!
//! | item | kind | width | meaning |
//! |---|---|---|---|
//! | `PC` | register | log2(RAM/4) | word index of pc relative to the RAM base (RV32IM without C: pc is 4-aligned) |
//! | `BUSY` | register | 8 | micro-step: 0 = an instruction retired this step; else inside a multi-step instruction; 255 = stopping |
//! | `DIV_Q` | register | 32 | division: the dividend's magnitude, whose 4-bit digits the iterations replace by the quotient's |
//! | `X` | memory, 64 x 32 | | rows 0..31 = x0..x31 (row 0 is never written), rows 32..34 = micro-code scratch |
//! | `RAM` | memory, (RAM/4) x 32 | | [`MemoryLayout::Words`] (default): RAM as little-endian 32-bit words |
//! | `RAM0..RAM3` | memories, (RAM/4) x 8 | | [`MemoryLayout::ByteLanes`]: lane i holds the bytes at `(addr - base) % 4 == i` |
//! | `OUT` | port, 8 | | console byte (ECALL write, fd 1 or 2) |
//! | `EXIT` | port, 8 | | exit status (`a0 & 0xff`, as the process status under qemu-riscv32) |
//! | `FAULT` | port, 40 | | bits 0..8: [`FaultCode`] bits; bits 8..40: the faulting address ([`fault_address`]); the machine halts on the next step |
//! | `IN_REQ` | port, 1 | | read(2) asks for the next input byte; the host answers on `STDIN` (or `STDIN_EOF`) before the next step |
//! | `STDIN`, `STDIN_EOF` | inputs, 8 and 1 | | the byte asked for; 1 = the input has ended |
//!
//! A step writes only the 8-bit chunks that changed (`isa_api::trace`): at most 26 trace tokens (PC 2, BUSY 1,
//! DIV_Q 4, X write 1 + 4, RAM write 2 + 4, OUT 1, EXIT 1, FAULT 5: code and address, IN_REQ 1), 32 with byte
//! lanes (four lane writes of 2 + 1), and typically two to four. Retire rule (no ISA knowledge needed): a step retired
//! one instruction iff `BUSY` is 0 after it. A stop (exit, fault, EBREAK) is two steps: the first emits `EXIT`
//! or `FAULT` and sets `BUSY = 255` (pc stays at the ECALL/faulting instruction); the second is the single
//! token `HALT`.
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

use isa_api::{CircuitBuilder, CmpKind, MachineDesc, MemoryDesc, NodeId, PortDesc, PortRole, RegisterDesc, ShiftKind};
use thiserror::Error;

/// Register indices of the machine.
pub mod reg {
    /// Word index of pc relative to the RAM base.
    pub const PC: u32 = 0;
    /// Micro-step counter; 0 after a step that retired an instruction.
    pub const BUSY: u32 = 1;
    /// Division: |dividend|, whose 4-bit groups the iterations replace by quotient digits from the top.
    pub const DIV_Q: u32 = 2;
}

/// Memory indices of the machine.
pub mod mem {
    /// Integer register file x0..x31 plus scratch row 32.
    pub const X: u32 = 0;
    /// Byte lane `i` of RAM is memory `RAM0 + i` ([`super::MemoryLayout::ByteLanes`]); with
    /// [`super::MemoryLayout::Words`] memory `RAM0` is the whole RAM in 32-bit words.
    pub const RAM0: u32 = 1;
    /// Scratch row of `X` used by micro-code.
    pub const SCRATCH_ROW: u64 = 32;
}

/// Output ports of the machine.
pub mod port {
    /// Console byte.
    pub const OUT: u32 = 0;
    /// Exit status (low 8 bits of a0).
    pub const EXIT: u32 = 1;
    /// Fault code ([`super::FaultCode`], bits 0..8) and faulting address (bits 8..40, [`super::fault_address`]).
    pub const FAULT: u32 = 2;
    /// read(2) asks the host for the next input byte (value 1): the host injects it on [`super::input::STDIN`],
    /// or [`super::input::STDIN_EOF`] = 1 at end of input, before the next step.
    pub const IN_REQ: u32 = 3;
}

/// Input ports of the machine (latches the host sets by injecting tokens between steps).
pub mod input {
    /// The byte a read(2) asked for.
    pub const STDIN: u32 = 0;
    /// 1: the input has ended (read(2) returns the bytes it stored so far).
    pub const STDIN_EOF: u32 = 1;
}

/// `BUSY` value of the step after an exit or fault: the machine halts.
pub const BUSY_STOPPING: u64 = 255;
const BUSY_BITS: u32 = 8;
/// Linux `-EBADF`, returned by write(2) for fds other than 1 and 2.
const NEG_EBADF: u64 = (-9i32) as u32 as u64;

/// Why the circuit stopped. The `FAULT` port carries one bit per kind (the value of the code), so the circuit
/// needs no priority logic; when several bits are set (e.g. an illegal word that also looks like a load out of
/// RAM) the lowest one is the reason ([`FaultCode::from_value`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FaultCode {
    /// Not an RV32IM+Zba instruction (Unpriv chapter 24; strict like [`crate::decode::decode`]).
    IllegalInstruction = 1,
    /// EBREAK (Unpriv §2.8).
    Breakpoint = 2,
    /// A load touched a byte outside RAM.
    LoadOutOfRam = 4,
    /// A store touched a byte outside RAM.
    StoreOutOfRam = 8,
    /// A jump or taken branch to an address that is not a multiple of 4 (Unpriv §2.5).
    MisalignedJump = 16,
    /// A jump, taken branch or fall-through to an address outside RAM.
    JumpOutOfRam = 32,
    /// The buffer of an ECALL write or read lies (partly) outside RAM.
    WriteBufferOutOfRam = 64,
    /// ECALL with a7 other than 64 (write), 93 (exit), 94 (exit_group).
    UnsupportedSyscall = 128,
}

/// The address a FAULT port value reports, for the kinds that have one: the load's or store's effective
/// address, the jump target (JALR's with bit 0 cleared), the fall-through pc, the write(2) buffer (a1).
pub fn fault_address(v: u64) -> Option<u32> {
    use FaultCode::*;
    match FaultCode::from_value(v)? {
        LoadOutOfRam | StoreOutOfRam | MisalignedJump | JumpOutOfRam | WriteBufferOutOfRam => Some((v >> 8) as u32),
        IllegalInstruction | Breakpoint | UnsupportedSyscall => None,
    }
}

impl FaultCode {
    /// The reason for a FAULT port value: the lowest set bit of its code byte (bits 0..8). `None` when the
    /// code byte is 0.
    pub fn from_value(v: u64) -> Option<FaultCode> {
        use FaultCode::*;
        let v = v & 0xff;
        if v == 0 {
            return None;
        }
        Some(match v.trailing_zeros() {
            0 => IllegalInstruction,
            1 => Breakpoint,
            2 => LoadOutOfRam,
            3 => StoreOutOfRam,
            4 => MisalignedJump,
            5 => JumpOutOfRam,
            6 => WriteBufferOutOfRam,
            _ => UnsupportedSyscall,
        })
    }
}

impl std::fmt::Display for FaultCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FaultCode::IllegalInstruction => "illegal instruction",
            FaultCode::Breakpoint => "breakpoint (EBREAK)",
            FaultCode::LoadOutOfRam => "load outside RAM",
            FaultCode::StoreOutOfRam => "store outside RAM",
            FaultCode::MisalignedJump => "jump to a misaligned target",
            FaultCode::JumpOutOfRam => "jump or fall-through outside RAM",
            FaultCode::WriteBufferOutOfRam => "write(2) buffer outside RAM",
            FaultCode::UnsupportedSyscall => "unsupported ecall (supported: a7 = 64 write, 93/94 exit)",
        })
    }
}

/// How RAM is held in the machine's memories.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MemoryLayout {
    /// Four byte lanes `RAM0..RAM3` (8-bit words, RAM/4 rows each): every access is one step (a misaligned
    /// SW/SH writes each lane at most once). At most 32 trace tokens per step (see the module docs); the fetch
    /// reads four lanes (4x the DeltaNet heads of `Words`).
    ByteLanes,
    /// One memory `RAM` of 32-bit words (RAM/4 rows): sub-word stores are read-modify-write in the same step;
    /// an access that crosses a word boundary takes two steps (the first word's part, then the second's).
    /// At most 26 trace tokens per step and a quarter of the memory heads of `ByteLanes` in the woven network.
    /// The default.
    #[default]
    Words,
}

/// RAM geometry of the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rv32MachineOptions {
    /// First RAM address (a multiple of 4).
    pub ram_base: u32,
    /// RAM size in bytes: a power of two, 64 bytes ..= 64 MiB, `base + size <= 2^32`.
    pub ram_size: u32,
    /// Memory organisation.
    pub layout: MemoryLayout,
}

impl Default for Rv32MachineOptions {
    /// 64 KiB at 0x10000 (every example program fits).
    fn default() -> Self {
        Rv32MachineOptions { ram_base: 0x1_0000, ram_size: 64 * 1024, layout: MemoryLayout::Words }
    }
}

impl Rv32MachineOptions {
    /// 256 KiB at 0x10000 (the interpreter's default).
    pub fn ram_256k() -> Self {
        Rv32MachineOptions { ram_base: 0x1_0000, ram_size: 256 * 1024, layout: MemoryLayout::Words }
    }

    /// Check the geometry.
    pub fn validate(&self) -> Result<(), CircuitError> {
        let s = self.ram_size;
        if !s.is_power_of_two() || !(64..=64 << 20).contains(&s) {
            return Err(CircuitError::RamSize(s));
        }
        if !self.ram_base.is_multiple_of(4) || self.ram_base as u64 + s as u64 > 1 << 32 {
            return Err(CircuitError::RamBase { base: self.ram_base, size: s });
        }
        Ok(())
    }

    /// Rows of each byte lane = words of RAM, as an address width (log2(size / 4)).
    pub fn lane_addr_width(&self) -> u32 {
        self.ram_size.trailing_zeros() - 2
    }

    /// The interpreter configuration with the same RAM.
    pub fn interp_config(&self) -> crate::Config {
        crate::Config { ram_base: self.ram_base, ram_size: self.ram_size }
    }
}

/// A machine geometry the circuit cannot be built for.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CircuitError {
    /// RAM size is not a power of two in 64 B ..= 64 MiB.
    #[error("RAM size {0:#x} must be a power of two between 64 bytes and 64 MiB")]
    RamSize(u32),
    /// RAM base not 4-aligned or RAM extends past 2^32.
    #[error("RAM base {base:#010x} must be a multiple of 4 and base + size ({size:#x}) at most 2^32")]
    RamBase { base: u32, size: u32 },
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

/// Quotient bits of one division iteration (radix 2^DIV_RADIX_BITS).
const DIV_RADIX_BITS: u32 = 4;
/// Division iterations: 32 / [`DIV_RADIX_BITS`], at `BUSY = 1 ..= DIV_ITERS`; `BUSY = DIV_ITERS + 1` writes rd.
const DIV_ITERS: u64 = 32 / DIV_RADIX_BITS as u64;

/// Where the data access reads and writes RAM.
#[derive(Clone)]
enum DataPlan {
    /// Byte lanes: the row of each lane.
    Lanes { rows: Vec<NodeId> },
    /// Words: the row read (and written) and the read-modify-write word.
    Word { row: NodeId, data: NodeId },
}

/// Build the RV32IM+Zba machine: one step as a short pipeline of named sections, each a function that adds its
/// nodes to the circuit and hands its signals on (the order of the calls is the order of the nodes).
pub fn rv32im_machine(opts: &Rv32MachineOptions) -> Result<MachineDesc, CircuitError> {
    opts.validate()?;
    let ram = &Ram::of(opts);
    let mut s = CircuitBuilder::new();
    let s = &mut s;
    let fetch = fetch(s, ram);
    let decode = decode(s, &fetch);
    let pc_unit = pc_unit(s, ram, &fetch);
    let alu = alu(s, &fetch, &decode, &pc_unit);
    let divider = divider(s, &fetch, &decode);
    let ecall = ecall(s, ram, &fetch, &decode, &divider);
    let load_store = load_store(s, ram, &fetch, &decode, &divider, &ecall);
    let control = control(s, ram, &fetch, &decode);
    commit(s, ram, &fetch, &decode, &pc_unit, &alu, &divider, &ecall, &load_store, &control)
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
        Ram { aw: opts.lane_addr_width(), base, size, aligned_base: base.is_multiple_of(size), words: opts.layout == MemoryLayout::Words }
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

/// What [`fetch`] hands the later sections (node ids of its signals).
#[derive(Clone)]
struct Fetch {
    key15: NodeId,
    key8: NodeId,
    op5: NodeId,
    w: NodeId,
    pc: NodeId,
    a: NodeId,
    bv: NodeId,
    f3: NodeId,
    busy: NodeId,
    busy0: NodeId,
    s_d: NodeId,
    s_r: NodeId,
    s_n: NodeId,
    a0: NodeId,
    a1: NodeId,
    a2: NodeId,
    a7: NodeId,
    rd: NodeId,
    rd6: NodeId,
    stopping: NodeId,
}

/// What [`decode`] hands the later sections (node ids of its signals).
#[derive(Clone)]
struct Decode {
    imm_i: NodeId,
    imm_u: NodeId,
    is_op: NodeId,
    is_div: NodeId,
    is_ecall: NodeId,
    imm_s: NodeId,
    is_load: NodeId,
    is_store: NodeId,
    is_sys: NodeId,
    ld: Vec<NodeId>,
    st: Vec<NodeId>,
    br: Vec<NodeId>,
    imm_b: NodeId,
    imm_j: NodeId,
    is_jal: NodeId,
    is_jalr: NodeId,
    add: NodeId,
    addi: NodeId,
    and: NodeId,
    andi: NodeId,
    illegal: NodeId,
    is_auipc: NodeId,
    is_ebreak: NodeId,
    is_lui: NodeId,
    mul: NodeId,
    mulh: NodeId,
    mulhsu: NodeId,
    mulhu: NodeId,
    or: NodeId,
    ori: NodeId,
    sh1: NodeId,
    sh2: NodeId,
    sh3: NodeId,
    sll: NodeId,
    slli: NodeId,
    slt: NodeId,
    slti: NodeId,
    sltiu: NodeId,
    sltu: NodeId,
    sra: NodeId,
    srai: NodeId,
    srl: NodeId,
    srli: NodeId,
    sub: NodeId,
    writes_rd: NodeId,
    xor: NodeId,
    xori: NodeId,
}

/// What [`pc_unit`] hands the later sections (node ids of its signals).
#[derive(Clone)]
struct PcUnit {
    pc_addr: NodeId,
    link: NodeId,
    pc_last: NodeId,
    pc_seq: NodeId,
}

/// What [`alu`] hands the later sections (node ids of its signals).
#[derive(Clone)]
struct Alu {
    r_add: NodeId,
    r_and: NodeId,
    r_auipc: NodeId,
    r_mul: NodeId,
    r_mulhi: NodeId,
    r_or: NodeId,
    r_sh: Vec<NodeId>,
    r_sll: NodeId,
    r_slt: NodeId,
    r_sltu: NodeId,
    r_sra: NodeId,
    r_srl: NodeId,
    r_sub: NodeId,
    r_xor: NodeId,
}

/// What [`divider`] hands the later sections (node ids of its signals).
#[derive(Clone)]
struct Divider {
    c1: NodeId,
    d_c0: NodeId,
    d_fin: NodeId,
    d_hold: NodeId,
    /// An iteration step (`BUSY = 1..=8`): it writes the remainder row R.
    d_iter: NodeId,
    div_busy_next: NodeId,
    div_res: NodeId,
    mag_d: NodeId,
    r_next: NodeId,
}

/// What [`ecall`] hands the later sections (node ids of its signals).
#[derive(Clone)]
struct Ecall {
    wr_addr: NodeId,
    /// read(2): the step's input byte (the `STDIN` latch), the byte-store and request signals, the count.
    in_byte: NodeId,
    rd_store: NodeId,
    rd_req: NodeId,
    rd_eof: NodeId,
    rd_count: NodeId,
    buf_bad: NodeId,
    sys_bad: NodeId,
    sys_exit: NodeId,
    wr_addr1: NodeId,
    wr_badfd: NodeId,
    wr_cont: NodeId,
    wr_done: NodeId,
    wr_emit: NodeId,
    wr_end1: NodeId,
    wr_init: NodeId,
    wr_len0: NodeId,
}

/// What [`load_store`] hands the later sections (node ids of its signals).
#[derive(Clone)]
struct LoadStore {
    boff: NodeId,
    data_plan: DataPlan,
    ea: NodeId,
    hi_ok: NodeId,
    is_ls: NodeId,
    ld_hold: Option<NodeId>,
    load_cases: Vec<(NodeId, NodeId)>,
    ls_hold: Option<NodeId>,
    off: NodeId,
    out_byte: NodeId,
    sword: NodeId,
    sz2: NodeId,
    sz4: NodeId,
    word_read: Option<NodeId>,
}

/// What [`control`] hands the later sections (node ids of its signals).
#[derive(Clone)]
struct Control {
    jmp_mis: NodeId,
    jmp_oor: NodeId,
    jt: NodeId,
    jt_mis: NodeId,
    jt_ok: NodeId,
    jumps: NodeId,
    pc_jump: NodeId,
    rel_imm: NodeId,
    rel_mis: NodeId,
    rel_ok: NodeId,
    t_mis: NodeId,
}

/// State, fetch and register reads: the committed state at the start of the step (Unpriv §1.5: a
/// little-endian 32-bit parcel at pc).
fn fetch(s: &mut CircuitBuilder, ram: &Ram) -> Fetch {
    let Ram { aw, words, .. } = *ram;
    // ---- state -------------------------------------------------------------------------------------------
    let pc = s.reg(reg::PC, aw);
    let busy = s.reg(reg::BUSY, BUSY_BITS);
    let stopping = s.eq_const(busy, BUSY_STOPPING);
    let busy0 = s.eq_const(busy, 0);

    // ---- fetch (Unpriv §1.5: little-endian 32-bit parcel at pc) -------------------------------------------
    let w = if words {
        s.load(mem::RAM0, 32, pc)
    } else {
        let lanes_f: Vec<NodeId> = (0..4).map(|i| s.load(mem::RAM0 + i, 8, pc)).collect();
        s.concat(&lanes_f)
    };
    let op5 = s.slice(w, 2, 5); // opcode[6:2]; opcode[1:0] must be 11 (checked in `legal`)
    let rd = s.slice(w, 7, 5);
    let f3 = s.slice(w, 12, 3);
    let rs1 = s.slice(w, 15, 5);
    let rs2 = s.slice(w, 20, 5);
    let f7 = s.slice(w, 25, 7);
    let key8 = s.concat(&[op5, f3]);
    let key15 = s.concat(&[op5, f3, f7]);

    // ---- register reads (committed state at the start of the step) ---------------------------------------
    let rd6 = s.zext(rd, 6);
    let rs1_addr = s.zext(rs1, 6);
    let rs2_addr = s.zext(rs2, 6);
    let a = s.load(mem::X, 32, rs1_addr);
    let bv = s.load(mem::X, 32, rs2_addr);
    let rowk = |s: &mut CircuitBuilder, r: u64| {
        let ad = s.konst_masked(6, r);
        s.load(mem::X, 32, ad)
    };
    let s_n = rowk(s, scratch::N);
    let s_d = rowk(s, scratch::D);
    let s_r = rowk(s, scratch::R);
    let a0 = rowk(s, 10);
    let a1 = rowk(s, 11);
    let a2 = rowk(s, 12);
    let a7 = rowk(s, 17);
    Fetch { key15, key8, op5, w, pc, a, bv, f3, busy, busy0, s_d, s_n, s_r, a0, a1, a2, a7, rd, rd6, stopping }
}

/// Decode: one parallel equality per instruction (Unpriv Table 24.2), and the immediates (Unpriv §2.3).
fn decode(s: &mut CircuitBuilder, fetch: &Fetch) -> Decode {
    let Fetch { key15, key8, op5, w, .. } = fetch.clone();
    // ---- decode: one parallel equality per instruction (Unpriv Table 24.2; opcode >> 2 below) -------------
    let k8 = |s: &mut CircuitBuilder, op: u64, f3: u64| s.eq_const(key8, op >> 2 | f3 << 5);
    let k15 = |s: &mut CircuitBuilder, op: u64, f3: u64, f7: u64| s.eq_const(key15, op >> 2 | f3 << 5 | f7 << 8);
    let is_lui = s.eq_const(op5, 0x37 >> 2);
    let is_auipc = s.eq_const(op5, 0x17 >> 2);
    let is_jal = s.eq_const(op5, 0x6f >> 2);
    let is_jalr = k8(s, 0x67, 0);
    let is_sys = s.eq_const(op5, 0x73 >> 2);
    let br: Vec<NodeId> = [0u64, 1, 4, 5, 6, 7].iter().map(|f| k8(s, 0x63, *f)).collect(); // beq bne blt bge bltu bgeu
    let ld: Vec<NodeId> = [0u64, 1, 2, 4, 5].iter().map(|f| k8(s, 0x03, *f)).collect(); // lb lh lw lbu lhu
    let st: Vec<NodeId> = [0u64, 1, 2].iter().map(|f| k8(s, 0x23, *f)).collect(); // sb sh sw
    let addi = k8(s, 0x13, 0);
    let slti = k8(s, 0x13, 2);
    let sltiu = k8(s, 0x13, 3);
    let xori = k8(s, 0x13, 4);
    let ori = k8(s, 0x13, 6);
    let andi = k8(s, 0x13, 7);
    let slli = k15(s, 0x13, 1, 0);
    let srli = k15(s, 0x13, 5, 0);
    let srai = k15(s, 0x13, 5, 0x20);
    let rr = |s: &mut CircuitBuilder, f7: u64, f3: u64| k15(s, 0x33, f3, f7);
    let add = rr(s, 0, 0);
    let sub = rr(s, 0x20, 0);
    let sll = rr(s, 0, 1);
    let slt = rr(s, 0, 2);
    let sltu = rr(s, 0, 3);
    let xor = rr(s, 0, 4);
    let srl = rr(s, 0, 5);
    let sra = rr(s, 0x20, 5);
    let or = rr(s, 0, 6);
    let and = rr(s, 0, 7);
    let mul = rr(s, 1, 0);
    let mulh = rr(s, 1, 1);
    let mulhsu = rr(s, 1, 2);
    let mulhu = rr(s, 1, 3);
    let dv: Vec<NodeId> = (4..8).map(|f| rr(s, 1, f)).collect(); // div divu rem remu
    let sh1 = rr(s, 0x10, 2);
    let sh2 = rr(s, 0x10, 4);
    let sh3 = rr(s, 0x10, 6);
    let is_fence = k8(s, 0x0f, 0);
    let is_ecall = s.eq_const(w, 0x0000_0073);
    let is_ebreak = s.eq_const(w, 0x0010_0073);
    let is_op = s.eq_const(op5, 0x33 >> 2);
    let is_branch = s.any(&br);
    let is_load = s.any(&ld);
    let is_store = s.any(&st);
    let is_div = s.any(&dv);
    let rd_writers = [
        is_lui, is_auipc, is_jal, is_jalr, addi, slti, sltiu, xori, ori, andi, slli, srli, srai, add, sub, sll, slt,
        sltu, xor, srl, sra, or, and, mul, mulh, mulhsu, mulhu, sh1, sh2, sh3, is_load,
    ];
    let writes_rd = s.any(&rd_writers);
    let legal = {
        let any_instr = s.any(&[writes_rd, is_branch, is_store, is_div, is_fence, is_ecall, is_ebreak]);
        let b0 = s.bit(w, 0);
        let b1 = s.bit(w, 1);
        s.all(&[any_instr, b0, b1])
    };
    let illegal = s.not(legal);

    // ---- immediates (Unpriv §2.3) -----------------------------------------------------------------------------
    let imm_i = {
        let x = s.slice(w, 20, 12);
        s.sext(x, 32)
    };
    let imm_s = {
        let lo = s.slice(w, 7, 5);
        let hi = s.slice(w, 25, 7);
        let x = s.concat(&[lo, hi]);
        s.sext(x, 32)
    };
    let imm_b = {
        let z = s.konst_masked(1, 0);
        let b1 = s.slice(w, 8, 4);
        let b5 = s.slice(w, 25, 6);
        let b11 = s.slice(w, 7, 1);
        let b12 = s.slice(w, 31, 1);
        let x = s.concat(&[z, b1, b5, b11, b12]);
        s.sext(x, 32)
    };
    let imm_u = {
        let z = s.konst_masked(12, 0);
        let hi = s.slice(w, 12, 20);
        s.concat(&[z, hi])
    };
    let imm_j = {
        let z = s.konst_masked(1, 0);
        let b1 = s.slice(w, 21, 10);
        let b11 = s.slice(w, 20, 1);
        let b12 = s.slice(w, 12, 8);
        let b20 = s.slice(w, 31, 1);
        let x = s.concat(&[z, b1, b11, b12, b20]);
        s.sext(x, 32)
    };
    Decode { imm_i, imm_u, is_op, is_div, is_ecall, imm_s, is_load, is_store, is_sys, ld, st, br, imm_b, imm_j, is_jal, is_jalr, add, addi, and, andi, illegal, is_auipc, is_ebreak, is_lui, mul, mulh, mulhsu, mulhu, or, ori, sh1, sh2, sh3, sll, slli, slt, slti, sltiu, sltu, sra, srai, srl, srli, sub, writes_rd, xor, xori }
}

/// pc as an address: the link value, the sequential pc, the last word of RAM.
fn pc_unit(s: &mut CircuitBuilder, ram: &Ram, fetch: &Fetch) -> PcUnit {
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

/// The ALU (Unpriv §2.4, Zba §2.1) and the M unit's one shared 64-bit product (Unpriv §7.1).
fn alu(s: &mut CircuitBuilder, fetch: &Fetch, decode: &Decode, pc_unit: &PcUnit) -> Alu {
    let Fetch { a, bv, f3, .. } = fetch.clone();
    let Decode { imm_i, imm_u, is_op, .. } = decode.clone();
    let PcUnit { pc_addr, .. } = pc_unit.clone();
    // ---- ALU (Unpriv §2.4, Zba §2.1) ---------------------------------------------------------------------------
    let op2 = s.select(is_op, bv, imm_i);
    let shamt = s.slice(op2, 0, 5);
    let r_add = s.add(a, op2);
    let r_sub = s.sub(a, bv);
    let r_sll = s.shift(ShiftKind::Shl, a, shamt);
    let r_srl = s.shift(ShiftKind::Shr, a, shamt);
    let r_sra = s.shift(ShiftKind::Sar, a, shamt);
    let r_slt = {
        let c = s.cmp(CmpKind::Lts, a, op2);
        s.zext(c, 32)
    };
    let r_sltu = {
        let c = s.cmp(CmpKind::Ltu, a, op2);
        s.zext(c, 32)
    };
    let r_xor = s.xor(a, op2);
    let r_or = s.or(a, op2);
    let r_and = s.and(a, op2);
    let r_sh: Vec<NodeId> = (1..=3)
        .map(|k| {
            let x = s.shift_const(ShiftKind::Shl, a, k);
            s.add(x, bv)
        })
        .collect();
    let r_auipc = s.add(pc_addr, imm_u);
    // M (Unpriv §7.1): ONE 64-bit product serves all four instructions. funct3 = 0 MUL, 1 MULH, 2 MULHSU,
    // 3 MULHU: rs1 is signed for MULH/MULHSU (f3[0] xor f3[1]), rs2 for MULH only (f3 == 1). Each operand is
    // sign- or zero-extended to 64 bits by that choice and the low 64 bits of the product are the exact
    // signed x signed, signed x unsigned or unsigned x unsigned product. MUL (the low word) does not depend
    // on the signedness. The weaver folds the repeated extension bits of the partial products into one
    // negated term each (Baugh-Wooley), so this costs about one unsigned 32 x 32 multiplier.
    let (r_mul, r_mulhi) = {
        let m0 = s.bit(f3, 0);
        let m1 = s.bit(f3, 1);
        let sa = s.xor(m0, m1);
        let nm1 = s.not(m1);
        let sb = s.and(m0, nm1);
        let a31 = s.bit(a, 31);
        let b31 = s.bit(bv, 31);
        let ea = s.and(sa, a31);
        let eb = s.and(sb, b31);
        let a33 = s.concat(&[a, ea]);
        let b33 = s.concat(&[bv, eb]);
        let a64 = s.sext(a33, 64);
        let b64 = s.sext(b33, 64);
        let p = s.mul_lo(a64, b64);
        (s.slice(p, 0, 32), s.slice(p, 32, 32))
    };
    Alu { r_add, r_and, r_auipc, r_mul, r_mulhi, r_or, r_sh, r_sll, r_slt, r_sltu, r_sra, r_srl, r_sub, r_xor }
}

/// The division micro-code (Unpriv §7.2): radix-16 restoring division on magnitudes. State: the register
/// `DIV_Q` (which costs no trace token while it keeps its value) and the scratch rows D (|d|) and R (the
/// partial remainder) of `X`.
///
/// - `BUSY = 0`: `DIV_Q = |rs1|`, row D = `|rs2|`.
/// - `BUSY = 1..=8`, iteration `i = BUSY - 1` on 4-bit group `g = 7 - i`: `X = 16·R + DIV_Q[g]` (R = 0 at
///   the first); the quotient digit `q` is the number of `j` in 1..16 with `X >= j·d`, all fifteen `X - j·d`
///   computed side by side as one weighted sum each ([`isa_api::Op::Sum`]); row R = `X - q·d` (selected, as the
///   differences are at hand) and `q` replaces the dividend digit it consumed, `DIV_Q[g]`. After the last,
///   `DIV_Q` is the quotient.
/// - `BUSY = 9`: rd = the quotient or remainder with its sign; the instruction retires.
///
/// Ten steps for every DIV/DIVU/REM/REMU. Division by zero gives `Q = 2^32 - 1` and `R = n` straight out of the
/// iteration (Table 7.1; DIV's quotient is not negated when the divisor is 0); signed overflow (`-2^31 / -1`)
/// gives `Q = 2^31`, not negated, and `R = 0`.
fn divider(s: &mut CircuitBuilder, fetch: &Fetch, decode: &Decode) -> Divider {
    let Fetch { a, busy, busy0, bv, f3, s_d, s_r, .. } = fetch.clone();
    let Decode { is_div, .. } = decode.clone();
    let f3b0 = s.bit(f3, 0);
    let f3b1 = s.bit(f3, 1);
    let div_signed = s.not(f3b0); // DIV, REM
    let div_rem = f3b1; // REM, REMU
    let a31 = s.bit(a, 31);
    let b31 = s.bit(bv, 31);
    let sn = s.and(div_signed, a31);
    let sd = s.and(div_signed, b31);
    let mag_n = {
        let na = s.neg(a);
        s.select(sn, na, a)
    };
    let mag_d = {
        let nb = s.neg(bv);
        s.select(sd, nb, bv)
    };
    let dq = s.reg(reg::DIV_Q, 32);
    let (dd, dr) = (s_d, s_r);
    let c1 = s.eq_const(busy, 1);
    let k = DIV_RADIX_BITS;
    let groups = 32 / k;
    // iteration i (BUSY = i + 1) consumes dividend group groups-1-i and decides quotient group groups-1-i
    let iter_at: Vec<NodeId> = (0..groups as u64).map(|i| s.eq_const(busy, i + 1)).collect();
    let group = |s: &mut CircuitBuilder, x: NodeId, g: u32| s.slice(x, g * k, k);
    let nb = {
        let cases: Vec<(NodeId, NodeId)> = (0..groups).map(|i| (iter_at[i as usize], group(s, dq, groups - 1 - i))).collect();
        s.and_or(k, &cases)
    };
    let z32 = s.konst_masked(32, 0);
    let r_in = s.select(c1, z32, dr);
    let x = s.concat(&[nb, r_in]); // 16·R + next digit of n, 36 bits
    let wide = 32 + k + 1;
    let diffs: Vec<NodeId> = (1..1u64 << k)
        .map(|j| {
            let mut terms = vec![isa_api::SumTerm { node: x, shift: 0, neg: false }];
            terms.extend((0..k).filter(|b| (j >> b) & 1 == 1).map(|b| isa_api::SumTerm { node: dd, shift: b, neg: true }));
            s.sum(wide, &terms, 0)
        })
        .collect();
    // ge[j - 1]: X >= j·d (the difference's sign bit is clear); a thermometer code in j.
    let ge: Vec<NodeId> = diffs.iter().map(|d| {
        let sign = s.bit(*d, wide - 1);
        s.not(sign)
    }).collect();
    let n = ge.len();
    let mut onehot = vec![s.not(ge[0])];
    for j in 1..n {
        let nxt = s.not(ge[j]);
        onehot.push(s.and(ge[j - 1], nxt));
    }
    onehot.push(ge[n - 1]);
    let r_next = {
        let mut cases = vec![(onehot[0], s.slice(x, 0, 32))];
        for j in 1..=n {
            cases.push((onehot[j], s.slice(diffs[j - 1], 0, 32)));
        }
        s.and_or(32, &cases)
    };
    let q_digit = {
        let cases: Vec<(NodeId, NodeId)> = (1..=n).map(|j| (onehot[j], s.konst_masked(k, j as u64))).collect();
        s.and_or(k, &cases)
    };
    let q_next = {
        let parts: Vec<NodeId> = (0..groups)
            .map(|g| {
                let old = group(s, dq, g);
                s.select(iter_at[(groups - 1 - g) as usize], q_digit, old)
            })
            .collect();
        s.concat(&parts)
    };
    let div_res = {
        let mag = s.select(div_rem, dr, dq);
        let d_nz = s.ne_const(dd, 0);
        let qs = s.xor(sn, sd);
        let qneg = s.and(qs, d_nz);
        let neg = s.select(div_rem, sn, qneg);
        let nm = s.neg(mag);
        s.select(neg, nm, mag)
    };
    let in_iter = {
        let hi = s.ltu_const(busy, DIV_ITERS + 1);
        let nz = s.not(busy0);
        s.and(hi, nz)
    };
    let d_c0 = s.and(is_div, busy0);
    let d_iter = s.and(is_div, in_iter);
    let d_fin = {
        let last = s.eq_const(busy, DIV_ITERS + 1);
        s.and(is_div, last)
    };
    let d_hold = s.or(d_c0, d_iter);
    let div_busy_next = {
        let one = s.konst_masked(BUSY_BITS, 1);
        s.add(busy, one)
    };
    let q_reg = {
        let q = s.select(d_iter, q_next, dq);
        s.select(d_c0, mag_n, q)
    };
    s.set_next(reg::DIV_Q, q_reg);
    Divider { c1, d_c0, d_fin, d_hold, d_iter, div_busy_next, div_res, mag_d, r_next }
}

/// ECALL (Unpriv §2.8; the Linux syscall ABI of qemu-riscv32): write(2) byte by byte, exit, bad
/// calls.
fn ecall(s: &mut CircuitBuilder, ram: &Ram, fetch: &Fetch, decode: &Decode, divider: &Divider) -> Ecall {
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
    Ecall { wr_addr, in_byte, rd_store, rd_req, rd_eof, rd_count, buf_bad, sys_bad, sys_exit, wr_addr1, wr_badfd, wr_cont, wr_done, wr_emit, wr_end1, wr_init, wr_len0 }
}

/// The effective address, its range check and the data access (Unpriv §2.6).
fn load_store(s: &mut CircuitBuilder, ram: &Ram, fetch: &Fetch, decode: &Decode, divider: &Divider, ecall: &Ecall) -> LoadStore {
    let Ram { aw, words, .. } = *ram;
    let Fetch { a, busy0, bv, s_n, w, .. } = fetch.clone();
    let Decode { imm_i, imm_s, is_load, is_store, is_sys, ld, st, .. } = decode.clone();
    let Divider { c1, .. } = divider.clone();
    let Ecall { wr_addr, in_byte, rd_store, .. } = ecall.clone();
    // ---- effective address, range check, byte lanes (Unpriv §2.6) ---------------------------------------------
    // ECALL has rs1 = x0 and imm = 0, so one adder serves loads, stores and the write's byte address.
    let st_bit = s.bit(w, 5); // opcode bit 5: STORE (0100011) vs LOAD (0000011)
    let imm_ls = s.select(st_bit, imm_s, imm_i);
    let ea_x = s.select(is_sys, wr_addr, imm_ls);
    let ea = s.add(a, ea_x);
    let (off, hi_ok) = ram_offset(s, ram, ea);
    let boff = s.slice(off, 0, 2);
    let sz2 = s.any(&[ld[1], ld[4], st[1]]);
    let sz4 = s.any(&[ld[2], st[2]]);
    let is_ls = s.or(is_load, is_store);
    let at: Vec<NodeId> = (0..4).map(|k| s.eq_const(boff, k)).collect();
    // Store data: byte i of the access's word(s) is rs2 rotated left by 8·boff.
    let rot = {
        let z = s.konst_masked(3, 0);
        s.concat(&[z, boff])
    };
    let sword = s.shift(ShiftKind::Rotl, bv, rot);
    let mut load_cases = Vec::new();
    let out_byte;
    // Words layout: the first step of an access crossing a word boundary (holds; a load saves the first word in
    // scratch row N, a store writes the first word's bytes).
    let mut ls_hold = None;
    let mut ld_hold = None;
    let mut word_read = None;
    let data_plan;
    if words {
        let ph1 = s.and(is_ls, c1); // second step of a crossing access: the next word
        let row0 = s.slice(off, 2, aw);
        let z = s.konst_masked(aw, 0);
        let row = s.add_c(row0, z, ph1);
        let word = s.load(mem::RAM0, 32, row);
        let wb: Vec<NodeId> = (0..4).map(|j| s.slice(word, 8 * j, 8)).collect();
        let nb: Vec<NodeId> = (0..4).map(|j| s.slice(s_n, 8 * j, 8)).collect();
        // First step of a crossing access: (halfword at offset 3 or word at offset 1..3) and BUSY = 0, as
        // equalities over (boff, half, word, busy0): two threshold levels after the address.
        let crossing_first = |s: &mut CircuitBuilder, half: NodeId, word: NodeId| {
            let key = s.concat(&[boff, half, word, busy0]);
            let pats: Vec<NodeId> = [3u64 | 1 << 2, 1 | 1 << 3, 2 | 1 << 3, 3 | 1 << 3].iter().map(|p| s.eq_const(key, p | 1 << 4)).collect();
            s.any(&pats)
        };
        let hold = crossing_first(s, sz2, sz4);
        let ld_half = s.or(ld[1], ld[4]);
        ld_hold = Some(crossing_first(s, ld_half, ld[2]));
        ls_hold = Some(hold);
        for k in 0..4usize {
            for (t, n) in [1usize, 2, 4, 1, 2].into_iter().enumerate() {
                // Byte j of the value: byte k + j of the first word (this step's word, or row N in the second
                // step of a crossing load), then bytes of the second word.
                let crossing = k + n > 4;
                let bytes: Vec<NodeId> = (0..n).map(|j| if k + j < 4 { if crossing { nb[k + j] } else { wb[k + j] } } else { wb[k + j - 4] }).collect();
                let raw = s.concat(&bytes);
                let v = if t < 3 { s.sext(raw, 32) } else { s.zext(raw, 32) };
                let sel = if crossing { s.all(&[ld[t], at[k], c1]) } else { s.and(ld[t], at[k]) };
                load_cases.push((sel, v));
            }
        }
        out_byte = {
            let c: Vec<(NodeId, NodeId)> = (0..4).map(|k| (at[k], wb[k])).collect();
            s.and_or(8, &c)
        };
        // Read-modify-write: byte i of the written word is new iff the access covers it in this step.
        let key = s.concat(&[boff, c1]);
        let mut new_bytes = Vec::new();
        for (i, old_byte) in wb.iter().enumerate() {
            let mut hits = Vec::new();
            for (t, n) in [1usize, 2, 4].into_iter().enumerate() {
                for k in 0..4usize {
                    for p in 0..2usize {
                        let covers = if p == 0 { k <= i && i < k + n } else { k + n > 4 && i < k + n - 4 };
                        if covers {
                            let kk = s.concat(&[key, st[t]]);
                            hits.push(s.eq_const(kk, (k | p << 2 | 1 << 3) as u64));
                        }
                    }
                }
            }
            let m = s.any(&hits);
            let nbyte = s.slice(sword, 8 * i as u32, 8);
            // read(2): the input byte goes to byte boff of the word.
            let rk = s.concat(&[boff, rd_store]);
            let r_i = s.eq_const(rk, i as u64 | 1 << 2);
            let keep = s.any(&[m, r_i]);
            let nkeep = s.not(keep);
            new_bytes.push(s.and_or(8, &[(m, nbyte), (r_i, in_byte), (nkeep, *old_byte)]));
        }
        let new_word = s.concat(&new_bytes);
        data_plan = DataPlan::Word { row, data: new_word };
        word_read = Some(word);
    } else {
        // Lane i holds byte (i - boff) mod 4 of the access, in row (off + 3 - i) >> 2.
        let rows: Vec<NodeId> = (0..4u64)
            .map(|i| {
                let x = if i == 3 {
                    off
                } else {
                    let c = s.konst_masked(aw + 2, 3 - i);
                    s.add(off, c)
                };
                s.slice(x, 2, aw)
            })
            .collect();
        let lanes: Vec<NodeId> = (0..4).map(|i| s.load(mem::RAM0 + i, 8, rows[i as usize])).collect();
        // Loaded values per byte offset k: byte j of the access is lane (k + j) mod 4.
        for k in 0..4usize {
            let l = |j: usize| lanes[(k + j) % 4];
            let half = s.concat(&[l(0), l(1)]);
            let word = s.concat(&[l(0), l(1), l(2), l(3)]);
            let vals = [s.sext(l(0), 32), s.sext(half, 32), word, s.zext(l(0), 32), s.zext(half, 32)];
            for (t, v) in vals.into_iter().enumerate() {
                let sel = s.and(ld[t], at[k]);
                load_cases.push((sel, v));
            }
        }
        out_byte = {
            let c: Vec<(NodeId, NodeId)> = (0..4).map(|k| (at[k], lanes[k])).collect();
            s.and_or(8, &c)
        };
        data_plan = DataPlan::Lanes { rows };
    }
    LoadStore { boff, data_plan, ea, hi_ok, is_ls, ld_hold, load_cases, ls_hold, off, out_byte, sword, sz2, sz4, word_read }
}

/// Control transfers (Unpriv §2.5): branch condition, targets, misaligned and out-of-RAM jumps.
fn control(s: &mut CircuitBuilder, ram: &Ram, fetch: &Fetch, decode: &Decode) -> Control {
    let Ram { aw, .. } = *ram;
    let Fetch { a, bv, pc, .. } = fetch.clone();
    let Decode { br, imm_b, imm_i, imm_j, is_jal, is_jalr, .. } = decode.clone();
    // ---- control transfers (Unpriv §2.5) -----------------------------------------------------------------------
    let taken = {
        let eq = s.eq(a, bv);
        let ne = s.not(eq);
        let lt = s.cmp(CmpKind::Lts, a, bv);
        let ge = s.not(lt);
        let ltu = s.cmp(CmpKind::Ltu, a, bv);
        let geu = s.not(ltu);
        let c: Vec<(NodeId, NodeId)> = br.iter().zip([eq, ne, lt, ge, ltu, geu]).map(|(x, y)| (*x, y)).collect();
        s.and_or(1, &c)
    };
    let jumps = s.any(&[is_jal, is_jalr, taken]);
    // pc-relative targets (JAL, branches) in the word-index domain: s = pc + imm/4, in RAM iff 0 <= s < 2^aw.
    let rel_imm = s.select(is_jal, imm_j, imm_b);
    let ww = aw.max(20) + 2;
    let (rel_pc, rel_ok) = {
        let p = s.zext(pc, ww);
        let i4 = s.slice(rel_imm, 2, ww);
        let t = s.add(p, i4);
        let hi = s.slice(t, aw, ww - aw);
        let ok = s.eq_const(hi, 0);
        (s.slice(t, 0, aw), ok)
    };
    let rel_mis = s.bit(rel_imm, 1);
    // JALR: (rs1 + imm) with bit 0 cleared (bit 0 does not affect the word index or bit 1).
    let jt = s.add(a, imm_i);
    let jt_mis = s.bit(jt, 1);
    let (jt_off, jt_ok) = ram_offset(s, ram, jt);
    let jt_pc = s.slice(jt_off, 2, aw);
    let pc_jump = s.select(is_jalr, jt_pc, rel_pc);
    let t_mis = s.select(is_jalr, jt_mis, rel_mis);
    let t_ok = s.select(is_jalr, jt_ok, rel_ok);
    let jmp_mis = s.and(jumps, t_mis);
    let jmp_oor = {
        let nm = s.not(t_mis);
        let no = s.not(t_ok);
        s.all(&[jumps, nm, no])
    };
    Control { jmp_mis, jmp_oor, jt, jt_mis, jt_ok, jumps, pc_jump, rel_imm, rel_mis, rel_ok, t_mis }
}

/// The step outcome: next pc and BUSY, register-file and RAM writes, the ports, halt; and the
/// description.
#[allow(clippy::too_many_arguments)]
fn commit(s: &mut CircuitBuilder, ram: &Ram, fetch: &Fetch, decode: &Decode, pc_unit: &PcUnit, alu: &Alu, divider: &Divider, ecall: &Ecall, load_store: &LoadStore, control: &Control) -> Result<MachineDesc, CircuitError> {
    let Ram { aw, size, words, .. } = *ram;
    let Fetch { a0, a1, a2, pc, rd, rd6, stopping, .. } = fetch.clone();
    let Decode { add, addi, and, andi, illegal, imm_u, is_auipc, is_ebreak, is_jal, is_jalr, is_load, is_lui, is_store, mul, mulh, mulhsu, mulhu, or, ori, sh1, sh2, sh3, sll, slli, slt, slti, sltiu, sltu, sra, srai, srl, srli, st, sub, writes_rd, xor, xori, .. } = decode.clone();
    let PcUnit { link, pc_addr, pc_last, pc_seq, .. } = pc_unit.clone();
    let Alu { r_add, r_and, r_auipc, r_mul, r_mulhi, r_or, r_sh, r_sll, r_slt, r_sltu, r_sra, r_srl, r_sub, r_xor, .. } = alu.clone();
    let Divider { d_c0, d_fin, d_hold, d_iter, div_busy_next, div_res, mag_d, r_next, .. } = divider.clone();
    let Ecall { buf_bad, sys_bad, sys_exit, wr_addr1, wr_badfd, wr_cont, wr_done, wr_emit, wr_end1, wr_init, wr_len0, in_byte, rd_store, rd_req, rd_eof, rd_count, .. } = ecall.clone();
    let LoadStore { boff, data_plan, ea, hi_ok, is_ls, ld_hold, load_cases, ls_hold, off, out_byte, sword, sz2, sz4, word_read, .. } = load_store.clone();
    let Control { jmp_mis, jmp_oor, jt, jt_mis, jt_ok, jumps, pc_jump, rel_imm, rel_mis, rel_ok, t_mis, .. } = control.clone();
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
    // `raw` AND no effect-suppressing fault, in one threshold level.
    let gate = |s: &mut CircuitBuilder, raw: NodeId| {
        let mut v = vec![raw];
        v.extend(&not_eff);
        s.all(&v)
    };
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

    // Register-file write: rd, a scratch row or a0, one-hot; data need not be gated (NONE when disabled).
    let mut cases: Vec<(NodeId, NodeId)> = vec![(is_lui, imm_u), (is_auipc, r_auipc), (is_jal, link), (is_jalr, link)];
    cases.extend(load_cases);
    if let (Some(h), Some(wd)) = (ld_hold, word_read) {
        cases.push((h, wd)); // first word of a crossing load -> row N
    }
    cases.extend([(addi, r_add), (add, r_add), (sub, r_sub), (slti, r_slt), (slt, r_slt), (sltiu, r_sltu), (sltu, r_sltu)]);
    cases.extend([(xori, r_xor), (xor, r_xor), (ori, r_or), (or, r_or), (andi, r_and), (and, r_and)]);
    cases.extend([(slli, r_sll), (sll, r_sll), (srli, r_srl), (srl, r_srl), (srai, r_sra), (sra, r_sra)]);
    cases.extend([(mul, r_mul), (mulh, r_mulhi), (mulhsu, r_mulhi), (mulhu, r_mulhi)]);
    cases.extend([(sh1, r_sh[0]), (sh2, r_sh[1]), (sh3, r_sh[2]), (d_fin, div_res)]);
    let ebadf = s.konst_masked(32, NEG_EBADF);
    cases.extend([(d_c0, mag_d), (d_iter, r_next)]);
    cases.extend([(wr_init, wr_end1), (wr_cont, wr_addr1), (wr_badfd, ebadf), (wr_len0, a2), (wr_done, a2), (rd_eof, rd_count)]);
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
    let we_x = gate(s, we_any);

    // Next pc and BUSY.
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
                let en = gate(s, raw);
                let st_byte = s.slice(sword, 8 * i as u32, 8);
                let data = s.select(rd_i, in_byte, st_byte);
                s.mem_write(mem::RAM0 + i as u32, rows[i as usize], data, en);
            }
        }
        DataPlan::Word { row, data, .. } => {
            let st_any = s.or(is_store, rd_store);
            let en = gate(s, st_any);
            s.mem_write(mem::RAM0, *row, *data, en);
        }
    }
    s.mem_write(mem::X, x_addr, x_data, we_x);
    let out_en = gate(s, wr_emit);
    s.output(port::OUT, out_byte, out_en);
    let req_en = gate(s, rd_req);
    let one_bit = s.konst_masked(1, 1);
    s.output(port::IN_REQ, one_bit, req_en);
    let exit_en = gate(s, sys_exit);
    let exit_v = s.slice(a0, 0, 8);
    s.output(port::EXIT, exit_v, exit_en);
    s.output(port::FAULT, fault_code, fault);
    s.set_next(reg::PC, pc_next);
    s.set_next(reg::BUSY, busy_next);
    s.halt(stopping);

    let mut memories = vec![MemoryDesc { name: "X".into(), word_width: 32, addr_width: 6 }];
    if words {
        memories.push(MemoryDesc { name: "RAM".into(), word_width: 32, addr_width: aw });
    } else {
        memories.extend((0..4).map(|i| MemoryDesc { name: format!("RAM{i}"), word_width: 8, addr_width: aw }));
    }
    let mut desc = MachineDesc::new(
        "rv32im",
        vec![
            RegisterDesc { name: "PC".into(), width: aw },
            RegisterDesc { name: "BUSY".into(), width: BUSY_BITS },
            RegisterDesc { name: "DIV_Q".into(), width: 32 },
        ],
        memories,
        vec![
            PortDesc::new("OUT", 8).with_role(PortRole::Console),
            PortDesc::new("EXIT", 8).with_role(PortRole::Exit),
            PortDesc::new("FAULT", 40).with_role(PortRole::Fault),
            PortDesc::new("IN_REQ", 1),
        ],
        s.circuit.clone(),
    );
    desc.face.inputs = vec![PortDesc::new("STDIN", 8), PortDesc::new("STDIN_EOF", 1)];
    // BUSY sequences the micro-coded instructions (DIV/REM, write(2), word-crossing accesses).
    desc.micro_step = Some(reg::BUSY);
    Ok(desc)
}

/// RAM bytes (from the RAM base) as the words of the machine's RAM memories, in memory order from
/// [`mem::RAM0`]: four byte lanes, or one memory of little-endian 32-bit words.
pub fn ram_image(bytes: &[u8], layout: MemoryLayout) -> Vec<Vec<u64>> {
    match layout {
        MemoryLayout::ByteLanes => (0..4).map(|l| bytes.iter().skip(l).step_by(4).map(|b| *b as u64).collect()).collect(),
        MemoryLayout::Words => {
            vec![bytes.chunks(4).map(|c| c.iter().rev().fold(0u64, |a, b| a << 8 | *b as u64)).collect()]
        }
    }
}

/// A hart run by the reference evaluator straight from the circuit, with the host's view of the ports.
#[derive(Clone, Debug)]
pub struct CircuitHart {
    /// The evaluator (description, protocol, state).
    pub reference: isa_api::Reference,
    opts: Rv32MachineOptions,
    /// Standard input not delivered yet, and whether the last step asked for a byte (`IN_REQ`): the next
    /// step gets it on `STDIN`, or `STDIN_EOF` when there is none, as a host's devices inject them.
    input: std::collections::VecDeque<u8>,
    asked: bool,
}

/// What one circuit step did, as the host sees it in the trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HartStep {
    /// The step was `HALT`.
    pub halted: bool,
    /// `BUSY` was 0 after the step: one instruction retired.
    pub retired: bool,
    /// Console byte on `OUT`.
    pub out: Option<u8>,
    /// Exit status on `EXIT`.
    pub exit: Option<u8>,
    /// Fault code on `FAULT` (its code byte; see [`FaultCode::from_value`]).
    pub fault: Option<u8>,
    /// The faulting address on `FAULT` ([`fault_address`]).
    pub fault_addr: Option<u32>,
}

impl CircuitHart {
    /// A circuit hart in the exact state of `cpu` (pc, x0..x31, RAM). The RAM geometry must match `opts`.
    pub fn from_cpu(cpu: &crate::Cpu, opts: &Rv32MachineOptions) -> Result<CircuitHart, HartError> {
        let desc = rv32im_machine(opts)?;
        let ram = cpu.ram();
        if ram.base() != opts.ram_base || ram.size() != opts.ram_size {
            return Err(HartError::RamMismatch { base: ram.base(), size: ram.size() });
        }
        let pc_off = cpu.pc().wrapping_sub(opts.ram_base);
        if !cpu.pc().is_multiple_of(4) || pc_off >= opts.ram_size {
            return Err(HartError::BadPc(cpu.pc()));
        }
        let mut reference = isa_api::Reference::new(desc);
        // As the prompt presets it (`ProgramImage::pc_preset`): the value and the trace's latest PC chunks.
        reference.preset(&[(reg::PC, (pc_off / 4) as u64)]);
        let xs: Vec<u64> = cpu.regs().iter().map(|v| *v as u64).collect();
        reference.load(mem::X, 0, &xs);
        for (m, words) in ram_image(ram.bytes(), opts.layout).iter().enumerate() {
            reference.load(mem::RAM0 + m as u32, 0, words);
        }
        Ok(CircuitHart { reference, opts: *opts, input: cpu.pending_input().iter().copied().collect(), asked: false })
    }

    /// Loads an ELF executable exactly as [`crate::load_elf`] does for the interpreter (pc = entry, sp =
    /// [`crate::elf::initial_sp`]).
    pub fn load_elf(bytes: &[u8], opts: &Rv32MachineOptions) -> Result<CircuitHart, HartError> {
        opts.validate()?;
        let cpu = crate::load_elf(bytes, opts.interp_config())?;
        Self::from_cpu(&cpu, opts)
    }

    /// pc as a byte address.
    pub fn pc(&self) -> u32 {
        self.opts.ram_base.wrapping_add((self.reference.state.regs[reg::PC as usize] as u32) << 2)
    }

    /// Register `x[i]` (from the register-file memory).
    pub fn x(&self, i: usize) -> u32 {
        self.reference.state.mems[mem::X as usize].get(i).copied().unwrap_or(0) as u32
    }

    /// x0..x31.
    pub fn regs(&self) -> [u32; 32] {
        std::array::from_fn(|i| self.x(i))
    }

    /// The `BUSY` register.
    pub fn busy(&self) -> u64 {
        self.reference.state.regs[reg::BUSY as usize]
    }

    /// The byte at `addr`, if in RAM.
    pub fn ram_byte(&self, addr: u32) -> Option<u8> {
        let off = addr.checked_sub(self.opts.ram_base)?;
        if off >= self.opts.ram_size {
            return None;
        }
        Some(match self.opts.layout {
            MemoryLayout::ByteLanes => self.reference.state.mems[(mem::RAM0 + off % 4) as usize][(off / 4) as usize] as u8,
            MemoryLayout::Words => (self.reference.state.mems[mem::RAM0 as usize][(off / 4) as usize] >> (8 * (off % 4))) as u8,
        })
    }

    /// One machine step.
    pub fn step(&mut self) -> HartStep {
        if std::mem::take(&mut self.asked) {
            match self.input.pop_front() {
                Some(b) => self.reference.inject(input::STDIN, u64::from(b)),
                None => self.reference.inject(input::STDIN_EOF, 1),
            }
        }
        let o = self.reference.step();
        if o.halted {
            return HartStep { halted: true, ..Default::default() };
        }
        let mut h = HartStep { retired: self.busy() == 0, ..Default::default() };
        for (p, v) in o.outputs {
            match p {
                port::OUT => h.out = Some(v as u8),
                port::EXIT => h.exit = Some(v as u8),
                port::FAULT => {
                    h.fault = Some(v as u8);
                    h.fault_addr = fault_address(v);
                }
                port::IN_REQ => self.asked = true,
                _ => {}
            }
        }
        h
    }

    /// Steps until one instruction retires or the machine stops (at most `max_steps` steps); returns the
    /// console bytes written on the way, the stop (if any) and the steps taken.
    pub fn step_instruction(&mut self, max_steps: usize) -> InstrOutcome {
        let mut o = InstrOutcome::default();
        while o.steps < max_steps {
            let h = self.step();
            o.steps += 1;
            o.out.extend(h.out);
            if h.halted {
                o.halted = true;
                return o;
            }
            if h.exit.is_some() {
                o.exit = h.exit;
            }
            if h.fault.is_some() {
                o.fault = h.fault.and_then(|v| FaultCode::from_value(v as u64));
                o.fault_addr = h.fault_addr;
            }
            if h.retired {
                o.retired = true;
                return o;
            }
        }
        o
    }
}

/// Result of [`CircuitHart::step_instruction`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstrOutcome {
    /// One instruction retired.
    pub retired: bool,
    /// The machine halted (after an exit or a fault).
    pub halted: bool,
    /// Exit status emitted.
    pub exit: Option<u8>,
    /// Fault emitted.
    pub fault: Option<FaultCode>,
    /// The faulting address emitted with it ([`fault_address`]).
    pub fault_addr: Option<u32>,
    /// Console bytes.
    pub out: Vec<u8>,
    /// Machine steps taken.
    pub steps: usize,
}

/// Why a circuit hart could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HartError {
    /// Bad RAM geometry.
    #[error(transparent)]
    Circuit(#[from] CircuitError),
    /// The ELF could not be loaded.
    #[error(transparent)]
    Elf(#[from] crate::ElfError),
    /// The interpreter's RAM differs from the circuit's.
    #[error("interpreter RAM {size:#x} bytes at {base:#010x} differs from the circuit's RAM")]
    RamMismatch { base: u32, size: u32 },
    /// pc not 4-aligned or outside RAM.
    #[error("pc {0:#010x} is misaligned or outside RAM")]
    BadPc(u32),
}
