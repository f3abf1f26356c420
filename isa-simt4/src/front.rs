//! The SIMT4 machine's front: its `[machine]` keys, the program loader (a CUDA kernel and its launch,
//! compiled by [`crate::cuda`]), the built-in demo, and the host devices of a run (the arrays after the run,
//! the fault report with the kernel's source line).
//!
//! ```toml
//! [machine]
//! isa = "simt4"
//! lanes = 4              # 4, 8, 16 or 32
//! warps = 8              # most warps in a block (a power of two)
//! shared_words = 128     # shared memory, 32-bit words
//! global_words = 4096    # global memory, 32-bit words
//! ```
//!
//! A program is a launch file (`X.toml`, see [`crate::launch`]) naming its kernel, or a kernel `X.cu` with
//! its launch file `X.toml` beside it. The devices follow the decoded trace by the names the machine publishes
//! (memory `GLOBAL`, port `FAULT`, register `BUSY`): they keep the global memory the trace writes and print the
//! array arguments as JSON when the machine halts; they never execute an instruction. [`Machine::check_trace`]
//! replays the trace against the reference interpreter, comparing the whole machine state after every step.

use crate::interp::{Simt, Stop};
use crate::isa::{Fault, FaultKind, REGS, Simt4Config};
use crate::launch::{KernelImage, LaunchSpec};
use isa_api::front::{Devices, EXIT_FAULT, EXIT_STEP_LIMIT, Finish, FrontError, LoadImage, Machine, MachineFront, MemLoad, Program, RunEnd, TraceCheck, TraceCheckError};
use isa_api::host::Trace;
use isa_api::{MachineDesc, MachineFace, Protocol, StepEvents};
use serde::Deserialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The keys of a simt4 `[machine]` table (besides `isa`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Keys {
    #[serde(default = "d_lanes")]
    lanes: u32,
    #[serde(default = "d_warps")]
    warps: u32,
    #[serde(default = "d_shared")]
    shared_words: u32,
    #[serde(default = "d_global")]
    global_words: u32,
}
fn d_lanes() -> u32 {
    Simt4Config::default().lanes
}
fn d_warps() -> u32 {
    Simt4Config::default().warps
}
fn d_shared() -> u32 {
    Simt4Config::default().shared_words
}
fn d_global() -> u32 {
    Simt4Config::default().global_words
}

/// Parse and validate a `[machine]` table; errors name the bad key.
pub fn parse_keys(section: &toml::Table) -> Result<Simt4Config, FrontError> {
    let k: Keys = toml::Value::Table(section.clone()).try_into().map_err(|e| FrontError::new(format!("[machine] of simt4: {e}")))?;
    let cfg = Simt4Config { lanes: k.lanes, warps: k.warps, shared_words: k.shared_words, global_words: k.global_words };
    cfg.validate().map_err(|e| FrontError::new(format!("[machine] of simt4: {e}")))?;
    Ok(cfg)
}

/// The built-in demo: a block reversal through shared memory over two warps.
pub const DEMO_KERNEL: &str = include_str!("../../examples/cuda/demo.cu");
/// The demo's launch.
pub const DEMO_LAUNCH: &str = include_str!("../../examples/cuda/demo.toml");
/// The demo program's name.
pub const DEMO_NAME: &str = "examples/cuda/demo.cu (built in)";

/// The registry entry of SIMT4.
pub struct Simt4Front;

impl MachineFront for Simt4Front {
    fn isa(&self) -> &'static str {
        "simt4"
    }
    fn summary(&self) -> &'static str {
        "SIMT4 GPU: CUDA-subset kernels on 4 (to 32) lanes, arrays printed as JSON"
    }
    fn configure(&self, section: &toml::Table) -> Result<Box<dyn Machine>, FrontError> {
        Ok(Box::new(Simt4Machine::new(parse_keys(section)?)))
    }
    /// Lanes, warps and memory sizes from the face's memories (`R0..`, `SHARED`, `GLOBAL`).
    fn from_face(&self, face: &MachineFace, _program: Option<&Program>) -> Result<Box<dyn Machine>, FrontError> {
        let bits = |name: &str| face.memories.iter().find(|m| m.name == name).map(|m| m.addr_width);
        let lanes = face.memories.iter().filter(|m| m.name.starts_with('R') && m.name[1..].parse::<u32>().is_ok()).count() as u32;
        let (Some(rb), Some(sb), Some(gb)) = (bits("R0"), bits("SHARED"), bits("GLOBAL")) else {
            return Err(FrontError::new(format!("machine {} has no R0/SHARED/GLOBAL memories (not a simt4 checkpoint)", face.name)));
        };
        let cfg = Simt4Config { lanes, warps: 1 << (rb - 5), shared_words: 1 << sb, global_words: 1 << gb };
        cfg.validate().map_err(|e| FrontError::new(format!("machine {}: {e}", face.name)))?;
        Ok(Box::new(Simt4Machine::new(cfg)))
    }
}

