//! [`MachineDesc`]: everything a plugin hands over, as plain versioned data, and its validation.

use crate::circuit::{Circuit, CmpKind, NodeId, Op, ShiftKind};
use serde::{Deserialize, Serialize};

/// Version of the description format. A description with another version is rejected.
pub const API_VERSION: u32 = 1;

/// A register: a named word of `width` bits (1..=64), zero at reset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegisterDesc {
    pub name: String,
    pub width: u32,
}

/// A memory of `2^addr_width` words of `word_width` bits, zero at reset; the host may load it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryDesc {
    pub name: String,
    pub word_width: u32,
    pub addr_width: u32,
}

/// What the host does with an output port's values; published so that a host needs no ISA knowledge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PortRole {
    /// Each value is a console byte.
    Console,
    /// A value is the program's exit status; the machine halts after it.
    Exit,
    /// A nonzero value reports a machine fault (its encoding is the machine's); the machine halts after it.
    Fault,
}

/// An output port the host observes (console, IO device), or an input port the host drives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PortDesc {
    pub name: String,
    pub width: u32,
    /// What the host does with it (`None`: a device port, its values shown as data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<PortRole>,
    /// Input ports only: the output port whose request this input answers *within* the step (a
    /// memory-mapped IO read answered in the same pass: see [`crate::protocol`]). The request port's fields
    /// lead the step; as soon as the step has written them the host injects the answer, and the step goes on
    /// with it. `None`: the input is injected between steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<u32>,
}

impl PortDesc {
    /// A port without a role.
    pub fn new(name: &str, width: u32) -> Self {
        Self { name: name.into(), width, role: None, answers: None }
    }
    /// The same input port answering output port `port`'s requests within the step ([`Self::answers`]).
    pub fn answering(mut self, port: u32) -> Self {
        self.answers = Some(port);
        self
    }
    /// The same port with `role`.
    pub fn with_role(mut self, role: PortRole) -> Self {
        self.role = Some(role);
        self
    }
}

/// A memory-mapped IO range of the machine's address space, published for the host: the circuit decodes
/// the range itself; stores into it appear on output port `write_port` (the host observes them, e.g. a PPU
/// register write), and loads from it emit a request on output port `read_request_port` and take their value
/// from input port `read_port`, which the host answers by injecting its tokens: within the step where that
/// input [`PortDesc::answers`] the request port, else before the next step (the machine waits a step, as
/// micro-code). Metadata only: the trace protocol already carries the ports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IoRange {
    pub name: String,
    /// First address and number of addresses (bytes or words, as the machine addresses its memory).
    pub base: u64,
    pub size: u64,
    #[serde(default)]
    pub write_port: Option<u32>,
    #[serde(default)]
    pub read_request_port: Option<u32>,
    #[serde(default)]
    pub read_port: Option<u32>,
}

/// A host device a machine declares in its face, by the names of the state and ports it uses: any host serves
/// it without knowing the ISA (`front::PortPrinter`, the generic machine's devices; `loom run --frames`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DeviceDesc {
    /// A monochrome display of `width` x `height` pixels held in memory `memory`: word `y` is row `y`, its bit
    /// `x` pixel `x` (1 = lit). The host keeps the frame from the loads and the trace's writes to that memory.
    Display { memory: String, width: u32, height: u32 },
    /// A keypad of `keys` keys: the host injects the pressed keys as a bit mask (bit k = key k) on input
    /// `input` whenever they change (from an input file: `loom run --input`).
    Keypad { input: String, keys: u32 },
    /// A clock: after every `instructions` retired instructions the host injects the count of ticks so far
    /// (modulo the input's width) on input `input`; a machine that keeps the last count it saw sees each tick
    /// once. A tick is a frame: the host records the display there.
    Ticks { input: String, instructions: u64 },
    /// A beeper: output port `port`; a nonzero value sounds it, zero silences it.
    Beeper { port: String },
}

