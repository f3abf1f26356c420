//! The RV32IM+Zba machine's front: its `[machine]` keys, the ELF loader, the built-in programs, and the host
//! devices of a run (console, exit status, fault report).
//!
//! ```toml
//! [machine]
//! isa = "rv32im"
//! ram_base = 0x10000    # a multiple of 4 (the example ELFs are linked there)
//! ram_size = 262144     # bytes, a power of two (64 B ..= 64 MiB)
//! layout = "words"      # or "byte_lanes"
//! ```
//!
//! The devices follow the decoded trace by the names the machine publishes (ports `OUT`, `EXIT`, `FAULT`,
//! registers `PC`, `BUSY`, the RAM memories' writes): they print, count instructions and report a fault; they
//! never evaluate an instruction. [`Machine::check_trace`] replays a finished trace against the reference
//! interpreter (itself checked against qemu-riscv32 by `rv32-lockstep`).

use crate::circuit::{MemoryLayout, Rv32MachineOptions, rv32im_machine};
use crate::lockstep::{LockstepEnd, trace_lockstep};
use crate::program::ProgramImage;
use crate::FaultCode;
use isa_api::front::{Devices, EXIT_FAULT, EXIT_STEP_LIMIT, Finish, FrontError, LoadImage, Machine, MachineFront, Program, RunEnd, TraceCheck, TraceCheckError};
use isa_api::host::Trace;
use isa_api::{MachineDesc, MachineFace, Protocol, StepEvents};
use serde::Deserialize;
use std::io::Write;

/// The keys of an rv32im `[machine]` table (besides `isa` and `plugin`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rv32Keys {
    /// First RAM address.
    #[serde(default = "default_base")]
    pub ram_base: u32,
    /// RAM size in bytes.
    #[serde(default = "default_size")]
    pub ram_size: u32,
    /// `words` (default) or `byte_lanes`.
    #[serde(default)]
    pub layout: Layout,
}

/// Memory layout as written in the config.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// [`MemoryLayout::Words`].
    #[default]
    Words,
    /// [`MemoryLayout::ByteLanes`].
    ByteLanes,
}

fn default_base() -> u32 {
    Rv32MachineOptions::default().ram_base
}
fn default_size() -> u32 {
    Rv32MachineOptions::default().ram_size
}

impl Rv32Keys {
    /// Parse and validate a `[machine]` table; errors name the bad key or the impossible RAM.
    pub fn parse(section: &toml::Table) -> Result<Rv32MachineOptions, FrontError> {
        let k: Rv32Keys = toml::Value::Table(section.clone()).try_into().map_err(|e| FrontError::new(format!("[machine] of rv32im: {e}")))?;
        let opts = Rv32MachineOptions {
            ram_base: k.ram_base,
            ram_size: k.ram_size,
            layout: match k.layout {
                Layout::Words => MemoryLayout::Words,
                Layout::ByteLanes => MemoryLayout::ByteLanes,
            },
        };
        opts.validate().map_err(|e| FrontError::new(format!("[machine] of rv32im: {e}")))?;
        Ok(opts)
    }
}

/// The registry entry of RV32IM+Zba.
pub struct Rv32Front;

impl MachineFront for Rv32Front {
    fn isa(&self) -> &'static str {
        "rv32im"
    }
    fn summary(&self) -> &'static str {
        "RV32IM+Zba CPU: ELF programs, console, exit status, fault report"
    }
    fn configure(&self, section: &toml::Table) -> Result<Box<dyn Machine>, FrontError> {
        Ok(Box::new(Rv32Machine { opts: Rv32Keys::parse(section)? }))
    }
    /// RAM size and layout from the face's memories (`RAM` of words, or byte lanes `RAM0..RAM3`), the RAM base
    /// from the ELF: its lowest segment's address (rounded down to 4 bytes); without a program, the demo's.
    /// A checkpoint does not record its RAM base: run it with its config when the program is linked elsewhere.
    fn from_face(&self, face: &MachineFace, program: Option<&Program>) -> Result<Box<dyn Machine>, FrontError> {
        let rows = |name: &str| face.memories.iter().find(|m| m.name == name).map(|m| (1u64 << m.addr_width) * 4);
        let (layout, ram_size) = match (rows("RAM"), rows("RAM0")) {
            (Some(n), _) => (MemoryLayout::Words, n),
            (None, Some(n)) => (MemoryLayout::ByteLanes, n),
            _ => return Err(FrontError::new(format!("machine {} has no RAM memory (not an rv32im checkpoint)", face.name))),
        };
        let ram_base = match program {
            Some(p) => {
                let elf = crate::parse_elf(&p.bytes).map_err(|e| FrontError::new(format!("{}: {e}", p.name)))?;
                elf.segments.iter().map(|s| s.vaddr).min().unwrap_or(elf.entry) & !3
            }
            None => Rv32MachineOptions::default().ram_base,
        };
        let opts = Rv32MachineOptions { ram_base, ram_size: u32::try_from(ram_size).map_err(|_| FrontError::new("RAM size beyond 4 GiB"))?, layout };
        opts.validate().map_err(|e| FrontError::new(format!("{}: {ram_base:#x} as the RAM base: {e}", program.map_or("the demo", |p| p.name.as_str()))))?;
        Ok(Box::new(Rv32Machine { opts }))
    }
}

