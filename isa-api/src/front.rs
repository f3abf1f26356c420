//! A machine's front: what a machine crate hands the binary besides its circuit. It parses the machine's own
//! config keys, describes the machine, turns a program file into the machine's load image, names a built-in
//! demo program, and provides the host devices of a run (console, exit, fault report, input ports).
//!
//! The binary keeps one registry of [`MachineFront`]s (one line per machine) and runs every machine through
//! the same verbs; nothing in it knows an ISA. A machine from a description file or a dynamically loaded
//! plugin gets the generic front ([`GenericMachine`]): raw images into its first memory, output ports printed.
//!
//! Host devices only play what lies outside the machine: they read the decoded trace ([`StepEvents`]) and
//! inject input values between steps; they never compute an instruction.

use crate::host::Trace;
use crate::machine::{MachineDesc, MachineFace};
use crate::protocol::Protocol;
use crate::trace::StepEvents;
use std::io::Write;

/// A front's error: a bad config key, a malformed program, a machine it does not serve. Names the problem.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FrontError(pub String);

/// Why [`Machine::check_trace`] could not vouch for a trace: the program gave no reference to check against,
/// or the trace disagrees with the reference (where and what).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceCheckError {
    /// The program could not be turned into the reference's start state.
    #[error("{0}")]
    Program(#[from] FrontError),
    /// The trace left the protocol or disagrees with the reference: the position or instruction and the values.
    #[error("{0}")]
    Disagrees(String),
}

impl FrontError {
    /// An error with this message.
    pub fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

/// A program file (or a built-in program): its name for messages, its bytes, and the console output it is
/// known to produce (built-in examples), for lockstep checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub name: String,
    pub bytes: Vec<u8>,
    pub expected_console: Option<Vec<u8>>,
}

impl Program {
    /// A program read from `path`.
    pub fn from_file(path: &std::path::Path) -> Result<Self, FrontError> {
        let bytes = std::fs::read(path).map_err(|e| FrontError(format!("reading {}: {e}", path.display())))?;
        Ok(Self { name: path.display().to_string(), bytes, expected_console: None })
    }
}

/// Words the host loads into one memory before the first step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemLoad {
    pub mem: u32,
    /// First word address.
    pub base: u64,
    pub words: Vec<u64>,
}

/// A program as the machine's initial state: the load tokens of the prompt, and register presets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadImage {
    pub loads: Vec<MemLoad>,
    /// Registers that start at a value other than 0, `(register, value)` (e.g. a program counter at the
    /// program's entry point), written as [`Protocol::preset_tokens`] before the prompt's `STEP`.
    pub regs: Vec<(u32, u64)>,
}

impl LoadImage {
    /// Loads only, every register from 0.
    pub fn of_loads(loads: Vec<MemLoad>) -> Self {
        Self { loads, regs: Vec::new() }
    }

    /// The prompt: load tokens for every nonzero word of every load, in order, then the register presets,
    /// then `STEP`.
    pub fn prompt(&self, proto: &Protocol) -> Vec<u32> {
        let mut p = Vec::new();
        for l in &self.loads {
            p.extend(proto.load_tokens(l.mem, l.base, &l.words));
        }
        p.extend(proto.preset_tokens(&self.regs));
        p.push(proto.step_token);
        p
    }

    /// Apply the loads and register presets to a reference machine.
    pub fn load_into(&self, r: &mut crate::Reference) {
        for l in &self.loads {
            r.load(l.mem, l.base, &l.words);
        }
        r.preset(&self.regs);
    }
}

/// How a host run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// The machine wrote `HALT`.
    Halted,
    /// The step bound was reached first.
    StepLimit,
    /// The host's devices ended the run ([`Devices::done`]: e.g. a test ROM reported its result).
    Devices,
}

/// What the devices say at the end of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finish {
    /// The process exit status (a program's exit code, or a fault/step-limit status).
    pub status: u8,
    /// One line for the user: how the program ended (`exit 0`, the fault with pc and address, ...).
    pub summary: String,
}

/// Exit status when the machine faults: 128 + SIGABRT.
pub const EXIT_FAULT: u8 = 134;
/// Exit status when the step bound ends the run before the machine halts.
pub const EXIT_STEP_LIMIT: u8 = 124;

