//! The 2A03 (NMOS 6502 without BCD) as an `isa-api` circuit: one instruction per machine step.
//!
//! The semantics follow the NESdev wiki's CPU pages ("CPU addressing modes", "CPU unofficial opcodes", "Status
//! flags", "CPU interrupts") and the cycle tables of `6502_cpu.txt`; the interpreter [`crate::Cpu`] is the oracle
//! (`tests/circuit.rs` runs both, and both against nestest's log and Tom Harte's tests). The machine's state, its
//! options and indices are in [`crate::face`] (re-exported here).
//!
//! # Why four banks
//!
//! A Gated DeltaNet memory takes at most one write per step, and a read costs one block of heads per 256 rows.
//! Up to four consecutive bytes (an opcode and its operands; three stack bytes; a pointer) lie in four
//! different banks, so one read of each bank at the right row fetches them all for the heads of one 64 KiB
//! read, and JSR's two and BRK's three pushes are one write per bank. An instruction is therefore one step:
//! fetch (level A: the opcode and two operand bytes), the pointer read (level B: a zero-page pointer, JMP's
//! indirect pointer, the bytes an RTS/RTI/PLA/PLP pulls, or an interrupt vector), the data read (level C:
//! the byte at the effective address), then the ALU and the writes.
//!
//! The dummy reads and the first write of a read-modify-write do not reach RAM-like memory and are not modelled;
//! their cycles are counted.
//!
//! # Sections
//!
//! [`mos6502_machine`] calls them in order (the order of the circuit's nodes): `state` (registers, inputs, the
//! step's kind), `fetch` (level A and the decode tables of `decode`), `operands` (the addresses, levels B and C),
//! `execute` (read-modify-write and ALU of `alu`, the registers' and flags' cases, the PC and cycles of `pc`),
//! `writes` (stores and pushes), `next` (every register's next value), `commit` and `ports`. `banks`, `nes_read`
//! and `mapper` are the memory reads and writes they share.

mod alu;
mod banks;
mod commit;
mod decode;
mod execute;
mod fetch;
mod mapper;
mod nes_read;
mod next;
mod operands;
mod pc;
mod ports;
mod state;
mod writes;

pub use crate::face::{
    BUSY_DMA, BUSY_STOPPING, Mos6502Options, PrgBanking, PrgRom, bank_byte_address, init_row, input,
    io_read_port, mem, nes_bank_address, reg,
};
use crate::face::{bank_row_bits, machine_desc};
use isa_api::MachineDesc;
use isa_api::circuit::{CircuitBuilder, NodeId};

/// The builder and what the sections share: the 1-bit constants 1 and 0, the byte banks' row width and (NES map)
/// the PRG ROM and its bank registers. Every multiplexer is a one-hot select ([`Op::OneHot`]: one threshold
/// layer), its cases exclusive by construction.
///
/// [`Op::OneHot`]: isa_api::Op::OneHot
struct Ctx<'a> {
    /// The circuit so far (its generic gates: [`CircuitBuilder`]'s methods).
    s: &'a mut CircuitBuilder,
    /// The 1-bit constants 1 and 0.
    one: NodeId,
    zero: NodeId,
    /// Row address width of the four byte banks ([`crate::face::ROW_BITS`], or [`crate::face::NES_ROW_BITS`] in
    /// the NES map).
    row_bits: u32,
    /// NES map: the PRG ROM, and its banking registers ([`mapper::prg_bank_registers`], read by [`state::state`]).
    prg: PrgRom,
    prg_regs: Vec<NodeId>,
}

impl<'a> Ctx<'a> {
    /// `v` where `en` is 1, else 0: an operand gated by the one case that reads the value computed from it.
    /// Where `en` is 0 the gated word holds still while `v` moves, so the units computing from it keep their
    /// values (the sums of indexed addresses and branch targets then change only in the instructions that use
    /// them: a woven unit that does not change costs the incremental executor nothing).
    fn gated(&mut self, v: NodeId, en: NodeId) -> NodeId {
        let w = self.s.width(v);
        let mask = self.s.sext(en, w);
        self.s.and(v, mask)
    }

    /// The constants 1 and 0 (the circuit's first two nodes) and `opts`' layout.
    fn new(s: &'a mut CircuitBuilder, opts: &Mos6502Options) -> Self {
        let one = s.konst(1, 1);
        let zero = s.konst(1, 0);
        let prg = if opts.nes { opts.prg } else { PrgRom::default() };
        Ctx { s, one, zero, row_bits: bank_row_bits(opts), prg, prg_regs: Vec::new() }
    }
}

/// The machine description of the 2A03 with `opts`' console and exit addresses: the sections in order (see the
/// module's doc), one call each.
pub fn mos6502_machine(opts: &Mos6502Options) -> MachineDesc {
    let mut b = CircuitBuilder::new();
    let cx = &mut Ctx::new(&mut b, opts);
    let state = state::state(cx, opts);
    let fetch = fetch::fetch(cx, opts, &state);
    let ops = operands::operands(cx, opts, &state, &fetch);
    let exec = execute::execute(cx, opts, &state, &fetch, &ops);
    let writes = writes::writes(cx, opts, &state, &fetch, &ops, &exec);
    let next = next::next(cx, opts, &state, &fetch, &ops, &exec, &writes);
    commit::commit(cx, opts, &next);
    let ports = ports::ports(cx, opts, &state, &fetch, &ops, &exec, &writes);
    cx.s.halt(state.kind.stopping);
    machine_desc(opts, b.finish(), ports.ports, ports.io_ranges)
}