/// A configured RV32IM+Zba machine.
pub struct Rv32Machine {
    pub opts: Rv32MachineOptions,
}

fn example_program(e: &crate::examples::Example) -> Program {
    Program { name: e.name.to_string(), bytes: e.elf.to_vec(), expected_console: Some(e.expected_stdout.to_vec()) }
}

impl Rv32Machine {
    /// The program as the machine's initial state (RAM image and registers).
    pub fn image(&self, program: &Program) -> Result<ProgramImage, FrontError> {
        ProgramImage::from_elf(&program.bytes, &self.opts).map_err(|e| FrontError::new(format!("{}: {e}", program.name)))
    }
}

impl Machine for Rv32Machine {
    fn about(&self) -> String {
        format!("{} KiB RAM at {:#x}", self.opts.ram_size / 1024, self.opts.ram_base)
    }
    fn describe(&self) -> Result<MachineDesc, FrontError> {
        rv32im_machine(&self.opts).map_err(|e| FrontError::new(e.to_string()))
    }
    fn demo(&self) -> Option<Program> {
        crate::examples::example("demo").map(|e| Program { name: "built-in demo (bignum products)".into(), ..example_program(e) })
    }
    fn examples(&self) -> Vec<Program> {
        crate::examples::EXAMPLES.iter().map(example_program).collect()
    }
    /// RAM words (each RAM memory in order), then the register file (sp), as [`ProgramImage::prompt`] loads them.
    fn load(&self, program: &Program) -> Result<LoadImage, FrontError> {
        Ok(self.image(program)?.load_image())
    }
    /// Devices whose standard input is empty (read(2) returns 0).
    fn devices(&self, face: &MachineFace, image: &LoadImage, console: Box<dyn Write>) -> Result<Box<dyn Devices>, FrontError> {
        Ok(Box::new(Rv32Devices::new(face, image, &self.opts, console)?))
    }
    /// Devices reading standard input from `io.stdin` (rv32im declares no display, keypad or clock).
    fn devices_with(&self, face: &MachineFace, image: &LoadImage, console: Box<dyn Write>, io: isa_api::front::HostIo) -> Result<Box<dyn Devices>, FrontError> {
        Ok(Box::new(Rv32Devices::new(face, image, &self.opts, console)?.with_input(io.stdin)))
    }
    fn check_trace(&self, program: &Program, proto: &Protocol, trace: &Trace) -> Option<Result<TraceCheck, TraceCheckError>> {
        let cpu = match crate::load_elf(&program.bytes, self.opts.interp_config()) {
            Ok(c) => c,
            Err(e) => return Some(Err(FrontError::new(format!("{}: {e}", program.name)).into())),
        };
        Some(trace_lockstep(proto, &trace.generated, cpu, &self.opts).map_err(|e| TraceCheckError::Disagrees(e.to_string())).map(|rep| TraceCheck {
            against: "the reference interpreter".into(),
            instructions: rep.instructions,
            end: match rep.end {
                LockstepEnd::Exit(c) => format!("exit {c}"),
                LockstepEnd::Fault(f) => format!("{f:?}"),
                LockstepEnd::Limit => "limit".into(),
                LockstepEnd::Error(e) => format!("error: {e}"),
            },
            console: rep.output,
        }))
    }
}

/// The host devices of an RV32 run: console (`OUT`), exit status (`EXIT`), fault report (`FAULT`, with pc,
/// the instruction word from the host's view of RAM, and the faulting address), standard input (a byte on
/// `STDIN`, or `STDIN_EOF`, injected after each `IN_REQ`), instruction count.
pub struct Rv32Devices {
    opts: Rv32MachineOptions,
    pc: u32,
    busy: u32,
    ports: (u32, u32, u32),
    /// `IN_REQ`, and the input ports `STDIN`, `STDIN_EOF` (a machine without them reads no input).
    stdin: Option<(u32, u32, u32)>,
    input: Box<dyn std::io::Read>,
    /// The last step asked for an input byte.
    asked: bool,
    /// The RAM memories (index into the face's memories) in lane order.
    ram_mems: Vec<u32>,
    /// The host's view of RAM, from the loads and the trace's writes (for the fault report).
    ram: Vec<u8>,
    out: Box<dyn Write>,
    console: Vec<u8>,
    instructions: u64,
    pc_word: u64,
    exit: Option<u64>,
    fault: Option<(u64, u64)>,
    exit_retired: bool,
}