/// The host devices of one run.
pub trait Devices {
    /// Input-port values `(port, value)` the host injects at step boundary `steps` (0: before the first
    /// step): device answers, interrupt lines, controllers. Default: none.
    fn inject(&mut self, _steps: usize) -> Vec<(u32, u64)> {
        Vec::new()
    }
    /// The answer to `request`, the value the step wrote on output port `port`, which an input answers within
    /// the step ([`crate::Protocol::answered`]: a memory-mapped IO read): the value the host injects on that
    /// input, right after the request and before the step goes on. Default: 0 (a host that serves no such
    /// device).
    fn answer(&mut self, _port: u32, _request: u64) -> u64 {
        0
    }
    /// One step of the trace, decoded (a `HALT` step too).
    fn step(&mut self, step: &StepEvents);
    /// Instructions retired so far.
    fn instructions(&self) -> u64;
    /// Console bytes produced so far.
    fn console(&self) -> &[u8];
    /// The end of the run.
    fn finish(&mut self, end: RunEnd) -> Finish;
    /// Whether the devices have seen what they wait for (a test ROM's result, a program's last frame), so
    /// the host stops at this step boundary though the machine runs on (NES programs never halt). Default:
    /// never; the run ends when the machine halts or at the step bound.
    fn done(&self) -> bool {
        false
    }
    /// A few words on where the devices stand, for the host's progress line (`frame 12 of 120`). Default:
    /// none.
    fn progress(&self) -> Option<String> {
        None
    }
    /// The display frames recorded so far, taken (machines with a display device; see
    /// [`crate::devices::DeviceHost`]). Default: none.
    fn take_frames(&mut self) -> Vec<crate::devices::Frame> {
        Vec::new()
    }
}

/// What a host gives a run's devices besides the console.
pub struct HostIo {
    /// The program's standard input, read as the machine asks for it (RV32's read(2)).
    pub stdin: Box<dyn std::io::Read>,
    /// Stop after this many frames (ticks of a declared clock); `None`: run until the machine halts.
    pub frames: Option<u64>,
    /// The keys of a declared keypad, by frame.
    pub keys: crate::devices::KeySchedule,
}

impl Default for HostIo {
    fn default() -> Self {
        Self { stdin: Box::new(std::io::empty()), frames: None, keys: Default::default() }
    }
}

/// An independent check of a finished trace (RV32: the reference interpreter, itself checked against QEMU).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceCheck {
    /// What it compared against.
    pub against: String,
    /// Instructions compared.
    pub instructions: u64,
    /// How the program ended, in words (`exit 0`, a fault, `limit`).
    pub end: String,
    /// Console output the check saw.
    pub console: Vec<u8>,
}

/// A configured machine.
pub trait Machine {
    /// A few words on how it is configured, for the run's header (`256 KiB RAM at 0x10000`).
    fn about(&self) -> String {
        String::new()
    }
    /// The machine description (state, circuit, host interface).
    fn describe(&self) -> Result<MachineDesc, FrontError>;
    /// The built-in demo program (`loom run CONFIG` with no program).
    fn demo(&self) -> Option<Program>;
    /// Built-in programs for `loom lockstep` (default: the demo).
    fn examples(&self) -> Vec<Program> {
        self.demo().into_iter().collect()
    }
    /// The built-in program named `name`.
    fn example(&self, name: &str) -> Option<Program> {
        self.examples().into_iter().find(|p| p.name == name)
    }
    /// Turn a program into the machine's load image; a malformed program is an error naming the problem.
    fn load(&self, program: &Program) -> Result<LoadImage, FrontError>;
    /// The host devices of a run of `program`: console bytes are echoed to `console` as they come.
    fn devices(&self, face: &MachineFace, image: &LoadImage, console: Box<dyn Write>) -> Result<Box<dyn Devices>, FrontError>;
    /// [`Machine::devices`] with what the host gives besides the console ([`HostIo`]): the program's standard
    /// input (RV32's read(2): the devices read it one byte at a time as the machine asks, and inject it), a
    /// frame limit and keys for declared devices. Machines that use none of it keep this default, which
    /// ignores `io`.
    fn devices_with(&self, face: &MachineFace, image: &LoadImage, console: Box<dyn Write>, io: HostIo) -> Result<Box<dyn Devices>, FrontError> {
        let _ = io;
        self.devices(face, image, console)
    }
    /// Check a finished trace of `program` against an independent reference, where the machine has one
    /// besides its circuit's [`crate::Reference`]. `None`: no such reference.
    fn check_trace(&self, _program: &Program, _proto: &Protocol, _trace: &Trace) -> Option<Result<TraceCheck, TraceCheckError>> {
        None
    }
}

