//! The ports section: the machine's output ports and what the circuit writes on them (`FAULT`, the configured
//! `OUT` and `EXIT`, and in the NES map `IO_WRITE`, `IO_READ` and `OAM_DMA`), and the NES map's IO ranges.

use super::Ctx;
use super::execute::Execute;
use super::fetch::Fetch;
use super::nes_read::NesRead;
use super::operands::Operands;
use super::state::State;
use super::writes::Writes;
use crate::face::{Mos6502Options, PrgBanking, input};
use isa_api::circuit::{CircuitBuilder, NodeId};
use isa_api::{IoRange, PortDesc, PortRole};

/// What the ports section returns: the machine's output ports and the IO ranges that name them.
pub(super) struct Ports {
    /// In port order: `FAULT`, the configured `OUT` and `EXIT`, and in the NES map `IO_WRITE`, `IO_READ`, `OAM_DMA`.
    pub ports: Vec<PortDesc>,
    /// The NES map's IO ranges (empty in the flat map).
    pub io_ranges: Vec<IoRange>,
}

/// The ports section: `FAULT` (opcode and PC of a JAM or unstable opcode), the configured `OUT` and `EXIT` (the
/// writes' `port_writes`), and in the NES map `IO_WRITE`, `IO_READ` and `OAM_DMA` with their IO ranges.
pub(super) fn ports(
    cx: &mut Ctx,
    opts: &Mos6502Options,
    st: &State,
    f: &Fetch,
    o: &Operands,
    e: &Execute,
    w: &Writes,
) -> Ports {
    let s = &mut *cx.s;
    let bus = NesBus {
        rom: o.data.rom,
        operand: o.data.operand,
        f_store: w.f_store,
        store_val: w.store_val,
        rmw_val: e.rmw.value,
        ea: o.data.ea,
        io_write: w.io_write,
        io_read_word: e.cycles.io_read_word,
        io_read: o.io_read,
        dma_step: st.kind.dma_step,
    };
    let fault_code = s.concat(&[f.b[0], st.cpu.pc]);
    let mut ports = vec![PortDesc::new("FAULT", 24).with_role(PortRole::Fault)];
    s.output(0, fault_code, f.fault);
    for &(kind, en) in &w.port_writes {
        let (name, role) = if kind == 1 { ("OUT", PortRole::Console) } else { ("EXIT", PortRole::Exit) };
        s.output(ports.len() as u32, bus.store_val, en);
        ports.push(PortDesc::new(name, 8).with_role(role));
    }
    let io_ranges = match &o.data.nes_data {
        Some(read) if opts.nes => nes_ports(s, &mut ports, opts.prg.banking, read, &o.data.dwords, bus),
        _ => Vec::new(),
    };
    Ports { ports, io_ranges }
}

/// NES map: the step's bus signals that the IO ports carry.
#[derive(Clone, Copy)]
struct NesBus {
    /// `ea` is in $8000-$FFFF (1 bit).
    rom: NodeId,
    /// The byte read at `ea` (a read-modify-write's first, unmodified write).
    operand: NodeId,
    /// The instruction is a plain store (1 bit); its value `store_val`, else the read-modify-write's `rmw_val`.
    f_store: NodeId,
    store_val: NodeId,
    rmw_val: NodeId,
    /// The effective address (16 bits).
    ea: NodeId,
    /// The step writes an IO register or the mapper (1 bit).
    io_write: NodeId,
    /// The IO read's request (address and the cycle within the instruction, 20 bits), sent when `io_read` is set.
    io_read_word: NodeId,
    io_read: NodeId,
    /// The step copies four OAM DMA bytes (1 bit).
    dma_step: NodeId,
}

