//! The 2A03's front: its `[machine]` keys, the program loader (iNES ROMs with mapper 0, raw binaries), the
//! built-in demo, the host devices of a run, and the trace check against the interpreter.
//!
//! ```toml
//! [machine]
//! isa = "6502"
//! map = "flat"          # the whole 64 KiB address space is RAM
//! console = 0xF001      # optional: a store here is a console byte (port OUT)
//! exit = 0xF002         # optional: a store here ends the program with that exit status (port EXIT)
//! load_at = 0x0400      # where a raw binary goes (default 0x0000)
//! entry = 0x0400        # optional: the first PC (default: the reset vector where the program sets
//!                       # $FFFC-$FFFD, else load_at)
//! ```
//!
//! An iNES file (`NES\x1A` header) with mapper 0 puts its PRG ROM at $8000 (16 KiB: also at $C000). Anything
//! else is a raw binary at `load_at`. The machine starts in the state after the reset sequence: A = X = Y = 0,
//! S = $FD, P = $24, 7 cycles run, PC = `entry` or the reset vector.

use crate::circuit::{Mos6502Options, PrgRom, bank_byte_address, init_row, mem, mos6502_machine, nes_bank_address};
use crate::{Bus, Cpu};
use isa_api::front::{Devices, FrontError, LoadImage, Machine, MachineFront, MemLoad, PortPrinter, Program, TraceCheck, TraceCheckError};
use isa_api::host::Trace;
use isa_api::{MachineDesc, MachineFace, Protocol};
use serde::Deserialize;
use std::io::Write;

/// The registers and cycle counter a machine starts from (what the boot step loads from `INIT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuState {
    /// Program counter.
    pub pc: u16,
    /// Accumulator.
    pub a: u8,
    /// Index register X.
    pub x: u8,
    /// Index register Y.
    pub y: u8,
    /// Stack pointer.
    pub s: u8,
    /// Status flags (bits 4 and 5 are stored as B = 0, 1).
    pub p: u8,
    /// Cycles already run (the reset sequence's 7 on a real start), modulo 2^32.
    pub cycles: u32,
}

impl CpuState {
    /// The state after the reset sequence (NESdev wiki, "CPU power up state"), with PC `pc`.
    pub fn after_reset(pc: u16) -> Self {
        CpuState { pc, a: 0, x: 0, y: 0, s: 0xFD, p: 0x24, cycles: 7 }
    }

    /// The interpreter in this state (its interrupt inputs idle).
    pub fn cpu(&self) -> Cpu {
        let mut cpu = Cpu::new();
        cpu.pc = self.pc;
        cpu.a = self.a;
        cpu.x = self.x;
        cpu.y = self.y;
        cpu.s = self.s;
        cpu.p = (self.p & 0xCF) | 0x20;
        cpu.cycles = u64::from(self.cycles);
        cpu
    }
}

/// The load image of a machine state: `bytes` (address, value) into the four banks, the registers into `INIT`.
pub fn state_image(state: &CpuState, bytes: impl IntoIterator<Item = (u16, u8)>) -> LoadImage {
    let mut loads = Vec::new();
    let c = state.cycles.to_le_bytes();
    let init = [state.pc as u8, (state.pc >> 8) as u8, state.a, state.x, state.y, state.s, state.p, c[0], c[1], c[2], c[3]];
    debug_assert_eq!(init_row::CYC as usize + 4, init.len());
    loads.push(MemLoad { mem: mem::INIT, base: 0, words: init.iter().map(|&b| u64::from(b)).collect() });
    // One load per bank of consecutive rows; zero bytes cost no token.
    let mut banks: [Vec<(u64, u64)>; 4] = Default::default();
    for (addr, value) in bytes {
        banks[usize::from(addr & 3)].push((u64::from(addr >> 2), u64::from(value)));
    }
    for (k, rows) in banks.iter_mut().enumerate() {
        rows.sort_unstable();
        rows.dedup_by_key(|r| r.0);
        let mut i = 0;
        while i < rows.len() {
            let base = rows[i].0;
            let mut words = vec![rows[i].1];
            while i + words.len() < rows.len() && rows[i + words.len()].0 == base + words.len() as u64 {
                words.push(rows[i + words.len()].1);
            }
            i += words.len();
            loads.push(MemLoad { mem: mem::BANKS[k], base, words });
        }
    }
    LoadImage::of_loads(loads)
}