/// Where a machine known by its description takes a raw program (the generic front's loader): into memory
/// `memory` from word address `base`, with the `preload` words loaded with every program (a font, a ROM
/// table) and registers preset by name (a program counter at the load address).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramLayout {
    pub memory: String,
    #[serde(default)]
    pub base: u64,
    /// `(first word address, words)` loaded before the program.
    #[serde(default)]
    pub preload: Vec<(u64, Vec<u64>)>,
    /// `(register name, value)` presets.
    #[serde(default)]
    pub registers: Vec<(String, u64)>,
}

fn default_chunk() -> u32 {
    8
}

/// The face of a machine: everything a host needs besides the trace protocol (names and widths of its
/// state, its ports, inputs, IO ranges and micro-step register). [`MachineDesc`] holds it (flattened: the JSON
/// of a description has these keys at top level) and the manifest of a woven checkpoint publishes it, so the
/// two never drift apart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineFace {
    pub name: String,
    #[serde(default)]
    pub registers: Vec<RegisterDesc>,
    #[serde(default)]
    pub memories: Vec<MemoryDesc>,
    #[serde(default)]
    pub ports: Vec<PortDesc>,
    /// Input ports: latches the host sets by injecting tokens between steps (or, for an input that
    /// [`PortDesc::answers`] a request port, within the step), read by [`Op::Input`] (0 until the first
    /// injection). They carry what a machine needs from outside: the answer to a memory-mapped IO read (the
    /// machine emits the request on an output port; the host answers within the step, or between steps while
    /// the machine waits a step), interrupt lines (1-bit inputs the host raises and lowers; the circuit
    /// decides when it takes one), controllers.
    #[serde(default)]
    pub inputs: Vec<PortDesc>,
    /// Memory-mapped IO ranges (see [`IoRange`]).
    #[serde(default)]
    pub io_ranges: Vec<IoRange>,
    /// Multi-step (micro-coded) instructions, for whatever one forward pass cannot finish: the register
    /// that sequences them. A step retires an instruction iff this register is 0 after it, so a host counts
    /// instructions (and a lockstep check knows when to compare) without knowing the ISA. The circuit keeps
    /// its micro-state in registers and memory rows like any state; each micro-step is one machine step.
    #[serde(default)]
    pub micro_step: Option<u32>,
    /// Host devices the machine declares ([`DeviceDesc`]), served by any host.
    #[serde(default)]
    pub devices: Vec<DeviceDesc>,
    /// Where raw programs load ([`ProgramLayout`]; default: memory 0 from address 0).
    #[serde(default)]
    pub program: Option<ProgramLayout>,
}

impl MachineFace {
    /// Index of the register named `name`.
    pub fn register(&self, name: &str) -> Option<u32> {
        self.registers.iter().position(|r| r.name == name).map(|i| i as u32)
    }
    /// Index of the memory named `name`.
    pub fn memory(&self, name: &str) -> Option<u32> {
        self.memories.iter().position(|m| m.name == name).map(|i| i as u32)
    }
    /// Index of the output port named `name`.
    pub fn port(&self, name: &str) -> Option<u32> {
        self.ports.iter().position(|p| p.name == name).map(|i| i as u32)
    }
    /// Index of the first output port with `role`.
    pub fn port_with_role(&self, role: PortRole) -> Option<u32> {
        self.ports.iter().position(|p| p.role == Some(role)).map(|i| i as u32)
    }
    /// Index of the input port named `name`.
    pub fn input(&self, name: &str) -> Option<u32> {
        self.inputs.iter().position(|p| p.name == name).map(|i| i as u32)
    }
}

/// A machine: its face (state, host interface), per-step circuit and trace options. Reads of the face's
/// fields go through `Deref` (`desc.registers`, `desc.name`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineDesc {
    pub api_version: u32,
    #[serde(flatten)]
    pub face: MachineFace,
    pub circuit: Circuit,
    /// Bits per trace token value (1..=16): wider fields are split into chunks, low chunk first.
    #[serde(default = "default_chunk")]
    pub chunk_bits: u32,
}