/// A configured SIMT4 machine. It remembers the last kernel it loaded, for the devices and the trace check.
pub struct Simt4Machine {
    pub cfg: Simt4Config,
    last: Mutex<Option<KernelImage>>,
}

impl Simt4Machine {
    /// A machine of shape `cfg` (validated by the caller).
    pub fn new(cfg: Simt4Config) -> Self {
        Self { cfg, last: Mutex::new(None) }
    }

    /// The kernel source and launch of a program: a launch file (`.toml`) naming its kernel (or with `X.cu`
    /// beside it), a kernel `X.cu` with `X.toml` beside it, or the built-in demo.
    pub fn source_and_launch(program: &Program) -> Result<(String, String, LaunchSpec), FrontError> {
        if program.name == DEMO_NAME {
            let spec = LaunchSpec::from_toml(DEMO_LAUNCH, Path::new(".")).map_err(|e| FrontError::new(e.to_string()))?;
            return Ok((DEMO_NAME.into(), DEMO_KERNEL.into(), spec));
        }
        let path = PathBuf::from(&program.name);
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let text = |bytes: &[u8], what: &str| String::from_utf8(bytes.to_vec()).map_err(|_| FrontError::new(format!("{what}: not UTF-8 text")));
        if path.extension().is_some_and(|e| e == "toml") {
            let spec = LaunchSpec::from_toml(&text(&program.bytes, &program.name)?, &dir).map_err(|e| FrontError::new(format!("{}: {e}", program.name)))?;
            let kernel = spec.kernel.clone().unwrap_or_else(|| path.with_extension("cu"));
            let src = std::fs::read(&kernel).map_err(|e| FrontError::new(format!("{}: the kernel {}: {e}", program.name, kernel.display())))?;
            return Ok((kernel.display().to_string(), text(&src, &kernel.display().to_string())?, spec));
        }
        let launch = path.with_extension("toml");
        if !launch.is_file() {
            return Err(FrontError::new(format!(
                "{}: a kernel needs its launch: write {} (grid, block, args) or run it with `loom cuda {} --grid X --block X --arg NAME=VALUE`",
                program.name,
                launch.display(),
                program.name
            )));
        }
        let spec = LaunchSpec::from_file(&launch).map_err(|e| FrontError::new(e.to_string()))?;
        Ok((program.name.clone(), text(&program.bytes, &program.name)?, spec))
    }

    /// Compile `program` for this machine.
    pub fn compile(&self, program: &Program) -> Result<KernelImage, FrontError> {
        let (file, src, spec) = Self::source_and_launch(program)?;
        crate::cuda::compile(&src, &file, &spec, &self.cfg).map_err(|e| FrontError::new(e.to_string()))
    }

    /// The load image of a compiled kernel: the program into `PROG`, the arrays into `GLOBAL`.
    pub fn image_of(&self, k: &KernelImage) -> Result<LoadImage, FrontError> {
        let desc = self.describe()?;
        let mem = |n: &str| desc.face.memory(n).ok_or_else(|| FrontError::new(format!("the simt4 circuit has no memory {n}")));
        Ok(LoadImage::of_loads(vec![
            MemLoad { mem: mem("PROG")?, base: 0, words: k.words() },
            MemLoad { mem: mem("GLOBAL")?, base: 0, words: k.global.iter().map(|w| u64::from(*w)).collect() },
        ]))
    }
}