/// A registry entry: one machine crate's front.
pub trait MachineFront: Sync {
    /// The name configs select it by (`[machine] isa = "..."`) and the woven machine's name.
    fn isa(&self) -> &'static str;
    /// One line about the machine.
    fn summary(&self) -> &'static str;
    /// Configure the machine from its `[machine]` table (every key but `isa` and `plugin`); an unknown or bad
    /// key is an error naming it.
    fn configure(&self, section: &toml::Table) -> Result<Box<dyn Machine>, FrontError>;
    /// The machine a woven checkpoint's face describes, for running `program` on it (`loom run --model`):
    /// what the face leaves open the program may fix (RV32: the RAM base, from the ELF's segments).
    fn from_face(&self, face: &MachineFace, program: Option<&Program>) -> Result<Box<dyn Machine>, FrontError>;
}

/// Reject every key of a `[machine]` table but `allowed`, naming the first unknown one.
pub fn check_keys(isa: &str, section: &toml::Table, allowed: &[&str]) -> Result<(), FrontError> {
    match section.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(FrontError(format!(
            "[machine]: unknown key {k:?} for machine {isa} ({})",
            if allowed.is_empty() { "it takes no keys".to_string() } else { format!("it takes {}", allowed.join(", ")) }
        ))),
        None => Ok(()),
    }
}

/// A machine known only by its description (a description file, a plugin, a checkpoint's face): programs are
/// raw images loaded into memory 0 from address 0 (little-endian words of its width), the devices print
/// every output-port write as `PORT value`.
pub struct GenericMachine {
    /// The description (`None` when only the face is known: a checkpoint).
    pub desc: Option<MachineDesc>,
    pub face: MachineFace,
    pub demo: Option<Program>,
    /// Input injections by step boundary, for machines whose input devices follow a fixed schedule.
    pub schedule: Option<fn(usize) -> Vec<(u32, u64)>>,
}

impl GenericMachine {
    /// A generic machine of description `desc`.
    pub fn new(desc: MachineDesc, demo: Option<Program>) -> Self {
        Self { face: desc.face.clone(), desc: Some(desc), demo, schedule: None }
    }
    /// A generic machine known by its face only (it runs, it cannot be woven).
    pub fn of_face(face: MachineFace, demo: Option<Program>) -> Self {
        Self { desc: None, face, demo, schedule: None }
    }
}

/// Raw image bytes as little-endian words of `word_width` bits.
pub fn raw_words(bytes: &[u8], word_width: u32) -> Vec<u64> {
    let wb = word_width.div_ceil(8) as usize;
    bytes.chunks(wb).map(|c| c.iter().rev().fold(0u64, |acc, b| (acc << 8) | *b as u64)).collect()
}