impl std::ops::Deref for MachineDesc {
    type Target = MachineFace;
    fn deref(&self) -> &MachineFace {
        &self.face
    }
}

impl std::ops::DerefMut for MachineDesc {
    fn deref_mut(&mut self) -> &mut MachineFace {
        &mut self.face
    }
}

/// A malformed machine description. Every message names the offending item.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DescError {
    #[error("api_version {found} is not supported (this build reads version {expected})")]
    Version { found: u32, expected: u32 },
    #[error("machine {machine}: {msg}")]
    Invalid { machine: String, msg: String },
    #[error("malformed machine description: {0}")]
    Parse(String),
}

impl MachineDesc {
    /// A description at the current [`API_VERSION`] with 8-bit trace chunks.
    pub fn new(name: &str, registers: Vec<RegisterDesc>, memories: Vec<MemoryDesc>, ports: Vec<PortDesc>, circuit: Circuit) -> Self {
        let face = MachineFace { name: name.into(), registers, memories, ports, inputs: Vec::new(), io_ranges: Vec::new(), micro_step: None, devices: Vec::new(), program: None };
        Self { api_version: API_VERSION, face, circuit, chunk_bits: 8 }
    }

    /// The same machine with input ports `inputs`.
    pub fn with_inputs(mut self, inputs: Vec<PortDesc>) -> Self {
        self.inputs = inputs;
        self
    }

    /// The same description taking raw programs as `layout` says.
    pub fn with_program_layout(mut self, layout: ProgramLayout) -> Self {
        self.program = Some(layout);
        self
    }

    /// The same description declaring host `devices`.
    pub fn with_devices(mut self, devices: Vec<DeviceDesc>) -> Self {
        self.devices = devices;
        self
    }