impl Machine for Simt4Machine {
    fn about(&self) -> String {
        let c = &self.cfg;
        format!("{} lanes, {} warps, {} shared words, {} global words", c.lanes, c.warps, c.shared_words, c.global_words)
    }
    fn describe(&self) -> Result<MachineDesc, FrontError> {
        crate::circuit::simt4_machine(&self.cfg).map_err(|e| FrontError::new(e.to_string()))
    }
    fn demo(&self) -> Option<Program> {
        Some(Program { name: DEMO_NAME.into(), bytes: DEMO_KERNEL.as_bytes().to_vec(), expected_console: None })
    }
    fn load(&self, program: &Program) -> Result<LoadImage, FrontError> {
        let k = self.compile(program)?;
        let image = self.image_of(&k)?;
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(k);
        Ok(image)
    }
    fn devices(&self, face: &MachineFace, _image: &LoadImage, console: Box<dyn Write>) -> Result<Box<dyn Devices>, FrontError> {
        let k = self.last.lock().unwrap_or_else(|e| e.into_inner()).clone().ok_or_else(|| FrontError::new("simt4: no kernel loaded"))?;
        Ok(Box::new(KernelDevices::new(face, k, console)?))
    }
    fn check_trace(&self, program: &Program, proto: &Protocol, trace: &Trace) -> Option<Result<TraceCheck, TraceCheckError>> {
        Some(self.compile(program).map_err(|e| FrontError::new(e.to_string()).into()).and_then(|k| {
            let desc = self.describe().map_err(|e| FrontError::new(e.to_string()))?;
            trace_lockstep(&self.cfg, &desc.face, proto, &k, &trace.generated).map_err(|e| TraceCheckError::Disagrees(e.to_string()))
        }))
    }
}

/// Where a fault happened, in the kernel's terms: `out-of-bounds access: lane 2 of warp 1 (thread 6): index 9
/// of out[8] at kernel.cu:12 (instruction 17)`.
pub fn describe_fault(f: &Fault, k: &KernelImage, lanes: u32) -> String {
    let line = k.lines.get(f.pc as usize).copied().unwrap_or(0);
    let at = if line > 0 { format!(" at {}:{line}", k.file) } else { String::new() };
    match f.kind {
        FaultKind::Bounds => {
            let arr = k.program.get(f.pc as usize).map(|i| {
                let (base, len) = (i.imm & 0xFFFF, i.imm >> 16);
                let name = if i.op.is_shared() { None } else { k.arrays.iter().find(|a| a.base == base && a.len == len).map(|a| a.name.clone()) };
                format!("{}[{len}]", name.unwrap_or_else(|| if i.op.is_shared() { "a shared array".into() } else { "an array".into() }))
            });
            format!(
                "out-of-bounds access: lane {} of warp {} (thread {}): index {} of {}{at} (instruction {})",
                f.lane,
                f.warp,
                f.warp * lanes + f.lane,
                f.index as i32,
                arr.unwrap_or_else(|| "an array".into()),
                f.pc
            )
        }
        FaultKind::Illegal => format!("illegal instruction word at {} (opcode {})", f.pc, f.index),
    }
}

/// The host devices of a kernel run: global memory as the trace writes it, the arrays as JSON at the end.
pub struct KernelDevices {
    kernel: KernelImage,
    lanes: u32,
    global_mem: u32,
    fault_port: u32,
    micro_step: Option<u32>,
    global: Vec<u32>,
    out: Box<dyn Write>,
    console: Vec<u8>,
    instructions: u64,
    fault: Option<Fault>,
}

impl KernelDevices {
    /// Devices for kernel `k` on a machine of face `face`, printing to `out`.
    pub fn new(face: &MachineFace, k: KernelImage, out: Box<dyn Write>) -> Result<Self, FrontError> {
        let need = |o: Option<u32>, n: &str| o.ok_or_else(|| FrontError::new(format!("machine {} has no {n}", face.name)));
        let global_mem = need(face.memory("GLOBAL"), "memory GLOBAL")?;
        let fault_port = need(face.port("FAULT"), "port FAULT")?;
        let words = 1usize << face.memories[global_mem as usize].addr_width;
        let lanes = face.memories.iter().filter(|m| m.name.starts_with('R') && m.name[1..].parse::<u32>().is_ok()).count() as u32;
        let mut global = k.global.clone();
        global.resize(words, 0);
        Ok(Self { kernel: k, lanes, global_mem, fault_port, micro_step: face.micro_step, global, out, console: Vec::new(), instructions: 0, fault: None })
    }
    /// The arrays now, as JSON.
    pub fn arrays(&self) -> serde_json::Value {
        self.kernel.arrays_json(&self.global)
    }
}