/// NES map: the ports `IO_WRITE`, `IO_READ` and `OAM_DMA` (appended to `ports`) and the IO ranges that name
/// them. `read` is the data read (its PRG ROM words feed the DMA), `dwords` the four banks' bytes at the
/// DMA's row.
fn nes_ports(s: &mut CircuitBuilder, ports: &mut Vec<PortDesc>, banking: PrgBanking, read: &NesRead, dwords: &[NodeId], w: NesBus) -> Vec<IoRange> {
    let NesBus { rom, operand, f_store, store_val, rmw_val, ea, io_write, io_read_word, io_read, dma_step } = w;
    let mut io_ranges = Vec::new();
    // MMC1 takes a read-modify-write's first (unmodified) write to $8000-$FFFF and ignores the second: the
    // host's board gets that one.
    let data = if banking == PrgBanking::Mmc1 {
        let rmw_data = s.select(rom, operand, rmw_val);
        s.select(f_store, store_val, rmw_data)
    } else {
        s.select(f_store, store_val, rmw_val)
    };
    // The byte and the register's code gated by the port's enable (as `Ctx::gated`): a store's or a
    // read-modify-write's value and the effective address move at most steps, and the port's staging with them
    // where they were not gated.
    let data = {
        let en = s.sext(io_write, 8);
        s.and(data, en)
    };
    // The register's code (`crate::face::nes_io_write_code`): ea[0..5], and its region above them, by a lookup
    // over A13-A15 and whether A5-A12 are all 0 (the $40xx page's registers): `4 | A13 | A14 << 1` from $8000,
    // 0 the PPU's, 1 the APU's and pads', 2 the expansion area.
    let code = {
        let lo5 = s.slice(ea, 0, 5);
        let mid = s.slice(ea, 5, 8);
        let low_page = s.eq_const(mid, 0);
        let hi3 = s.slice(ea, 13, 3);
        // Key bits: A13, A14, A15, low_page.
        let key = s.concat(&[hi3, low_page]);
        let region = |k: u64| -> u64 {
            match (k & 7, k >> 3) {
                (h, _) if h >= 4 => 4 | (h & 3),
                (1, _) => 0,
                (_, 1) => 1,
                _ => 2,
            }
        };
        let bits: Vec<NodeId> = (0..3).map(|b| s.truth_table(key, move |k| region(k) >> b & 1 == 1)).collect();
        let code = s.concat(&[&[lo5][..], &bits].concat());
        let en = s.sext(io_write, 8);
        s.and(code, en)
    };
    let word = s.concat(&[code, data]);
    let (write_port, read_port) = (ports.len() as u32, ports.len() as u32 + 1);
    s.output(write_port, word, io_write);
    ports.push(PortDesc::new("IO_WRITE", 16));
    s.output(read_port, io_read_word, io_read);
    ports.push(PortDesc::new("IO_READ", 8));
    // Four bytes of the page: the banks' (RAM, PRG RAM), or one PRG ROM word; 0 on the IO pages, and in every
    // step but a DMA's (its selects take `dma_step`, so that the select holds still while the data address
    // and the words read there move, as in most steps).
    let oam = {
        let lo3 = s.slice(ea, 0, 3);
        let hi3 = s.slice(ea, 13, 3);
        let key = s.concat(&[lo3, hi3, dma_step]);
        // key bits: addr[0..3] (lo), addr[13..16] (hi), dma_step.
        let dma = |v: u64| v >> 6 == 1;
        let ram = s.truth_table(key, move |v| dma(v) && (v >> 3 & 7 == 0 || v >> 3 & 7 == 3));
        let even = s.truth_table(key, move |v| dma(v) && v >> 3 & 7 >= 4 && v & 7 < 4);
        let odd = s.truth_table(key, move |v| dma(v) && v >> 3 & 7 >= 4 && v & 7 >= 4);
        let banks = s.concat(dwords);
        s.one_hot(32, &[(ram, banks), (even, read.prg[0]), (odd, read.prg[1])])
    };
    s.output(read_port + 1, oam, dma_step);
    ports.push(PortDesc::new("OAM_DMA", 32));
    for (name, base, size) in [("PPU", 0x2000, 0x2000), ("APU_IO", 0x4000, 0x2000)] {
        io_ranges.push(IoRange {
            name: name.into(),
            base,
            size,
            write_port: Some(write_port),
            read_request_port: Some(read_port),
            read_port: Some(input::IO_DATA),
        });
    }
    // The PRG ROM reads from memory; its stores go to the cartridge's mapper on the same port.
    io_ranges.push(IoRange { name: "MAPPER".into(), base: 0x8000, size: 0x8000, write_port: Some(write_port), read_request_port: None, read_port: None });
    io_ranges
}