/// The load image of a NES-map machine state: `bytes` (address, value) of RAM and PRG RAM into the four banks at
/// their compact addresses ([`nes_bank_address`]), the PRG ROM into `PRG_EVEN` and `PRG_ODD` four bytes a word
/// (the lowest address in the low byte): `prg_rom` where given (the whole ROM of a banking board), else the
/// bytes at $8000-$FFFF; the registers into `INIT`. Bytes at IO addresses ($2000-$5FFF) are dropped: nothing
/// holds them.
pub fn nes_state_image(state: &CpuState, bytes: impl IntoIterator<Item = (u16, u8)>, prg_rom: Option<&[u8]>) -> LoadImage {
    let mut ram = Vec::new();
    let mut rom = vec![0u8; 0x8000];
    for (addr, value) in bytes {
        if addr >= 0x8000 {
            rom[usize::from(addr - 0x8000)] = value;
        } else if let Some(c) = nes_bank_address(addr) {
            ram.push((c, value));
        }
    }
    let rom = prg_rom.map_or(rom, |r| r.to_vec());
    let mut img = state_image(state, ram);
    let words: Vec<u64> = rom.chunks_exact(4).map(|w| u64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]]))).collect();
    for (parity, m) in [mem::PRG_EVEN, mem::PRG_ODD].into_iter().enumerate() {
        img.loads.push(MemLoad { mem: m, base: 0, words: words.iter().skip(parity).step_by(2).copied().collect() });
    }
    img
}

/// A program as 64 KiB of memory and the first PC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramImage {
    /// (address, byte) of every byte the program sets.
    pub bytes: Vec<(u16, u8)>,
    /// The state the machine starts from.
    pub start: CpuState,
    /// NES map with PRG banking: the whole PRG ROM, which the machine's memory holds (`bytes` has the 32 KiB the
    /// CPU sees at power-on).
    pub prg_rom: Option<Vec<u8>>,
}

impl ProgramImage {
    /// The 64 KiB memory the program sets (zero elsewhere).
    pub fn memory(&self) -> Vec<u8> {
        let mut m = vec![0u8; 0x10000];
        for &(a, v) in &self.bytes {
            m[usize::from(a)] = v;
        }
        m
    }
    /// The load image of the machine built with `opts` ([`state_image`], or [`nes_state_image`] in the NES map).
    pub fn load_image(&self, opts: &Mos6502Options) -> LoadImage {
        if opts.nes {
            let whole = self.prg_rom.as_deref().filter(|r| r.len() == opts.prg.kib as usize * 1024);
            let mut img = nes_state_image(&self.start, self.bytes.iter().copied(), whole);
            use crate::circuit::{PrgBanking, reg};
            let window = match opts.prg.banking {
                PrgBanking::Mmc3 => Some(0x2000),
                PrgBanking::Mmc1 => Some(0x4000),
                _ => None,
            };
            if let (Some(window), Some(rom)) = (window, whole) {
                // The first word of each bank of the board's window size.
                let words = rom.chunks_exact(window).map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))).collect();
                img.loads.push(MemLoad { mem: mem::PRG_FIRST, base: 0, words });
            }
            // The boards' power-on registers (the host's `Mapper::power_on`): MMC3's R7 = 1, MMC1's PRG mode 3.
            match opts.prg.banking {
                PrgBanking::Mmc3 if whole.is_some() => img.regs.push((reg::MMC3_R7, 1)),
                PrgBanking::Mmc1 if whole.is_some() => img.regs.push((reg::MMC1_MODE, 3)),
                _ => {}
            }
            img
        } else {
            state_image(&self.start, self.bytes.iter().copied())
        }
    }
}

/// An iNES file's PRG ROM (mapper 0 only). Errors name the problem: a short file, no `NES\x1A`, a mapper other
/// than 0, a PRG size other than 16 or 32 KiB.
pub fn ines_prg(file: &[u8]) -> Result<Vec<u8>, FrontError> {
    if file.len() < 16 || &file[..4] != b"NES\x1A" {
        return Err(FrontError::new("not an iNES file (no NES\\x1A header)"));
    }
    let mapper = (file[6] >> 4) | (file[7] & 0xF0);
    if mapper != 0 {
        return Err(FrontError::new(format!("mapper {mapper} is not supported here (this loader takes mapper 0, NROM; `loom nes` runs mappers 0-4)")));
    }
    let banks = usize::from(file[4]);
    if banks != 1 && banks != 2 {
        return Err(FrontError::new(format!("NROM has 16 or 32 KiB of PRG ROM, this header says {} KiB", banks * 16)));
    }
    let start = 16 + if file[6] & 0x04 != 0 { 512 } else { 0 };
    let prg = file
        .get(start..start + banks * 0x4000)
        .ok_or_else(|| FrontError::new(format!("the file ends before its {} KiB of PRG ROM ({} bytes)", banks * 16, file.len())))?;
    Ok(prg.to_vec())
}