impl Devices for KernelDevices {
    fn step(&mut self, step: &StepEvents) {
        // The halting step executes HALT, an instruction of the ISA, as the interpreter counts it (so `loom
        // cuda` and `loom lockstep` give one count).
        if step.retired(self.micro_step) || step.halted {
            self.instructions += 1;
        }
        if let Some(w) = step.write(self.global_mem) {
            if let Some(g) = self.global.get_mut(w.addr as usize) {
                *g = w.data as u32;
            }
        }
        if let Some(v) = step.output(self.fault_port) {
            if self.fault.is_none() {
                self.fault = Fault::from_word(v);
            }
        }
    }
    fn instructions(&self) -> u64 {
        self.instructions
    }
    fn console(&self) -> &[u8] {
        &self.console
    }
    fn finish(&mut self, end: RunEnd) -> Finish {
        let mut text = serde_json::to_string(&self.arrays()).unwrap_or_default();
        text.push('\n');
        self.console.extend_from_slice(text.as_bytes());
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
        if let Some(f) = &self.fault {
            return Finish { status: EXIT_FAULT, summary: format!("machine fault: {}", describe_fault(f, &self.kernel, self.lanes)) };
        }
        match end {
            RunEnd::Halted => Finish { status: 0, summary: format!("kernel {} done", self.kernel.name) },
            _ => Finish { status: EXIT_STEP_LIMIT, summary: "the machine had not halted".into() },
        }
    }
}

/// Lockstep failures of a trace against the interpreter.
#[derive(Debug)]
pub struct LockstepError(pub String);

impl std::fmt::Display for LockstepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a trace lockstep compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockstepCount {
    pub steps: u64,
    pub instructions: u64,
    /// State words compared (every register of every lane and warp, shared and global memory, `PC`, `WARP`,
    /// `BUSY`, after every step).
    pub positions: u64,
}

/// Replay the generated trace of kernel `k` (steps decoded with `proto`) against the reference interpreter:
/// the state the trace implies (its register and memory writes applied to the loaded image) must equal the
/// interpreter's, whole, after every step; the end (halt or the same fault) must agree.
pub fn trace_lockstep(cfg: &Simt4Config, face: &MachineFace, proto: &Protocol, k: &KernelImage, generated: &[u32]) -> Result<TraceCheck, LockstepError> {
    let c = trace_lockstep_count(cfg, face, proto, k, generated)?;
    let mut sim = Simt::new(*cfg, &k.words(), &k.global).map_err(|e| LockstepError(e.to_string()))?;
    let stop = sim.run(c.steps + 1);
    let end = match stop {
        Some(Stop::Halt) => "halted".to_string(),
        Some(Stop::Fault(f)) => format!("fault: {}", describe_fault(&f, k, cfg.lanes)),
        None => "limit".into(),
    };
    let mut console = serde_json::to_string(&k.arrays_json(&sim.global)).unwrap_or_default().into_bytes();
    console.push(b'\n');
    Ok(TraceCheck {
        against: format!("the SIMT4 reference interpreter ({} steps, {} state words compared after every step)", c.steps, c.positions),
        instructions: c.instructions,
        end,
        console,
    })
}

