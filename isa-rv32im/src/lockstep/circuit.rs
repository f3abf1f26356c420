//! Lockstep of the circuit (run by `isa_api::eval::Reference`) against the interpreter [`Cpu`], and of a woven
//! machine's trace against the interpreter: after every retired instruction pc and x0..x31 are compared;
//! console bytes, exit status and stops must agree. Both stop at the first disagreement ([`LockstepError`]).

use super::{LockstepEnd, LockstepReport};
use crate::circuit::{CircuitHart, FaultCode, HartError, Rv32MachineOptions};
use crate::error::{Access, Rv32Error};
use crate::interp::{Cpu, StepEvent};

/// Most machine steps one instruction may take (a division takes 33, a write one per byte).
pub const MAX_STEPS_PER_INSTRUCTION: usize = 1 << 20;

/// The first disagreement.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LockstepError {
    /// Setting up the circuit failed.
    #[error(transparent)]
    Setup(#[from] HartError),
    /// The two sides disagree.
    #[error("mismatch after {instructions} instructions (interpreter pc {pc:#010x}): {what}")]
    Mismatch { instructions: u64, pc: u32, what: String },
}

/// The address the interpreter's error names, in the sense of [`crate::circuit::fault_address`]: a load's,
/// store's, fetch's or write buffer's address, a misaligned jump's target.
pub fn fault_address_of(e: &Rv32Error) -> Option<u32> {
    match e {
        Rv32Error::MemoryFault { addr, .. } => Some(*addr),
        Rv32Error::MisalignedJump { target, .. } => Some(*target),
        _ => None,
    }
}

/// The circuit's fault code for an interpreter error, if the circuit stops at the same instruction.
pub fn fault_of(e: &Rv32Error) -> Option<FaultCode> {
    Some(match e {
        Rv32Error::IllegalInstruction { .. } => FaultCode::IllegalInstruction,
        Rv32Error::MemoryFault { access: Access::Load, .. } => FaultCode::LoadOutOfRam,
        Rv32Error::MemoryFault { access: Access::Store, .. } => FaultCode::StoreOutOfRam,
        Rv32Error::MemoryFault { access: Access::HostRead, .. } => FaultCode::WriteBufferOutOfRam,
        Rv32Error::MisalignedJump { .. } => FaultCode::MisalignedJump,
        Rv32Error::UnsupportedSyscall { .. } => FaultCode::UnsupportedSyscall,
        _ => return None,
    })
}