/// The `[machine]` keys of a 6502 config (besides `isa`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mos6502Keys {
    /// The memory map: `flat` (64 KiB of RAM).
    #[serde(default)]
    pub map: MemoryMap,
    /// A store here prints a console byte (port `OUT`) instead of writing memory.
    pub console: Option<u16>,
    /// A store here ends the program with the stored byte as exit status (port `EXIT`).
    pub exit: Option<u16>,
    /// Where a raw binary is loaded.
    #[serde(default)]
    pub load_at: u16,
    /// The first PC (default: the reset vector where the program sets it, else `load_at`).
    pub entry: Option<u16>,
    /// NES map: the PRG ROM's size and banking (not a TOML key: the NES host sets it from the cartridge's
    /// header; 32 KiB, fixed, by default).
    #[serde(skip)]
    pub prg: PrgRom,
}

/// Memory maps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryMap {
    /// The whole 64 KiB is RAM.
    #[default]
    Flat,
    /// The NES: 2 KiB of RAM mirrored through $1FFF, the PPU and APU/IO registers as IO ranges answered by the
    /// host, 8 KiB of PRG RAM at $6000, the PRG ROM at $8000 (read-only).
    Nes,
}

/// The registry entry of the 2A03.
pub struct Mos6502Front;

impl MachineFront for Mos6502Front {
    fn isa(&self) -> &'static str {
        "6502"
    }
    fn summary(&self) -> &'static str {
        "NES 2A03 (NMOS 6502 without BCD): raw binaries and NROM iNES files, console, exit status, fault report"
    }
    fn configure(&self, section: &toml::Table) -> Result<Box<dyn Machine>, FrontError> {
        let keys: Mos6502Keys =
            toml::Value::Table(section.clone()).try_into().map_err(|e| FrontError::new(format!("[machine] of 6502: {e}")))?;
        Ok(Box::new(Mos6502Machine { keys }))
    }
    /// Console and exit addresses are not in the face; a checkpoint runs with the demo's (see the README).
    fn from_face(&self, face: &MachineFace, _program: Option<&Program>) -> Result<Box<dyn Machine>, FrontError> {
        let map = match face.name.as_str() {
            "mos6502" => MemoryMap::Flat,
            "mos6502-nes" => MemoryMap::Nes,
            other => return Err(FrontError::new(format!("machine {other} is not a 6502 checkpoint"))),
        };
        let has = |n: &str| face.port(n).is_some();
        let keys = Mos6502Keys {
            console: has("OUT").then_some(DEMO_CONSOLE),
            exit: has("EXIT").then_some(DEMO_EXIT),
            load_at: DEMO_LOAD_AT,
            map,
            ..Default::default()
        };
        Ok(Box::new(Mos6502Machine { keys }))
    }
}

/// The demo's console address (a store there prints a byte).
pub const DEMO_CONSOLE: u16 = 0xF001;
/// The demo's exit address.
pub const DEMO_EXIT: u16 = 0xF002;
/// Where the demo is loaded and starts.
pub const DEMO_LOAD_AT: u16 = 0x0400;

/// The built-in demo (`examples/demo.s`, assembled by ca65): prints a greeting and a table of squares.
pub const DEMO: &[u8] = include_bytes!("../examples/demo.bin");
/// What the demo prints.
pub const DEMO_OUTPUT: &[u8] = include_bytes!("../examples/demo.out");
/// The NES-map demo (`examples/demo.s` assembled with `-D NES`): the same program as an NROM cartridge that
/// writes its text with blargg's $6000 protocol, which the NES host prints; the same output.
pub const NES_DEMO: &[u8] = include_bytes!("../examples/nes_demo.nes");

/// A configured 2A03.
pub struct Mos6502Machine {
    /// Its `[machine]` keys.
    pub keys: Mos6502Keys,
}

impl Mos6502Machine {
    /// The circuit options of these keys.
    pub fn options(&self) -> Mos6502Options {
        Mos6502Options { console: self.keys.console, exit: self.keys.exit, nes: self.keys.map == MemoryMap::Nes, prg: self.keys.prg }
    }