/// [`trace_lockstep`]'s comparison, returning the counts.
pub fn trace_lockstep_count(cfg: &Simt4Config, face: &MachineFace, proto: &Protocol, k: &KernelImage, generated: &[u32]) -> Result<LockstepCount, LockstepError> {
    use isa_api::trace::{Decoded, StepDecoder};
    let err = |m: String| LockstepError(m);
    let need = |o: Option<u32>, n: &str| o.ok_or_else(|| err(format!("machine {} has no {n}", face.name)));
    let (pc_r, warp_r, busy_r) = (need(face.register("PC"), "PC")?, need(face.register("WARP"), "WARP")?, need(face.register("BUSY"), "BUSY")?);
    let lane_mems: Vec<u32> = (0..cfg.lanes).map(|l| need(face.memory(&format!("R{l}")), &format!("R{l}"))).collect::<Result<_, _>>()?;
    let (shared_m, global_m, wpc_m) = (need(face.memory("SHARED"), "SHARED")?, need(face.memory("GLOBAL"), "GLOBAL")?, need(face.memory("WPC"), "WPC")?);
    let fault_p = need(face.port("FAULT"), "FAULT")?;
    let mut sim = Simt::new(*cfg, &k.words(), &k.global).map_err(|e| err(e.to_string()))?;
    // The state the trace implies.
    let mut regs = sim.regs.clone();
    let mut shared = sim.shared.clone();
    let mut global = sim.global.clone();
    let mut wpc = sim.wpc.clone();
    let mut dec = StepDecoder::new(proto);
    let mut count = LockstepCount { steps: 0, instructions: 0, positions: 0 };
    for (i, &t) in generated.iter().enumerate() {
        let step = match dec.push(t) {
            Ok(Decoded::Step(s)) => s,
            Ok(_) => continue,
            Err(e) => return Err(err(format!("token {i}: {e}"))),
        };
        let (n_step, n_instr, pc) = (count.steps, count.instructions, sim.pc);
        let at = |what: String| err(format!("step {n_step} (instruction {n_instr}, pc {pc}): {what}"));
        let stop = sim.step();
        if step.halted {
            return match stop {
                Some(Stop::Halt) => {
                    count.instructions = sim.instructions;
                    Ok(count)
                }
                other => Err(at(format!("the trace halts, the interpreter {other:?}"))),
            };
        }
        count.steps += 1;
        if let Some(v) = step.output(fault_p) {
            let f = Fault::from_word(v);
            return match stop {
                Some(Stop::Fault(g)) if Some(g) == f => {
                    count.instructions = sim.instructions;
                    Ok(count)
                }
                other => Err(at(format!("the trace faults with {f:?}, the interpreter {other:?}"))),
            };
        }
        if let Some(s) = stop {
            return Err(at(format!("the interpreter stops ({s:?}), the trace goes on")));
        }
        for w in &step.writes {
            let (a, d) = (w.addr as usize, w.data as u32);
            if let Some(l) = lane_mems.iter().position(|m| *m == w.mem) {
                regs[l][a] = d;
            } else if w.mem == shared_m {
                shared[a] = d;
            } else if w.mem == global_m {
                global[a] = d;
            } else if w.mem == wpc_m {
                wpc[a] = d;
            }
        }
        let regs_now = [(step.reg(pc_r), sim.pc), (step.reg(warp_r), sim.warp), (step.reg(busy_r), sim.busy)];
        for (name, (t, s)) in ["PC", "WARP", "BUSY"].iter().zip(regs_now) {
            if t != u64::from(s) {
                return Err(at(format!("{name}: trace {t}, interpreter {s}")));
            }
        }
        for l in 0..cfg.lanes as usize {
            if regs[l] != sim.regs[l] {
                let a = (0..regs[l].len()).find(|&a| regs[l][a] != sim.regs[l][a]).unwrap_or(0);
                return Err(at(format!("lane {l}, warp {} r{}: trace {:#x}, interpreter {:#x}", a as u32 / REGS, a as u32 % REGS, regs[l][a], sim.regs[l][a])));
            }
        }
        for (name, t, s) in [("shared", &shared, &sim.shared), ("global", &global, &sim.global), ("WPC", &wpc, &sim.wpc)] {
            if t != s {
                let a = (0..t.len()).find(|&a| t[a] != s[a]).unwrap_or(0);
                return Err(at(format!("{name}[{a}]: trace {:#x}, interpreter {:#x}", t[a], s[a])));
            }
        }
        count.positions += 3 + (regs.len() * regs[0].len() + shared.len() + global.len() + wpc.len()) as u64;
        count.instructions = sim.instructions;
    }
    Ok(count)
}