/// Run `cpu` and a circuit hart made from it side by side for at most `max_instructions` instructions.
pub fn lockstep(mut cpu: Cpu, opts: &Rv32MachineOptions, max_instructions: u64) -> Result<LockstepReport, LockstepError> {
    let mut hart = CircuitHart::from_cpu(&cpu, opts)?;
    let mut rep = LockstepReport::new();
    let mismatch = |n: u64, pc: u32, what: String| LockstepError::Mismatch { instructions: n, pc, what };
    while rep.instructions < max_instructions {
        let pc = cpu.pc();
        let ev = cpu.step();
        let o = hart.step_instruction(MAX_STEPS_PER_INSTRUCTION);
        rep.steps += o.steps as u64;
        let n = rep.instructions;
        match ev {
            Ok(StepEvent::Exit { code }) => {
                if o.exit != Some(code as u8) || !o.out.is_empty() {
                    return Err(mismatch(n, pc, format!("interpreter exit {code}, circuit {o:?}")));
                }
                let h = hart.step();
                rep.steps += 1;
                if !h.halted {
                    return Err(mismatch(n, pc, "circuit did not halt after EXIT".into()));
                }
                if hart.regs() != *cpu.regs() || hart.pc() != pc {
                    return Err(mismatch(n, pc, "registers differ at exit".into()));
                }
                rep.instructions += 1;
                rep.end = LockstepEnd::Exit(code as u8);
                return Ok(rep);
            }
            Ok(StepEvent::Breakpoint { .. }) => {
                if o.fault != Some(FaultCode::Breakpoint) {
                    return Err(mismatch(n, pc, format!("interpreter EBREAK, circuit {o:?}")));
                }
                rep.end = LockstepEnd::Fault(FaultCode::Breakpoint);
                return Ok(rep);
            }
            Ok(ev) => {
                let want: &[u8] = match &ev {
                    StepEvent::Write { data, .. } => data,
                    _ => &[],
                };
                if o.fault == Some(FaultCode::JumpOutOfRam) {
                    // The circuit commits the jump (or last instruction) and stops with pc at it; the interpreter
                    // retires it and fails on the next fetch.
                    if !o.halted || hart.regs() != *cpu.regs() || hart.pc() != pc {
                        return Err(mismatch(n, pc, format!("JumpOutOfRam: state differs or no halt ({o:?})")));
                    }
                    return match cpu.step() {
                        Err(Rv32Error::MemoryFault { access: Access::Fetch, addr, .. }) if o.fault_addr == Some(addr) => {
                            rep.end = LockstepEnd::Fault(FaultCode::JumpOutOfRam);
                            Ok(rep)
                        }
                        other => Err(mismatch(n, pc, format!("circuit JumpOutOfRam, interpreter then {other:?}"))),
                    };
                }
                if !o.retired || o.out != want {
                    return Err(mismatch(n, pc, format!("interpreter {ev:?}, circuit {o:?}")));
                }
                rep.output.extend_from_slice(want);
                if hart.pc() != cpu.pc() {
                    return Err(mismatch(n, pc, format!("pc: interpreter {:#010x}, circuit {:#010x}", cpu.pc(), hart.pc())));
                }
                let (hr, cr) = (hart.regs(), *cpu.regs());
                if hr != cr {
                    let i = (0..32).find(|i| hr[*i] != cr[*i]).unwrap_or(0);
                    return Err(mismatch(n, pc, format!("x{i}: interpreter {:#010x}, circuit {:#010x}", cr[i], hr[i])));
                }
                rep.instructions += 1;
            }
            Err(e) => {
                let want = fault_of(&e);
                if want.is_none() || o.fault != want || o.retired || o.fault_addr != fault_address_of(&e) {
                    return Err(mismatch(n, pc, format!("interpreter error {e}, circuit {o:?}")));
                }
                let h = hart.step();
                rep.steps += 1;
                if !h.halted {
                    return Err(mismatch(n, pc, "circuit did not halt after FAULT".into()));
                }
                if hart.regs() != *cpu.regs() || hart.pc() != pc {
                    return Err(mismatch(n, pc, "state changed by a faulting instruction".into()));
                }
                rep.end = LockstepEnd::Fault(want.expect("checked"));
                return Ok(rep);
            }
        }
    }
    Ok(rep)
}

