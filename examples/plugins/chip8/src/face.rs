//! The CHIP-8 machine's public face: the indices of its registers, memories, inputs and ports, the clock's rate,
//! and `machine`, which names the state and declares the ports, devices and program layout around a circuit.
//!
//! | state | kind | meaning |
//! |---|---|---|
//! | `PC`, `I` | registers, 12 bits | program counter, index register |
//! | `SP` | register, 4 bits | stack pointer |
//! | `DT`, `ST` | registers, 8 bits | delay and sound timers |
//! | `LAST` | register, 8 bits | the last tick count the machine saw |
//! | `BUSY` | register, 6 bits | micro-step: the row of a `DXYN` (N steps), the byte of `FX33`, `FX55`, `FX65` |
//! | `LFSR` | register, 16 bits | the random generator of `CXNN` |
//! | `VF` | register, 8 bits | the flag register (V0..VE live in memory `V`) |
//! | `STOP` | register, 1 bit | a fault was reported: the next step halts |
//! | `RAM` | memory, 4096 x 8 | font at 0, program at 0x200 |
//! | `V` | memory, 16 x 8 | V0..VE (row 15 unused) |
//! | `STACK` | memory, 16 x 12 | return addresses |
//! | `SCREEN` | memory, 32 x 64 | the display: row y, bit x = pixel (x, y) |
//! | `TICK`, `KEYS` | inputs, 8 and 16 bits | the host's tick count; the keys held |
//! | `FAULT` | port, 16 bits | the opcode of an illegal instruction |
//! | `BEEP` | port, 1 bit | the sound timer turned nonzero (1) or zero (0) |

use isa_api::{Circuit, DeviceDesc, MachineDesc, MemoryDesc, PortDesc, PortRole, ProgramLayout, RegisterDesc};

/// Register indices.
pub mod reg {
    /// Program counter, 12 bits.
    pub const PC: u32 = 0;
    /// Index register, 12 bits.
    pub const I: u32 = 1;
    /// Stack pointer, 4 bits.
    pub const SP: u32 = 2;
    /// Delay timer, 8 bits.
    pub const DT: u32 = 3;
    /// Sound timer, 8 bits.
    pub const ST: u32 = 4;
    /// The last tick count the machine saw, 8 bits.
    pub const LAST: u32 = 5;
    /// The micro-step of a micro-coded instruction, 6 bits.
    pub const BUSY: u32 = 6;
    /// The random generator of `CXNN`, 16 bits.
    pub const LFSR: u32 = 7;
    /// The flag register VF, 8 bits.
    pub const VF: u32 = 8;
    /// A fault was reported: the next step halts, 1 bit.
    pub const STOP: u32 = 9;
}

/// Memory indices.
pub mod mem {
    /// 4096 bytes: the font at 0, programs at 0x200.
    pub const RAM: u32 = 0;
    /// V0..VE, 8 bits each (row 15 unused: VF is a register).
    pub const V: u32 = 1;
    /// 16 return addresses of 12 bits.
    pub const STACK: u32 = 2;
    /// The display: 32 rows of 64 pixels.
    pub const SCREEN: u32 = 3;
}

/// Input indices.
pub mod input {
    /// The host's tick count, 8 bits.
    pub const TICK: u32 = 0;
    /// The keys held, one bit per key, 16 bits.
    pub const KEYS: u32 = 1;
}

/// Output port indices.
pub mod port {
    /// The opcode of an illegal instruction, 16 bits.
    pub const FAULT: u32 = 0;
    /// The sound timer turned nonzero (1) or zero (0), 1 bit.
    pub const BEEP: u32 = 1;
}

/// Instructions between two host ticks (60 Hz ticks at 600 instructions per second).
pub const INSTRUCTIONS_PER_TICK: u64 = 10;

/// The machine description around one step's `circuit`: the state's names and widths, the ports, the inputs,
/// the devices and where programs load.
pub(crate) fn machine(circuit: Circuit) -> MachineDesc {
    let r = |name: &str, width: u32| RegisterDesc { name: name.into(), width };
    let m = |name: &str, word_width: u32, addr_width: u32| MemoryDesc { name: name.into(), word_width, addr_width };
    let mut desc = MachineDesc::new(
        "chip8",
        vec![r("PC", 12), r("I", 12), r("SP", 4), r("DT", 8), r("ST", 8), r("LAST", 8), r("BUSY", 6), r("LFSR", 16), r("VF", 8), r("STOP", 1)],
        vec![m("RAM", 8, 12), m("V", 8, 4), m("STACK", 12, 4), m("SCREEN", 64, 5)],
        vec![PortDesc::new("FAULT", 16).with_role(PortRole::Fault), PortDesc::new("BEEP", 1)],
        circuit,
    )
    .with_inputs(vec![PortDesc::new("TICK", 8), PortDesc::new("KEYS", 16)])
    .with_devices(vec![
        DeviceDesc::Display { memory: "SCREEN".into(), width: 64, height: 32 },
        DeviceDesc::Keypad { input: "KEYS".into(), keys: 16 },
        DeviceDesc::Ticks { input: "TICK".into(), instructions: INSTRUCTIONS_PER_TICK },
        DeviceDesc::Beeper { port: "BEEP".into() },
    ])
    .with_program_layout(ProgramLayout {
        memory: "RAM".into(),
        base: u64::from(crate::interp::PROGRAM_BASE),
        preload: vec![(0, crate::interp::FONT.iter().map(|b| u64::from(*b)).collect())],
        registers: vec![("PC".into(), u64::from(crate::interp::PROGRAM_BASE)), ("LFSR".into(), u64::from(crate::interp::LFSR_SEED))],
    });
    desc.micro_step = Some(reg::BUSY);
    desc
}