    /// A program's memory and start state: an iNES file (mapper 0) or a raw binary at `load_at`.
    pub fn image(&self, program: &Program) -> Result<ProgramImage, FrontError> {
        let named = |e: FrontError| FrontError::new(format!("{}: {}", program.name, e.0));
        let mut bytes = Vec::new();
        if self.keys.map == MemoryMap::Nes && !program.bytes.starts_with(b"NES\x1A") {
            return Err(FrontError::new(format!("{}: the NES map runs iNES files (NES\\x1A header)", program.name)));
        }
        if program.bytes.starts_with(b"NES\x1A") {
            let prg = ines_prg(&program.bytes).map_err(named)?;
            for (i, &b) in prg.iter().enumerate() {
                bytes.push((0x8000 + i as u16, b));
                if prg.len() == 0x4000 {
                    bytes.push((0xC000 + i as u16, b));
                }
            }
        } else {
            let end = usize::from(self.keys.load_at) + program.bytes.len();
            if end > 0x10000 {
                return Err(FrontError::new(format!(
                    "{}: {} bytes at ${:04X} run past the end of the 64 KiB address space (to ${end:X})",
                    program.name,
                    program.bytes.len(),
                    self.keys.load_at
                )));
            }
            if program.bytes.is_empty() {
                return Err(FrontError::new(format!("{}: the program is empty", program.name)));
            }
            bytes.extend(program.bytes.iter().enumerate().map(|(i, &b)| (self.keys.load_at + i as u16, b)));
        }
        // The first PC: `entry`; else the reset vector where the image sets it; else the load address.
        let at = |a: u16| bytes.iter().rev().find(|x| x.0 == a).map(|x| x.1);
        let pc = match (self.keys.entry, at(0xFFFC), at(0xFFFD)) {
            (Some(pc), _, _) => pc,
            (None, Some(lo), Some(hi)) => u16::from_le_bytes([lo, hi]),
            _ => self.keys.load_at,
        };
        Ok(ProgramImage { bytes, start: CpuState::after_reset(pc), prg_rom: None })
    }
}

impl Machine for Mos6502Machine {
    fn about(&self) -> String {
        let mut s = match self.keys.map {
            MemoryMap::Flat => "64 KiB flat RAM".to_string(),
            MemoryMap::Nes => "NES map (2 KiB RAM, PRG RAM, PRG ROM, IO registers)".to_string(),
        };
        if let Some(c) = self.keys.console {
            s += &format!(", console ${c:04X}");
        }
        if let Some(e) = self.keys.exit {
            s += &format!(", exit ${e:04X}");
        }
        s
    }
    fn describe(&self) -> Result<MachineDesc, FrontError> {
        Ok(mos6502_machine(&self.options()))
    }
    fn demo(&self) -> Option<Program> {
        if self.keys.map == MemoryMap::Nes {
            return Some(Program { name: "nes_demo".into(), bytes: NES_DEMO.to_vec(), expected_console: Some(DEMO_OUTPUT.to_vec()) });
        }
        // The demo needs the console and exit addresses it was written for, and its load address.
        (self.keys.console == Some(DEMO_CONSOLE) && self.keys.exit == Some(DEMO_EXIT) && self.keys.load_at == DEMO_LOAD_AT).then(|| Program {
            name: "demo".into(),
            bytes: DEMO.to_vec(),
            expected_console: Some(DEMO_OUTPUT.to_vec()),
        })
    }
    fn load(&self, program: &Program) -> Result<LoadImage, FrontError> {
        Ok(self.image(program)?.load_image(&self.options()))
    }
    fn devices(&self, face: &MachineFace, _image: &LoadImage, console: Box<dyn Write>) -> Result<Box<dyn Devices>, FrontError> {
        Ok(match self.keys.map {
            MemoryMap::Flat => Box::new(FlatDevices { ports: PortPrinter::new(face, console), fault: None }),
            MemoryMap::Nes => Box::new(NesStubDevices::new(console)),
        })
    }
    /// Replays the trace's instructions on the interpreter: PC, A, X, Y, S, P and the cycle count must agree
    /// after every instruction, and every memory write of the trace must be one the interpreter made.
    fn check_trace(&self, program: &Program, proto: &Protocol, trace: &Trace) -> Option<Result<TraceCheck, TraceCheckError>> {
        Some(self.image(program).map_err(TraceCheckError::from).and_then(|img| interpreter_lockstep(&self.options(), &img, proto, trace)))
    }
}