impl Rv32Devices {
    /// Devices for the machine `face` publishes (registers, ports and memories by name), RAM as `image` loads it.
    pub fn new(face: &MachineFace, image: &LoadImage, opts: &Rv32MachineOptions, out: Box<dyn Write>) -> Result<Self, FrontError> {
        let need = |what: &str, i: Option<u32>, name: &str| i.ok_or_else(|| FrontError::new(format!("machine {} has no {what} {name}", face.name)));
        let pc = need("register", face.register("PC"), "PC")?;
        let busy = match face.micro_step {
            Some(r) => r,
            None => need("register", face.register("BUSY"), "BUSY")?,
        };
        use isa_api::PortRole;
        let port = |role: PortRole, name: &str| need("port", face.port_with_role(role).or_else(|| face.port(name)), name);
        let ports = (port(PortRole::Console, "OUT")?, port(PortRole::Exit, "EXIT")?, port(PortRole::Fault, "FAULT")?);
        let input = |name: &str| face.inputs.iter().position(|p| p.name == name).map(|i| i as u32);
        let stdin = match (face.port("IN_REQ"), input("STDIN"), input("STDIN_EOF")) {
            (Some(r), Some(b), Some(e)) => Some((r, b, e)),
            _ => None,
        };
        let ram_mems: Vec<u32> = match face.memory("RAM") {
            Some(m) => vec![m],
            None => (0..4).map(|i| need("memory", face.memory(&format!("RAM{i}")), &format!("RAM{i}"))).collect::<Result<_, _>>()?,
        };
        let mut d = Rv32Devices {
            opts: *opts,
            pc,
            busy,
            ports,
            stdin,
            input: Box::new(std::io::empty()),
            asked: false,
            ram_mems,
            ram: vec![0; opts.ram_size as usize],
            out,
            console: Vec::new(),
            instructions: 0,
            pc_word: 0,
            exit: None,
            fault: None,
            exit_retired: false,
        };
        for l in &image.loads {
            for (i, w) in l.words.iter().enumerate() {
                d.store(l.mem, l.base + i as u64, *w);
            }
        }
        Ok(d)
    }

    /// The same devices reading standard input from `input` (default: empty).
    pub fn with_input(mut self, input: Box<dyn std::io::Read>) -> Self {
        self.input = input;
        self
    }

    /// A word written to RAM memory `mem` at row `addr`.
    fn store(&mut self, mem: u32, addr: u64, data: u64) {
        let Some(lane) = self.ram_mems.iter().position(|m| *m == mem) else { return };
        let a = addr as usize * 4;
        if self.ram_mems.len() == 1 {
            if let Some(w) = self.ram.get_mut(a..a + 4) {
                w.copy_from_slice(&(data as u32).to_le_bytes());
            }
        } else if let Some(b) = self.ram.get_mut(a + lane) {
            *b = data as u8;
        }
    }
}