    /// Parse JSON bytes and validate.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DescError> {
        let d: MachineDesc = serde_json::from_slice(bytes).map_err(|e| DescError::Parse(e.to_string()))?;
        d.validate()?;
        Ok(d)
    }

    /// Serialize to JSON bytes.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a machine description always serializes")
    }

    /// Check versions, widths, operand order and references. Every later stage may assume a validated
    /// description.
    pub fn validate(&self) -> Result<(), DescError> {
        if self.api_version != API_VERSION {
            return Err(DescError::Version { found: self.api_version, expected: API_VERSION });
        }
        let bad = |msg: String| DescError::Invalid { machine: self.name.clone(), msg };
        if !(1..=16).contains(&self.chunk_bits) {
            return Err(bad(format!("chunk_bits {} must be in 1..=16", self.chunk_bits)));
        }
        for r in &self.registers {
            if !(1..=64).contains(&r.width) {
                return Err(bad(format!("register {} has width {} (1..=64)", r.name, r.width)));
            }
        }
        for m in &self.memories {
            if !(1..=64).contains(&m.word_width) || !(1..=24).contains(&m.addr_width) {
                return Err(bad(format!("memory {}: word width {} (1..=64), address width {} (1..=24)", m.name, m.word_width, m.addr_width)));
            }
        }
        for p in self.ports.iter().chain(&self.inputs) {
            if !(1..=64).contains(&p.width) {
                return Err(bad(format!("port {} has width {} (1..=64)", p.name, p.width)));
            }
        }
        if let Some(l) = &self.program {
            let m = self.memories.iter().find(|m| m.name == l.memory).ok_or_else(|| bad(format!("program layout: no memory {}", l.memory)))?;
            let rows = 1u64 << m.addr_width;
            if l.base >= rows || l.preload.iter().any(|(a, w)| a + w.len() as u64 > rows) {
                return Err(bad(format!("program layout: base or preload outside memory {} of {rows} words", l.memory)));
            }
            for (r, _) in &l.registers {
                if !self.registers.iter().any(|x| &x.name == r) {
                    return Err(bad(format!("program layout: no register {r}")));
                }
            }
        }
        for d in &self.devices {
            let input = |name: &str| self.inputs.iter().find(|p| p.name == name).ok_or_else(|| bad(format!("device {d:?}: no input port {name}")));
            match d {
                DeviceDesc::Display { memory, width, height } => {
                    let m = self.memories.iter().find(|m| &m.name == memory).ok_or_else(|| bad(format!("display: no memory {memory}")))?;
                    if *width == 0 || *height == 0 || *width > m.word_width || u64::from(*height) > 1u64 << m.addr_width {
                        return Err(bad(format!("display of {width} x {height} does not fit memory {memory} ({} rows of {} bits)", 1u64 << m.addr_width, m.word_width)));
                    }
                }
                DeviceDesc::Keypad { input: i, keys } => {
                    let p = input(i)?;
                    if *keys == 0 || *keys > p.width {
                        return Err(bad(format!("keypad of {keys} keys does not fit input {i} of {} bits", p.width)));
                    }
                }
                DeviceDesc::Ticks { input: i, instructions } => {
                    input(i)?;
                    if *instructions == 0 {
                        return Err(bad("ticks every 0 instructions".into()));
                    }
                }
                DeviceDesc::Beeper { port } => {
                    if !self.ports.iter().any(|p| &p.name == port) {
                        return Err(bad(format!("beeper: no output port {port}")));
                    }
                }
            }
        }
        let c = &self.circuit;
        let w = |id: NodeId| c.nodes[id as usize].width;
        for (i, n) in c.nodes.iter().enumerate() {
            let e = |msg: String| bad(format!("node {i} ({:?}): {msg}", n.op));
            if !(1..=64).contains(&n.width) {
                return Err(e(format!("width {} (1..=64)", n.width)));
            }
            for o in n.op.operands() {
                if o as usize >= i {
                    return Err(e(format!("operand {o} is not an earlier node")));
                }
            }
            let same = |a: NodeId, b: NodeId| -> Result<(), DescError> {
                if w(a) != n.width || w(b) != n.width {
                    return Err(e(format!("operands have widths {} and {}, result {}", w(a), w(b), n.width)));
                }
                Ok(())
            };
            match &n.op {
                Op::Const { value } => {
                    if n.width < 64 && *value >> n.width != 0 {
                        return Err(e(format!("constant {value} does not fit {} bits", n.width)));
                    }
                }
                Op::Reg { reg } => {
                    let r = self.registers.get(*reg as usize).ok_or_else(|| e(format!("no register {reg}")))?;
                    if r.width != n.width {
                        return Err(e(format!("register {} is {} bits", r.name, r.width)));
                    }
                }
                Op::Input { port } => {
                    let p = self.inputs.get(*port as usize).ok_or_else(|| e(format!("no input port {port}")))?;
                    if p.width != n.width {
                        return Err(e(format!("input port {} is {} bits", p.name, p.width)));
                    }
                }
                Op::Load { mem, addr } => {
                    let m = self.memories.get(*mem as usize).ok_or_else(|| e(format!("no memory {mem}")))?;
                    if m.word_width != n.width || m.addr_width != w(*addr) {
                        return Err(e(format!("memory {} has {}-bit words and {}-bit addresses", m.name, m.word_width, m.addr_width)));
                    }
                }
                Op::Add { a, b, cin } => {
                    same(*a, *b)?;
                    if let Some(c) = cin {
                        if w(*c) != 1 {
                            return Err(e("carry in must be 1 bit".into()));
                        }
                    }
                }
                Op::Sub { a, b } | Op::And { a, b } | Op::Or { a, b } | Op::Xor { a, b } | Op::MulLo { a, b } | Op::MulHi { a, b, .. } => {
                    same(*a, *b)?
                }
                Op::Not { a } => {
                    if w(*a) != n.width {
                        return Err(e("operand width differs".into()));
                    }
                }
                Op::ShiftConst { a, .. } => {
                    if w(*a) != n.width {
                        return Err(e("operand width differs".into()));
                    }
                }
                Op::Shift { a, by, kind } => {
                    if w(*a) != n.width {
                        return Err(e("operand width differs".into()));
                    }
                    if w(*by) > 8 {
                        return Err(e(format!("shift amount is {} bits wide (at most 8: slice it)", w(*by))));
                    }
                    let _: ShiftKind = *kind;
                }
                Op::Cmp { a, b, kind } => {
                    let _: CmpKind = *kind;
                    if n.width != 1 || w(*a) != w(*b) {
                        return Err(e("a comparison takes equal widths and yields 1 bit".into()));
                    }
                }
                Op::Mux { sel, if0, if1 } => {
                    if w(*sel) != 1 || w(*if0) != n.width || w(*if1) != n.width {
                        return Err(e("mux takes a 1-bit select and two operands of the result width".into()));
                    }
                }
                Op::Zext { a } | Op::Sext { a } => {
                    if w(*a) > n.width {
                        return Err(e(format!("extension from {} to {} bits narrows", w(*a), n.width)));
                    }
                }
                Op::Slice { a, lo } => {
                    if lo + n.width > w(*a) {
                        return Err(e(format!("slice {lo}..{} of a {}-bit word", lo + n.width, w(*a))));
                    }
                }
                Op::Concat { parts } => {
                    let s: u32 = parts.iter().map(|p| w(*p)).sum();
                    if s != n.width || parts.is_empty() {
                        return Err(e(format!("parts add up to {s} bits")));
                    }
                }
                Op::Sum { terms, konst } => {
                    if terms.iter().any(|t| t.shift >= 64) {
                        return Err(e("a sum term shifted by 64 bits or more".into()));
                    }
                    if n.width < 64 && *konst >> n.width != 0 {
                        return Err(e(format!("constant {konst} does not fit {} bits", n.width)));
                    }
                }
                Op::AndOr { cases } | Op::OneHot { cases } => {
                    if cases.is_empty() || cases.iter().any(|(s, v)| w(*s) != 1 || w(*v) != n.width) {
                        return Err(e("and_or / one_hot takes at least one case of a 1-bit select and a value of the result width".into()));
                    }
                }
                Op::Lookup { table, index } => {
                    if w(*index) > 12 {
                        return Err(e("lookup index wider than 12 bits".into()));
                    }
                    if table.len() > 1usize << w(*index) {
                        return Err(e(format!("table of {} entries for a {}-bit index", table.len(), w(*index))));
                    }
                    if n.width < 64 && table.iter().any(|v| v >> n.width != 0) {
                        return Err(e("a table entry does not fit the width".into()));
                    }
                }
            }
        }
        let node = |id: NodeId, what: &str| -> Result<u32, DescError> {
            c.nodes.get(id as usize).map(|n| n.width).ok_or_else(|| bad(format!("{what} names node {id}, which does not exist")))
        };
        let mut seen_reg = vec![false; self.registers.len()];
        for rn in &c.next {
            let r = self.registers.get(rn.reg as usize).ok_or_else(|| bad(format!("next value for register {} which does not exist", rn.reg)))?;
            if std::mem::replace(&mut seen_reg[rn.reg as usize], true) {
                return Err(bad(format!("register {} has two next values", r.name)));
            }
            if node(rn.value, "a register next value")? != r.width {
                return Err(bad(format!("next value of register {} has the wrong width", r.name)));
            }
        }
        let mut seen_mem = vec![false; self.memories.len()];
        for mw in &c.mem_writes {
            let m = self.memories.get(mw.mem as usize).ok_or_else(|| bad(format!("write to memory {} which does not exist", mw.mem)))?;
            if std::mem::replace(&mut seen_mem[mw.mem as usize], true) {
                return Err(bad(format!("memory {} has two write ports (one per step is supported)", m.name)));
            }
            if node(mw.addr, "a memory write")? != m.addr_width || node(mw.data, "a memory write")? != m.word_width || node(mw.enable, "a memory write")? != 1 {
                return Err(bad(format!("write to memory {}: address, data or enable has the wrong width", m.name)));
            }
        }
        let mut seen_clear = vec![false; self.memories.len()];
        for mc in &c.mem_clears {
            let m = self.memories.get(mc.mem as usize).ok_or_else(|| bad(format!("clear of memory {} which does not exist", mc.mem)))?;
            if std::mem::replace(&mut seen_clear[mc.mem as usize], true) {
                return Err(bad(format!("memory {} is cleared twice", m.name)));
            }
            if node(mc.enable, "a memory clear")? != 1 {
                return Err(bad(format!("clear of memory {}: the enable must be a 1-bit node", m.name)));
            }
        }
        let mut seen_port = vec![false; self.ports.len()];
        for o in &c.outputs {
            let p = self.ports.get(o.port as usize).ok_or_else(|| bad(format!("write to port {} which does not exist", o.port)))?;
            if std::mem::replace(&mut seen_port[o.port as usize], true) {
                return Err(bad(format!("port {} is written twice", p.name)));
            }
            if node(o.value, "an output")? != p.width || node(o.enable, "an output")? != 1 {
                return Err(bad(format!("write to port {}: value or enable has the wrong width", p.name)));
            }
        }
        if let Some(h) = c.halt {
            if node(h, "halt")? != 1 {
                return Err(bad("halt must be a 1-bit node".into()));
            }
        }
        if let Some(r) = self.micro_step.filter(|r| *r as usize >= self.registers.len()) {
            return Err(bad(format!("micro_step names register {r}, which does not exist")));
        }
        for (i, r) in self.io_ranges.iter().enumerate() {
            let out_ok = |p: Option<u32>| p.is_none_or(|p| (p as usize) < self.ports.len());
            if r.size == 0 || r.base.checked_add(r.size).is_none() {
                return Err(bad(format!("IO range {} is empty or wraps", r.name)));
            }
            if !out_ok(r.write_port) || !out_ok(r.read_request_port) || r.read_port.is_some_and(|p| p as usize >= self.inputs.len()) {
                return Err(bad(format!("IO range {} names a port that does not exist", r.name)));
            }
            if r.read_request_port.is_some() != r.read_port.is_some() {
                return Err(bad(format!("IO range {}: reads need both a request (output) port and an answer (input) port", r.name)));
            }
            if let Some(o) = self.io_ranges[..i].iter().find(|o| o.base < r.base + r.size && r.base < o.base + o.size) {
                return Err(bad(format!("IO ranges {} and {} overlap", o.name, r.name)));
            }
        }
        if let Some(p) = self.ports.iter().find(|p| p.answers.is_some()) {
            return Err(bad(format!("output port {} answers a port: only inputs answer requests", p.name)));
        }
        for (i, p) in self.inputs.iter().enumerate() {
            let Some(port) = p.answers else { continue };
            if !c.outputs.iter().any(|o| o.port == port) {
                return Err(bad(format!("input {} answers port {port}, which the circuit never writes", p.name)));
            }
            if let Some(o) = self.inputs[..i].iter().find(|o| o.answers == Some(port)) {
                return Err(bad(format!("inputs {} and {} answer the same port {port}", o.name, p.name)));
            }
        }
        let mut names = std::collections::HashSet::new();
        for n in self.registers.iter().map(|r| &r.name).chain(self.memories.iter().map(|m| &m.name)).chain(self.ports.iter().chain(&self.inputs).map(|p| &p.name)) {
            if !names.insert(n) || n.is_empty() {
                return Err(bad(format!("name {n:?} is empty or used twice")));
            }
        }
        Ok(())
    }
}