/// The interpreter's bus in the machine's memory map: flat 64 KiB, or the NES map (RAM mirrored through
/// $1FFF, IO registers answered by `io_answer`, ROM read-only), with the console and exit addresses of `opts`
/// (stores there do not reach memory).
pub struct HostBus {
    /// The 64 KiB of memory (in the NES map: RAM at $0000-$07FF, PRG RAM, PRG ROM at their addresses).
    pub ram: Vec<u8>,
    /// The NES map.
    pub nes: bool,
    /// The answer to an IO read of this register (the host's, for the current instruction; the register as
    /// [`crate::face::nes_io_read_address`] names it); other IO reads give 0, and those the host does not answer
    /// ([`crate::face::nes_io_read_code`]) the open bus.
    pub io_answer: Option<(u16, u8)>,
    /// IO register writes (address, value) since the last clear.
    pub io_writes: Vec<(u16, u8)>,
    /// The console address (stores there go to `console`).
    pub console_addr: Option<u16>,
    /// The exit address (a store there sets `exit`).
    pub exit_addr: Option<u16>,
    /// Console bytes written so far.
    pub console: Vec<u8>,
    /// The exit status, once the program stored it.
    pub exit: Option<u8>,
    /// Memory writes since the last [`HostBus::take_writes`] (address, value), the last per address.
    pub writes: Vec<(u16, u8)>,
    /// Bus accesses since `accesses` was last set to 0 (the cycle within the instruction, when set at its start).
    pub accesses: u32,
    /// Reads of IO registers the host answers (the register's address as [`crate::face::nes_io_read_address`]
    /// names it, the value of `accesses` at the read) since the last clear.
    pub io_reads: Vec<(u16, u32)>,
}

impl HostBus {
    /// A bus over `ram` (64 KiB).
    pub fn new(opts: &Mos6502Options, ram: Vec<u8>) -> Self {
        HostBus { ram, nes: opts.nes, io_answer: None, io_writes: Vec::new(), console_addr: opts.console, exit_addr: opts.exit, console: Vec::new(), exit: None, writes: Vec::new(), accesses: 0, io_reads: Vec::new() }
    }
}

/// Where a NES-map address lives: memory (its flat address), or an IO register (`None`: the PPU's and APU's
/// registers at $2000-$401F and the cartridge's expansion area up to $5FFF, open bus on mappers 0-4).
pub fn nes_location(addr: u16) -> Option<u16> {
    match addr {
        0x0000..=0x1FFF => Some(addr & 0x07FF),
        0x2000..=0x5FFF => None,
        _ => Some(addr),
    }
}

impl Bus for HostBus {
    fn read(&mut self, addr: u16) -> u8 {
        self.accesses += 1;
        if self.nes {
            return match nes_location(addr) {
                Some(a) => self.ram[usize::from(a)],
                None => {
                    let Some(code) = crate::face::nes_io_read_code(addr) else {
                        // Nothing answers: the open bus, as the circuit reads it.
                        return (addr >> 8) as u8;
                    };
                    let reg = crate::face::nes_io_read_address(code);
                    self.io_reads.push((reg, self.accesses - 1));
                    self.io_answer.filter(|x| x.0 == reg).map_or(0, |x| x.1)
                }
            };
        }
        self.ram[usize::from(addr)]
    }
    fn write(&mut self, addr: u16, value: u8) {
        self.accesses += 1;
        let addr = if self.nes {
            match nes_location(addr) {
                Some(a) if a >= 0x8000 => {
                    // The ROM: a store goes to the cartridge's mapper, on port IO_WRITE as an IO register's.
                    self.io_writes.push((addr, value));
                    return;
                }
                Some(a) if Some(addr) != self.console_addr && Some(addr) != self.exit_addr => a,
                Some(_) => addr,
                None => {
                    self.io_writes.push((addr, value));
                    return;
                }
            }
        } else {
            addr
        };
        if Some(addr) == self.console_addr {
            self.console.push(value);
        } else if Some(addr) == self.exit_addr {
            self.exit = Some(value);
        } else {
            self.ram[usize::from(addr)] = value;
            self.writes.retain(|w| w.0 != addr);
            self.writes.push((addr, value));
        }
    }
}

/// The devices of the flat map: the generic port printer (console, exit status), with a fault named by its
/// opcode and PC.
pub struct FlatDevices {
    ports: PortPrinter,
    fault: Option<u64>,
}