/// Lockstep of a machine TRACE (tokens generated by a woven network, or by the reference evaluator) against
/// the interpreter: the trace is decoded with the published protocol only (register fields, the `X` write
/// fields, the ports), the register file is rebuilt from the `X` writes, and after every step with `BUSY = 0`
/// the interpreter retires one instruction and pc and x0..x31 are compared. `cpu` must be in the state the
/// trace starts from (the program's registers as loaded).
pub fn trace_lockstep(proto: &isa_api::Protocol, generated: &[u32], mut cpu: Cpu, opts: &Rv32MachineOptions) -> Result<LockstepReport, LockstepError> {
    use crate::circuit::{input, mem, port, reg};
    use isa_api::trace::{Decoded, StepDecoder};
    let mut x: Vec<u32> = cpu.regs().to_vec();
    x.resize(64, 0);
    let mut rep = LockstepReport::new();
    let mismatch = |n: u64, pc: u32, what: String| LockstepError::Mismatch { instructions: n, pc, what };
    let mut dec = StepDecoder::new(proto);
    // The prompt preset PC to the entry point (`ProgramImage::pc_preset`): the trace's PC chunks omit what did not change from it.
    dec.preset(&[(reg::PC, u64::from(cpu.pc().wrapping_sub(opts.ram_base) >> 2))]);
    for &t in generated {
        let step = match dec.push(t) {
            Ok(Decoded::Step(s)) => s,
            // What the host delivered to read(2) goes to the interpreter's standard input as it comes.
            Ok(Decoded::Input { port: input::STDIN, value }) => {
                cpu.push_input(&[value as u8]);
                continue;
            }
            Ok(_) => continue,
            Err(e) => return Err(mismatch(rep.instructions, cpu.pc(), e.to_string())),
        };
        if step.halted {
            break;
        }
        rep.steps += 1;
        if let Some(w) = step.write(mem::X) {
            x[w.addr as usize & 63] = w.data as u32;
        }
        if let Some(b) = step.output(port::OUT) {
            rep.output.push(b as u8);
        }
        let (exit, fault) = (step.output(port::EXIT), step.output(port::FAULT));
        let (pcv, busy) = (step.reg(reg::PC), step.reg(reg::BUSY));
        let n = rep.instructions;
        let pc = cpu.pc();
        if let Some(code) = exit {
            match cpu.step() {
                Ok(StepEvent::Exit { code: c }) if c as u8 == code as u8 => {
                    rep.instructions += 1;
                    rep.end = LockstepEnd::Exit(code as u8);
                }
                other => return Err(mismatch(n, pc, format!("trace EXIT {code}, interpreter {other:?}"))),
            }
        } else if let Some(f) = fault {
            // The interpreter must stop at the same instruction for the same reason and address (a
            // jump out of RAM: it retires the jump, then fails to fetch at the target).
            let code = FaultCode::from_value(f).ok_or_else(|| mismatch(n, pc, format!("FAULT value {f:#x} has no code")))?;
            let addr = crate::circuit::fault_address(f);
            let ev = cpu.step();
            let ev = match (code, ev) {
                (FaultCode::JumpOutOfRam, Ok(_)) => cpu.step(),
                (_, ev) => ev,
            };
            let agrees = match &ev {
                Ok(StepEvent::Breakpoint { .. }) => code == FaultCode::Breakpoint,
                Err(e @ Rv32Error::MemoryFault { access: Access::Fetch, .. }) => code == FaultCode::JumpOutOfRam && addr == fault_address_of(e),
                Err(e) => fault_of(e) == Some(code) && addr == fault_address_of(e),
                Ok(_) => false,
            };
            if !agrees {
                return Err(mismatch(n, pc, format!("trace FAULT {code:?} at address {addr:x?}, interpreter {ev:?}")));
            }
            rep.end = LockstepEnd::Fault(code);
        } else if busy == 0 {
            let ev = cpu.step().map_err(|e| mismatch(n, pc, format!("trace retired, interpreter error {e}")))?;
            if let StepEvent::Write { data, .. } = &ev {
                let k = data.len();
                if rep.output.len() < k || rep.output[rep.output.len() - k..] != data[..] {
                    return Err(mismatch(n, pc, "console bytes differ".into()));
                }
            }
            let tpc = opts.ram_base.wrapping_add((pcv as u32) << 2);
            if tpc != cpu.pc() {
                return Err(mismatch(n, pc, format!("pc: interpreter {:#010x}, trace {tpc:#010x}", cpu.pc())));
            }
            if x[..32] != cpu.regs()[..] {
                let i = (0..32).find(|i| x[*i] != cpu.regs()[*i]).unwrap_or(0);
                return Err(mismatch(n, pc, format!("x{i}: interpreter {:#010x}, trace {:#010x}", cpu.regs()[i], x[i])));
            }
            rep.instructions += 1;
        }
    }
    Ok(rep)
}