impl Devices for Rv32Devices {
    /// After a step that asked (`IN_REQ`): the next input byte on `STDIN`, or `STDIN_EOF` = 1 at its end (or
    /// on a read error, which the program sees as the end of its input).
    fn inject(&mut self, _steps: usize) -> Vec<(u32, u64)> {
        let Some((_, stdin, eof)) = self.stdin.filter(|_| self.asked) else { return Vec::new() };
        self.asked = false;
        let mut b = [0u8];
        loop {
            match self.input.read(&mut b) {
                Ok(1) => return vec![(stdin, u64::from(b[0]))],
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                _ => return vec![(eof, 1)],
            }
        }
    }
    fn step(&mut self, step: &StepEvents) {
        if step.halted {
            return;
        }
        if let Some((req, _, _)) = self.stdin {
            self.asked = step.output(req).is_some();
        }
        let (p_out, p_exit, p_fault) = self.ports;
        for &(port, v) in &step.outputs {
            if port == p_out {
                self.console.push(v as u8);
                let _ = self.out.write_all(&[v as u8]);
                if v == b'\n' as u64 {
                    let _ = self.out.flush();
                }
            } else if port == p_exit {
                self.exit = Some(v);
            } else if port == p_fault && self.fault.is_none() {
                // A faulting step leaves pc at the faulting instruction.
                self.fault = Some((v, step.reg(self.pc)));
            }
        }
        for w in &step.writes {
            self.store(w.mem, w.addr, w.data);
        }
        self.pc_word = step.reg(self.pc);
        // BUSY = 0: an instruction retired; the exit ECALL retires in the step that writes EXIT.
        if step.reg(self.busy) == 0 || (self.exit.is_some() && !self.exit_retired) {
            self.instructions += 1;
            self.exit_retired = self.exit.is_some();
        }
    }
    fn instructions(&self) -> u64 {
        self.instructions
    }
    fn console(&self) -> &[u8] {
        &self.console
    }
    fn finish(&mut self, _end: RunEnd) -> Finish {
        let _ = self.out.flush();
        match (self.exit, self.fault) {
            (Some(code), _) => Finish { status: code as u8, summary: format!("exit {code}") },
            (None, Some((v, pc_word))) => {
                let pc = self.opts.ram_base.wrapping_add((pc_word as u32) << 2);
                let off = (pc_word as usize) * 4;
                let word = self.ram.get(off..off + 4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
                let kind = FaultCode::from_value(v).map_or(format!("fault code {v:#x}"), |k| k.to_string());
                let addr = crate::circuit::fault_address(v).map_or(String::new(), |a| format!(", address {a:#010x}"));
                let instr = word.map_or("outside RAM".to_string(), |w| format!("{w:#010x}"));
                Finish { status: EXIT_FAULT, summary: format!("machine fault: {kind} at pc {pc:#010x}, instruction {instr}{addr}") }
            }
            _ => Finish { status: EXIT_STEP_LIMIT, summary: "the program had not exited".into() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuit::mem;

    fn table(text: &str) -> toml::Table {
        let t: toml::Table = toml::from_str(text).unwrap();
        let mut m = t["machine"].as_table().unwrap().clone();
        m.remove("isa");
        m
    }

    #[test]
    fn the_committed_configs_select_their_ram() {
        let c = |t: &str| Rv32Keys::parse(&table(t)).unwrap();
        assert_eq!(c(include_str!("../../configs/rv32im.toml")), Rv32MachineOptions::ram_256k());
        assert_eq!(c(include_str!("../../configs/rv32im-64k.toml")), Rv32MachineOptions::default());
        assert_eq!(c(include_str!("../../configs/rv32im-qwen35-9b.toml")).ram_size, 128 * 1024);
    }

    #[test]
    fn bad_keys_are_named() {
        let e = |t: &str| Rv32Keys::parse(&table(t)).unwrap_err().to_string();
        assert!(e("[machine]\nram_size = 1000\n").contains("power of two"));
        assert!(e("[machine]\nram = 1\n").contains("unknown field `ram`"));
        assert!(e("[machine]\nlayout = \"bits\"\n").contains("bits"));
        assert_eq!(Rv32Keys::parse(&table("[machine]\nlayout = \"byte_lanes\"\n")).unwrap().layout, MemoryLayout::ByteLanes);
    }

    #[test]
    fn the_load_image_holds_the_interpreters_initial_state() {
        for layout in [MemoryLayout::Words, MemoryLayout::ByteLanes] {
            let m = Rv32Machine { opts: Rv32MachineOptions { layout, ..Rv32MachineOptions::default() } };
            for p in m.examples().iter().take(3) {
                let img = m.load(p).unwrap();
                let cpu = crate::load_elf(&p.bytes, m.opts.interp_config()).unwrap();
                // RAM bytes back from the RAM memories' words (one word memory, or four byte lanes).
                let mut ram = vec![0u8; m.opts.ram_size as usize];
                for l in img.loads.iter().filter(|l| l.mem >= mem::RAM0) {
                    for (i, w) in l.words.iter().enumerate() {
                        match layout {
                            MemoryLayout::Words => ram[4 * i..4 * i + 4].copy_from_slice(&(*w as u32).to_le_bytes()),
                            MemoryLayout::ByteLanes => ram[4 * i + (l.mem - mem::RAM0) as usize] = *w as u8,
                        }
                    }
                }
                assert_eq!(ram, cpu.ram().bytes(), "{} {layout:?}", p.name);
                let x = img.loads.iter().find(|l| l.mem == mem::X).unwrap();
                assert_eq!(x.words, cpu.regs().iter().map(|v| *v as u64).collect::<Vec<_>>(), "{}", p.name);
            }
        }
        let m = Rv32Machine { opts: Rv32MachineOptions::default() };
        let bad = Program { name: "junk.elf".into(), bytes: b"junk".to_vec(), expected_console: None };
        assert!(m.load(&bad).unwrap_err().to_string().starts_with("junk.elf: "));
    }
}