impl Devices for FlatDevices {
    fn step(&mut self, st: &isa_api::StepEvents) {
        if let Some(f) = st.output(0).filter(|&f| f != 0) {
            self.fault.get_or_insert(f);
        }
        self.ports.step(st);
    }
    fn instructions(&self) -> u64 {
        self.ports.instructions()
    }
    fn console(&self) -> &[u8] {
        self.ports.console()
    }
    fn finish(&mut self, end: isa_api::front::RunEnd) -> isa_api::front::Finish {
        let mut f = self.ports.finish(end);
        if let Some(code) = self.fault {
            f.summary = fault_summary(code);
        }
        f
    }
}

/// A `FAULT` port value in words: the opcode and its address.
pub fn fault_summary(code: u64) -> String {
    let (opcode, pc) = ((code & 0xFF) as u8, (code >> 8) & 0xFFFF);
    let what = if crate::decode(opcode).mnemonic == crate::Mnemonic::Jam { "JAM" } else { "unsupported unstable opcode" };
    format!("machine fault: {what} ${opcode:02X} ({}) at ${pc:04X}", crate::decode(opcode).mnemonic)
}

/// The test host of the NES map for `loom run` and `loom lockstep` (the NES host with PPU, APU and pads is
/// `host-nes`, `loom nes`): it answers IO reads (PPU status $2002 with the vertical-blank bit set, everything
/// else 0), ignores IO writes, and follows blargg's test
/// protocol in PRG RAM ($6000 status, $6001-$6003 = DE B0 61, text from $6004), from the memory writes of the
/// trace: it prints the text once the status is final, and makes the status the exit status.
pub struct NesStubDevices {
    out: Box<dyn Write>,
    /// The machine's memory as the trace writes it (each bank's latest write applies again at every commit).
    shadow: Vec<u8>,
    latest: [Option<(u16, u8)>; 4],
    instructions: u64,
    console: Vec<u8>,
    result: Option<u8>,
    fault: Option<u64>,
}

impl NesStubDevices {
    /// Devices echoing the test text to `out`.
    pub fn new(out: Box<dyn Write>) -> Self {
        NesStubDevices { out, shadow: vec![0; 0x10000], latest: [None; 4], instructions: 0, console: Vec::new(), result: None, fault: None }
    }
    /// The stub's answer to an IO read of `addr`.
    pub fn io_answer(addr: u16) -> u8 {
        if (0x2000..0x4000).contains(&addr) && addr & 7 == 2 { 0x80 } else { 0 }
    }
}

impl Devices for NesStubDevices {
    fn answer(&mut self, _port: u32, request: u64) -> u64 {
        u64::from(Self::io_answer(crate::face::nes_io_read_request(request).0))
    }
    fn step(&mut self, st: &isa_api::StepEvents) {
        if st.halted {
            return;
        }
        if st.retired(Some(crate::circuit::reg::BUSY)) {
            self.instructions += 1;
        }
        if let Some(f) = st.output(0).filter(|&f| f != 0) {
            self.fault = Some(f);
        }
        let nes = Mos6502Options { nes: true, ..Default::default() };
        for w in st.writes.iter().filter(|w| mem::BANKS.contains(&w.mem)) {
            self.latest[w.mem as usize] = Some((bank_byte_address(&nes, w.mem, w.addr), w.data as u8));
        }
        for &(a, v) in self.latest.iter().flatten() {
            self.shadow[usize::from(a)] = v;
        }
        let m = &self.shadow;
        if self.result.is_none() && m[0x6001..0x6004] == [0xDE, 0xB0, 0x61] && m[0x6000] < 0x80 {
            self.result = Some(m[0x6000]);
            self.console = m[0x6004..].iter().take_while(|&&b| b != 0).copied().collect();
            let _ = self.out.write_all(&self.console);
            let _ = self.out.flush();
        }
    }
    fn instructions(&self) -> u64 {
        self.instructions
    }
    fn console(&self) -> &[u8] {
        &self.console
    }
    /// Done once blargg's status at $6000 is final: NES programs never halt.
    fn done(&self) -> bool {
        self.result.is_some()
    }
    fn finish(&mut self, end: isa_api::front::RunEnd) -> isa_api::front::Finish {
        use isa_api::front::{EXIT_FAULT, EXIT_STEP_LIMIT, Finish};
        if let Some(f) = self.fault {
            return Finish { status: EXIT_FAULT, summary: fault_summary(f) };
        }
        match (self.result, end) {
            (Some(r), _) => Finish { status: r, summary: format!("test status ${r:02X} at $6000 ({})", if r == 0 { "passed" } else { "failed" }) },
            (None, isa_api::front::RunEnd::StepLimit) => Finish { status: EXIT_STEP_LIMIT, summary: "limit (no test result at $6000 yet)".into() },
            (None, _) => Finish { status: 0, summary: "halt".into() },
        }
    }
}