impl Machine for GenericMachine {
    fn describe(&self) -> Result<MachineDesc, FrontError> {
        self.desc.clone().ok_or_else(|| FrontError(format!("machine {} is known by its checkpoint only", self.face.name)))
    }
    fn demo(&self) -> Option<Program> {
        self.demo.clone()
    }
    /// A raw image into memory 0 from address 0, or where the face's [`crate::ProgramLayout`] says (with its
    /// preloads and register presets).
    fn load(&self, program: &Program) -> Result<LoadImage, FrontError> {
        if self.face.memories.is_empty() && program.bytes.is_empty() {
            return Ok(LoadImage::default());
        }
        let (mi, base) = match &self.face.program {
            Some(l) => (self.face.memory(&l.memory).ok_or_else(|| FrontError(format!("machine {}: no memory {}", self.face.name, l.memory)))?, l.base),
            None => (0, 0),
        };
        let m = self.face.memories.get(mi as usize).ok_or_else(|| FrontError(format!("machine {} has no memory to load {} into", self.face.name, program.name)))?;
        let words = raw_words(&program.bytes, m.word_width);
        let room = (1u64 << m.addr_width) - base;
        if words.len() as u64 > room {
            return Err(FrontError(format!("{}: {} words do not fit memory {} of {} words from {base:#x} ({room} words)", program.name, words.len(), m.name, 1u64 << m.addr_width)));
        }
        let mut loads = Vec::new();
        let mut regs = Vec::new();
        if let Some(l) = &self.face.program {
            loads.extend(l.preload.iter().map(|(a, w)| MemLoad { mem: mi, base: *a, words: w.clone() }));
            for (name, v) in &l.registers {
                regs.push((self.face.register(name).ok_or_else(|| FrontError(format!("machine {}: no register {name}", self.face.name)))?, *v));
            }
        }
        loads.push(MemLoad { mem: mi, base, words });
        Ok(LoadImage { loads, regs })
    }
    fn devices(&self, face: &MachineFace, image: &LoadImage, console: Box<dyn Write>) -> Result<Box<dyn Devices>, FrontError> {
        self.devices_with(face, image, console, HostIo::default())
    }
    /// The port printer, serving the devices the face declares ([`crate::DeviceDesc`]) with `io`'s frame limit
    /// and keys.
    fn devices_with(&self, face: &MachineFace, image: &LoadImage, console: Box<dyn Write>, io: HostIo) -> Result<Box<dyn Devices>, FrontError> {
        let mut d = PortPrinter::new(face, console);
        d.schedule = self.schedule;
        d.devices = crate::devices::DeviceHost::new(face, image, io.keys, io.frames);
        Ok(Box::new(d))
    }
}

/// Devices of a generic machine, by the roles its ports publish ([`crate::PortRole`]): console ports write
/// their bytes, an exit port's value is the exit status, a nonzero fault port value is a fault (status
/// [`EXIT_FAULT`]); the ports of declared devices ([`crate::DeviceDesc`]: a beeper) feed those devices; every
/// other output-port write is a console line `PORT value`. Instructions are counted by the micro-step rule; a
/// halt without an exit value is status 0.
pub struct PortPrinter {
    ports: Vec<crate::PortDesc>,
    micro_step: Option<u32>,
    out: Box<dyn Write>,
    console: Vec<u8>,
    instructions: u64,
    exit: Option<u64>,
    fault: Option<(u32, u64)>,
    /// Input injections by step boundary (machines with input devices of their own set this).
    pub schedule: Option<fn(usize) -> Vec<(u32, u64)>>,
    /// The devices the face declares.
    pub devices: crate::devices::DeviceHost,
    /// Output ports that belong to a declared device (not printed).
    device_ports: Vec<u32>,
}

impl PortPrinter {
    /// Devices for `face`, echoing to `out`.
    pub fn new(face: &MachineFace, out: Box<dyn Write>) -> Self {
        let device_ports = face.devices.iter().filter_map(|d| if let crate::DeviceDesc::Beeper { port } = d { face.port(port) } else { None }).collect();
        let devices = crate::devices::DeviceHost::new(face, &LoadImage::default(), Default::default(), None);
        Self { ports: face.ports.clone(), micro_step: face.micro_step, out, console: Vec::new(), instructions: 0, exit: None, fault: None, schedule: None, devices, device_ports }
    }
}

