//! Not a section of the circuit: [`CircuitHart`], a hart run on the host by the reference evaluator straight
//! from the circuit ([`isa_api::Reference`]), set up from the interpreter's state or an ELF, with the host's view
//! of the ports (console, exit, faults, read(2)'s input). `tests/circuit_lockstep.rs` runs it against the
//! interpreter.

use super::rv32im_machine;
use crate::face::{
    CircuitError, FaultCode, MemoryLayout, Rv32MachineOptions, fault_address, input, mem, port, ram_image, reg,
};
use thiserror::Error;

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
        let mems = &self.reference.state.mems;
        Some(match self.opts.layout {
            MemoryLayout::ByteLanes => mems[(mem::RAM0 + off % 4) as usize][(off / 4) as usize] as u8,
            MemoryLayout::Words => (mems[mem::RAM0 as usize][(off / 4) as usize] >> (8 * (off % 4))) as u8,
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