/// The interpreter's registers as the circuit keeps them: PC, A, X, Y, S, P and the cycle count (its low
/// [`crate::face::CYCLE_BITS`] bits; [`crate::face::architectural_registers`] reads the same from the machine's).
pub fn cpu_registers(cpu: &Cpu) -> [u64; 7] {
    [u64::from(cpu.pc), u64::from(cpu.a), u64::from(cpu.x), u64::from(cpu.y), u64::from(cpu.s), u64::from(cpu.p), cpu.cycles & crate::face::CYCLE_MASK]
}

/// Lockstep of a trace with the interpreter started from `img`: after every retired instruction the seven
/// registers (PC, A, X, Y, S, P, CYC) must be the interpreter's, and the bytes the step wrote (the four banks'
/// writes) must be what the interpreter wrote. A fault or an exit must happen at the same instruction.
/// Errors: [`TraceCheckError::Disagrees`], naming the trace position or the instruction and the values.
pub fn interpreter_lockstep(opts: &Mos6502Options, img: &ProgramImage, proto: &Protocol, trace: &Trace) -> Result<TraceCheck, TraceCheckError> {
    lockstep_steps(opts, img, proto, trace).map_err(TraceCheckError::Disagrees)
}

/// [`interpreter_lockstep`]'s work, its disagreement described.
fn lockstep_steps(opts: &Mos6502Options, img: &ProgramImage, proto: &Protocol, trace: &Trace) -> Result<TraceCheck, String> {
    // The steps, each with the IO answer the host injected before it (NES map) and the interrupt inputs it saw
    // (they hold until the host injects others).
    let mut steps = Vec::new();
    let mut dec = isa_api::StepDecoder::new(proto);
    let mut answer = None;
    let mut lines = crate::Lines::default();
    for (i, &t) in trace.generated.iter().enumerate() {
        match dec.push(t).map_err(|e| format!("trace position {i}: {e}"))? {
            isa_api::trace::Decoded::Input { port, value } => match port {
                crate::circuit::input::IO_DATA => answer = Some(value as u8),
                crate::circuit::input::NMI => lines.nmi_age = value as u8,
                crate::circuit::input::IRQ => lines.irq = value as u8,
                _ => {}
            },
            isa_api::trace::Decoded::Step(ev) => steps.push((ev, answer.take(), lines)),
            _ => {}
        }
    }
    let io_read_port = crate::circuit::io_read_port(opts);
    let oam_port = io_read_port.map(|p| p + 1);
    // An OAM DMA in progress: the bytes the interpreter's bus holds, and those the trace wrote so far.
    let mut dma: Option<(Vec<u8>, Vec<u8>)> = None;
    let names = ["PC", "A", "X", "Y", "S", "P", "CYC"];
    let check_regs = |cpu: &Cpu, st: &isa_api::StepEvents, i: usize, instructions: u64| -> Result<(), String> {
        let want = cpu_registers(cpu);
        let got_all = crate::face::architectural_registers(|r| st.reg(r));
        for (r, name) in names.iter().enumerate() {
            let got = got_all[r];
            if got != want[r] {
                return Err(format!("instruction {instructions} (step {i}): {name} = {got:#x} in the network, {:#x} in the interpreter", want[r]));
            }
        }
        Ok(())
    };
    let mut cpu = img.start.cpu();
    let mut bus = HostBus::new(opts, img.memory());
    let mut instructions = 0u64;
    let mut end = "limit".to_string();
    let mut shadow = img.memory();
    let mut latest: [Option<(u16, u8)>; 4] = [None; 4];
    for (i, (st, io_answer, lines)) in steps.iter().enumerate() {
        if st.halted {
            end = match bus.exit {
                Some(code) => format!("exit {code}"),
                None => "halt".into(),
            };
            break;
        }
        let busy = st.reg(crate::circuit::reg::BUSY);
        if i == 0 {
            continue; // the boot step
        }
        if let Some((want, got)) = dma.as_mut() {
            // An OAM DMA: each step writes four bytes of the page on OAM_DMA; the last one (BUSY back to 0)
            // retires the store with the DMA's cycles.
            if let Some(v) = oam_port.and_then(|p| st.output(p)) {
                got.extend((v as u32).to_le_bytes());
            }
            if busy == crate::circuit::BUSY_DMA {
                continue;
            }
            if got != want {
                return Err(format!("step {i}: the OAM DMA wrote {} bytes that differ from the page's {}", got.len(), want.len()));
            }
            dma = None;
            check_regs(&cpu, st, i, instructions)?;
            continue;
        }
        // An IO read: the request on IO_READ, the host's answer injected within the step.
        let read_request = io_read_port.and_then(|p| st.output(p)).map(crate::face::nes_io_read_request);
        bus.io_answer = match (read_request, io_answer) {
            (Some((a, _)), Some(v)) => Some((a, *v)),
            (None, None) => None,
            (Some((a, _)), None) => return Err(format!("step {i}: an IO read of ${a:04X} without an answer")),
            (None, Some(v)) => return Err(format!("step {i}: an answer ({v:#04x}) without an IO read")),
        };
        if busy == crate::circuit::BUSY_STOPPING {
            // A stop: an exit store (the interpreter makes it) or a fault (the interpreter refuses the opcode).
            if st.output(0).is_some_and(|f| f != 0) {
                cpu.set_lines(*lines);
                let before = cpu.clone();
                return match cpu.step(&mut bus) {
                    Err(fault) if cpu == before => {
                        end = format!("fault: {fault}");
                        Ok(TraceCheck { against: "the 2A03 interpreter".into(), instructions, end, console: bus.console })
                    }
                    other => Err(format!("step {i}: the network faulted, the interpreter gave {other:?}")),
                };
            }
        }
        bus.writes.clear();
        bus.io_writes.clear();
        bus.io_reads.clear();
        bus.accesses = 0;
        cpu.set_lines(*lines);
        if let Err(fault) = cpu.step(&mut bus) {
            return Err(format!("step {i}: the interpreter faulted ({fault}), the network did not"));
        }
        instructions += 1;
        check_regs(&cpu, st, i, instructions)?;
        // The cycle of an IO read, as the network announced it, is the cycle the interpreter read it on.
        if let Some((addr, cycle)) = read_request {
            if !bus.io_reads.contains(&(addr, cycle)) {
                return Err(format!(
                    "instruction {instructions} (step {i}): the network read ${addr:04X} on cycle {cycle} of the instruction, the interpreter's IO reads were {:?}",
                    bus.io_reads
                ));
            }
        }
        if busy == crate::circuit::BUSY_DMA {
            // The store started an OAM DMA: 256 reads of the page, `oam_dma_cycles` cycles.
            let Some(&(_, page)) = bus.io_writes.iter().rev().find(|w| w.0 == 0x4014) else {
                return Err(format!("step {i}: the network started an OAM DMA, the interpreter did not write $4014"));
            };
            let want: Vec<u8> = (0..=255u16).map(|k| bus.read((u16::from(page) << 8) | k)).collect();
            // The store's poll sees the lines injected before the first DMA step.
            cpu.set_lines(steps.get(i + 1).map_or(*lines, |s| s.2));
            cpu.dma(crate::oam_dma_cycles(cpu.cycles));
            dma = Some((want, Vec::new()));
        }
        // The trace's memory: each bank's latest write applies again at every commit (a no-op unless the
        // step changed it); it must hold what the interpreter wrote, where either wrote.
        for w in st.writes.iter().filter(|w| mem::BANKS.contains(&w.mem)) {
            latest[w.mem as usize] = Some((bank_byte_address(opts, w.mem, w.addr), w.data as u8));
        }
        for &(a, v) in latest.iter().flatten() {
            shadow[usize::from(a)] = v;
        }
        for a in bus.writes.iter().map(|w| w.0).chain(latest.iter().flatten().map(|w| w.0)) {
            if shadow[usize::from(a)] != bus.ram[usize::from(a)] {
                return Err(format!(
                    "instruction {instructions} (step {i}): ${a:04X} holds ${:02X} in the network, ${:02X} in the interpreter",
                    shadow[usize::from(a)],
                    bus.ram[usize::from(a)]
                ));
            }
        }
    }
    if bus.nes && bus.ram[0x6001..0x6004] == [0xDE, 0xB0, 0x61] && bus.ram[0x6000] < 0x80 {
        // The NES map's console is blargg's text protocol, read from the interpreter's own memory.
        end = format!("test status ${:02X}", bus.ram[0x6000]);
        let text: Vec<u8> = bus.ram[0x6004..].iter().take_while(|&&b| b != 0).copied().collect();
        return Ok(TraceCheck { against: "the 2A03 interpreter".into(), instructions, end, console: text });
    }
    Ok(TraceCheck { against: "the 2A03 interpreter".into(), instructions, end, console: bus.console })
}