impl Devices for PortPrinter {
    fn inject(&mut self, steps: usize) -> Vec<(u32, u64)> {
        let mut v = self.schedule.map_or_else(Vec::new, |f| f(steps));
        v.extend(self.devices.inject());
        v
    }
    fn step(&mut self, step: &StepEvents) {
        if step.retired(self.micro_step) {
            self.instructions += 1;
        }
        self.devices.step(step);
        for &(port, v) in &step.outputs {
            if self.device_ports.contains(&port) {
                continue;
            }
            let p = self.ports.get(port as usize);
            let bytes = match p.and_then(|p| p.role) {
                Some(crate::PortRole::Console) => vec![v as u8],
                Some(crate::PortRole::Exit) => {
                    self.exit = Some(v);
                    continue;
                }
                Some(crate::PortRole::Fault) => {
                    if v != 0 && self.fault.is_none() {
                        self.fault = Some((port, v));
                    }
                    continue;
                }
                None => format!("{} {v}\n", p.map_or("?", |p| p.name.as_str())).into_bytes(),
            };
            self.console.extend_from_slice(&bytes);
            let _ = self.out.write_all(&bytes);
        }
    }
    fn instructions(&self) -> u64 {
        self.instructions
    }
    fn console(&self) -> &[u8] {
        &self.console
    }
    fn done(&self) -> bool {
        self.devices.done()
    }
    fn progress(&self) -> Option<String> {
        (self.devices.ticks() > 0).then(|| format!("frame {}", self.devices.ticks()))
    }
    fn take_frames(&mut self) -> Vec<crate::devices::Frame> {
        self.devices.take_frames()
    }
    fn finish(&mut self, end: RunEnd) -> Finish {
        let _ = self.out.flush();
        if let Some(code) = self.exit {
            return Finish { status: code as u8, summary: format!("exit {code}") };
        }
        if let Some((port, v)) = self.fault {
            let name = self.ports.get(port as usize).map_or("?", |p| p.name.as_str());
            return Finish { status: EXIT_FAULT, summary: format!("machine fault: {name} = {v:#x}") };
        }
        match end {
            RunEnd::Halted => Finish { status: 0, summary: "halted".into() },
            RunEnd::StepLimit => Finish { status: EXIT_STEP_LIMIT, summary: "the machine had not halted".into() },
            RunEnd::Devices if self.devices.done() => {
                let beep = if self.devices.has_beeper() { format!(", the beeper on in {}", self.devices.beep_frames()) } else { String::new() };
                Finish { status: 0, summary: format!("{} frames{beep}", self.devices.ticks()) }
            }
            RunEnd::Devices => Finish { status: 0, summary: "the devices ended the run".into() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PortDesc, PortRole};

    fn step(outputs: Vec<(u32, u64)>) -> StepEvents {
        StepEvents { outputs, ..StepEvents::default() }
    }

    #[test]
    fn generic_devices_follow_the_published_port_roles() {
        let face = MachineFace {
            name: "m".into(),
            registers: vec![],
            memories: vec![],
            ports: vec![PortDesc::new("TTY", 8).with_role(PortRole::Console), PortDesc::new("DATA", 16), PortDesc::new("EXIT", 8).with_role(PortRole::Exit), PortDesc::new("FAULT", 8).with_role(PortRole::Fault)],
            inputs: vec![],
            io_ranges: vec![],
            micro_step: None,
            devices: vec![],
            program: None,
        };
        let mut d = PortPrinter::new(&face, Box::new(std::io::sink()));
        d.step(&step(vec![(0, b'h' as u64), (1, 513)]));
        d.step(&step(vec![(0, b'i' as u64)]));
        assert_eq!(d.console(), b"hDATA 513\ni");
        assert_eq!(d.instructions(), 2);
        let mut e = PortPrinter::new(&face, Box::new(std::io::sink()));
        e.step(&step(vec![(2, 7)]));
        assert_eq!(e.finish(RunEnd::Halted), Finish { status: 7, summary: "exit 7".into() });
        let mut f = PortPrinter::new(&face, Box::new(std::io::sink()));
        f.step(&step(vec![(3, 0)]));
        assert_eq!(f.finish(RunEnd::StepLimit).status, EXIT_STEP_LIMIT);
        f.step(&step(vec![(3, 4)]));
        assert_eq!(f.finish(RunEnd::Halted), Finish { status: EXIT_FAULT, summary: "machine fault: FAULT = 0x4".into() });
        // A port's role is published in the description's JSON only when it has one.
        let json = serde_json::to_string(&face.ports).unwrap();
        assert!(json.contains("\"role\":\"console\"") && json.contains("{\"name\":\"DATA\",\"width\":16}"), "{json}");
    }
}
