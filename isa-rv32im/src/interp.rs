//! The reference interpreter: one hart of RV32IM + Zba, in user mode, over a flat RAM, with the Linux syscall
//! ABI that qemu-riscv32 user mode implements for the two host calls the machine has.
//!
//! Sections: *RISC-V Unprivileged ISA* 20191213 ("Unpriv"): §2.1 programmers' model (x0 hard-wired to zero,
//! x1..x31, pc), §2.4-§2.8 RV32I, chapter 7 M; Bitmanip 1.0.0 §2.1 Zba. Host calls: the Linux generic syscall
//! table used by RISC-V (a7 = number, a0..a5 = arguments, result in a0): 63 `read` (fd 0), 64 `write`
//! (fd 1, 2), 93 `exit`, 94 `exit_group`.

use crate::alu::{alu, alu_imm, branch_taken};
use crate::decode::{Instr, LoadOp, decode};
use crate::error::{Access, Rv32Error};
use crate::mem::{DEFAULT_RAM_BASE, DEFAULT_RAM_SIZE, Ram};

/// Linux syscall numbers (asm-generic/unistd.h, used by RISC-V).
pub mod syscall {
    /// `read(fd, buf, count)`: fd 0 only; fills the buffer with up to `count` input bytes and returns how many
    /// (fewer only at end of input, as for a file).
    pub const READ: u32 = 63;
    /// `write(fd, buf, count)`.
    pub const WRITE: u32 = 64;
    /// `exit(code)`.
    pub const EXIT: u32 = 93;
    /// `exit_group(code)`: treated as `exit` (one hart).
    pub const EXIT_GROUP: u32 = 94;
    /// `-EBADF`, returned by `write` for a descriptor other than 1 (stdout) or 2 (stderr), by `read` for one
    /// other than 0 (stdin).
    pub const EBADF: i32 = 9;
}

/// Register ABI names (Unpriv chapter 25 "RISC-V Assembly Programmer's Handbook", Table 25.1).
pub const ABI_NAMES: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];

/// Machine configuration: where RAM sits and how large it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// First RAM address.
    pub ram_base: u32,
    /// RAM size in bytes.
    pub ram_size: u32,
}

impl Default for Config {
    /// 256 KiB at 0x10000.
    fn default() -> Self {
        Config {
            ram_base: DEFAULT_RAM_BASE,
            ram_size: DEFAULT_RAM_SIZE,
        }
    }
}

/// What one instruction did, besides updating registers and memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepEvent {
    /// An ordinary instruction retired.
    Retired,
    /// ECALL `write(fd, buf, len)` to the console (fd 1 or 2). `a0` was set to `len`.
    Write { fd: u32, data: Vec<u8> },
    /// ECALL `exit(code)`: the machine is halted; further `step` calls return [`Rv32Error::Halted`].
    Exit { code: i32 },
    /// EBREAK: a host call with no effect on the machine; pc moved past it.
    Breakpoint { pc: u32 },
}

/// How a bounded run ended normally.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The program called exit; `code` is a0 as passed (the process status is `code & 0xff`).
    Exit(i32),
    /// The program executed EBREAK at `pc`; the run can be resumed.
    Breakpoint(u32),
}

/// Result of [`Cpu::run`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunResult {
    /// Why the run ended.
    pub stop: Stop,
    /// Instructions retired during this call (the ECALL/EBREAK that stopped it included).
    pub steps: u64,
    /// Bytes written to fd 1 and 2, in order.
    pub output: Vec<u8>,
}

/// One RV32IM+Zba hart with its RAM.
#[derive(Clone, Debug)]
pub struct Cpu {
    pc: u32,
    x: [u32; 32],
    ram: Ram,
    exited: Option<i32>,
    instret: u64,
    /// Standard input not read yet ([`Cpu::push_input`]); read(2) past its end returns what there is.
    input: std::collections::VecDeque<u8>,
}

impl Cpu {
    /// A hart with zeroed registers, pc = RAM base, zero-filled RAM. `None` if RAM would extend past 2^32.
    pub fn new(config: Config) -> Option<Cpu> {
        let ram = Ram::new(config.ram_base, config.ram_size)?;
        Some(Cpu {
            pc: config.ram_base,
            x: [0; 32],
            ram,
            exited: None,
            instret: 0,
            input: Default::default(),
        })
    }

    /// Program counter.
    pub fn pc(&self) -> u32 {
        self.pc
    }

    /// Sets the program counter.
    pub fn set_pc(&mut self, pc: u32) {
        self.pc = pc;
    }

    /// Register `x[i]` (i in 0..32; x0 always reads 0). Out-of-range indices read 0.
    pub fn x(&self, i: usize) -> u32 {
        self.x.get(i).copied().unwrap_or(0)
    }

    /// Writes register `x[i]`; writes to x0 and out-of-range indices are ignored (Unpriv §2.1).
    pub fn set_x(&mut self, i: usize, v: u32) {
        if i != 0 && i < 32 {
            self.x[i] = v;
        }
    }

    /// All 32 registers, x0 first.
    pub fn regs(&self) -> &[u32; 32] {
        &self.x
    }

    /// The RAM.
    pub fn ram(&self) -> &Ram {
        &self.ram
    }

    /// The RAM, writable (program loading, tests).
    pub fn ram_mut(&mut self) -> &mut Ram {
        &mut self.ram
    }

    /// Appends bytes to the program's standard input (what read(2) on fd 0 returns, in order).
    pub fn push_input(&mut self, bytes: &[u8]) {
        self.input.extend(bytes);
    }

    /// Standard input not read yet.
    pub fn pending_input(&self) -> &std::collections::VecDeque<u8> {
        &self.input
    }

    /// Instructions retired so far.
    pub fn instret(&self) -> u64 {
        self.instret
    }

    /// Exit code, once the program has exited.
    pub fn exit_code(&self) -> Option<i32> {
        self.exited
    }

    fn fault(&self, word: u32, addr: u32, size: u32, access: Access) -> Rv32Error {
        Rv32Error::MemoryFault {
            pc: self.pc,
            word,
            addr,
            size,
            access,
            mem_base: self.ram.base(),
            mem_end: self.ram.end(),
        }
    }

    /// Fetches the instruction word at pc (Unpriv §1.5: 32-bit little-endian parcels).
    pub fn fetch(&self) -> Result<u32, Rv32Error> {
        self.ram
            .read(self.pc, 4)
            .ok_or_else(|| self.fault(0, self.pc, 4, Access::Fetch))
    }

    /// Executes one instruction.
    ///
    /// Control transfers (Unpriv §2.5) to a target that is not 4-byte aligned stop with
    /// [`Rv32Error::MisalignedJump`] before any register is written, as the exception would. Loads and stores
    /// (Unpriv §2.6) of any alignment succeed byte-wise inside RAM; any byte outside RAM stops the run with a
    /// [`Rv32Error::MemoryFault`] and leaves registers, memory and pc unchanged.
    pub fn step(&mut self) -> Result<StepEvent, Rv32Error> {
        if let Some(code) = self.exited {
            return Err(Rv32Error::Halted { code });
        }
        let pc = self.pc;
        let word = self.fetch()?;
        let instr = decode(word).ok_or(Rv32Error::IllegalInstruction { pc, word })?;
        let next = pc.wrapping_add(4);
        let mut new_pc = next;
        let mut event = StepEvent::Retired;
        let jump_check = |target: u32| {
            if target & 3 != 0 {
                Err(Rv32Error::MisalignedJump { pc, word, target })
            } else {
                Ok(target)
            }
        };
        match instr {
            Instr::Lui { rd, imm } => self.set_x(rd as usize, imm as u32),
            Instr::Auipc { rd, imm } => self.set_x(rd as usize, pc.wrapping_add(imm as u32)),
            Instr::Jal { rd, imm } => {
                new_pc = jump_check(pc.wrapping_add(imm as u32))?;
                self.set_x(rd as usize, next);
            }
            Instr::Jalr { rd, rs1, imm } => {
                // Target computed from rs1 before rd is written (rd may equal rs1), low bit cleared.
                let target = self.x(rs1 as usize).wrapping_add(imm as u32) & !1;
                new_pc = jump_check(target)?;
                self.set_x(rd as usize, next);
            }
            Instr::Branch { op, rs1, rs2, imm } => {
                if branch_taken(op, self.x(rs1 as usize), self.x(rs2 as usize)) {
                    new_pc = jump_check(pc.wrapping_add(imm as u32))?;
                }
            }
            Instr::Load { op, rd, rs1, imm } => {
                let addr = self.x(rs1 as usize).wrapping_add(imm as u32);
                let size = op.size();
                let raw = self
                    .ram
                    .read(addr, size)
                    .ok_or_else(|| self.fault(word, addr, size, Access::Load))?;
                let v = match op {
                    LoadOp::Lb => raw as u8 as i8 as i32 as u32,
                    LoadOp::Lh => raw as u16 as i16 as i32 as u32,
                    LoadOp::Lw | LoadOp::Lbu | LoadOp::Lhu => raw,
                };
                self.set_x(rd as usize, v);
            }
            Instr::Store { op, rs1, rs2, imm } => {
                let addr = self.x(rs1 as usize).wrapping_add(imm as u32);
                let size = op.size();
                let v = self.x(rs2 as usize);
                if self.ram.write(addr, size, v).is_none() {
                    return Err(self.fault(word, addr, size, Access::Store));
                }
            }
            Instr::OpImm { op, rd, rs1, imm } => {
                let v = alu_imm(op, self.x(rs1 as usize), imm);
                self.set_x(rd as usize, v);
            }
            Instr::Op { op, rd, rs1, rs2 } => {
                let v = alu(op, self.x(rs1 as usize), self.x(rs2 as usize));
                self.set_x(rd as usize, v);
            }
            Instr::Fence => {}
            Instr::Ecall => event = self.ecall(word)?,
            Instr::Ebreak => event = StepEvent::Breakpoint { pc },
        }
        self.pc = new_pc;
        self.instret += 1;
        Ok(event)
    }

    /// Linux syscall ABI (a7 = number). Host calls do not change pc themselves; execution resumes after the ECALL.
    fn ecall(&mut self, word: u32) -> Result<StepEvent, Rv32Error> {
        let number = self.x[17];
        let (a0, a1, a2) = (self.x[10], self.x[11], self.x[12]);
        match number {
            syscall::READ => {
                if a0 != 0 {
                    self.set_x(10, (-syscall::EBADF) as u32);
                    return Ok(StepEvent::Retired);
                }
                // The whole buffer must lie in RAM (as the machine checks on its first step).
                self.ram.slice(a1, a2).ok_or_else(|| self.fault(word, a1, a2, Access::HostRead))?;
                let n = (a2 as usize).min(self.input.len());
                let bytes: Vec<u8> = self.input.drain(..n).collect();
                self.ram.load(a1, &bytes).ok_or_else(|| self.fault(word, a1, a2, Access::HostRead))?;
                self.set_x(10, n as u32);
                Ok(StepEvent::Retired)
            }
            syscall::WRITE => {
                if a0 != 1 && a0 != 2 {
                    self.set_x(10, (-syscall::EBADF) as u32);
                    return Ok(StepEvent::Retired);
                }
                let data = self
                    .ram
                    .slice(a1, a2)
                    .ok_or_else(|| self.fault(word, a1, a2, Access::HostRead))?
                    .to_vec();
                self.set_x(10, a2);
                Ok(StepEvent::Write { fd: a0, data })
            }
            syscall::EXIT | syscall::EXIT_GROUP => {
                self.exited = Some(a0 as i32);
                Ok(StepEvent::Exit { code: a0 as i32 })
            }
            _ => Err(Rv32Error::UnsupportedSyscall {
                pc: self.pc,
                number,
            }),
        }
    }

    /// Runs until exit or EBREAK, at most `max_steps` instructions, passing console writes to `on_write(fd, data)`.
    pub fn run_with(
        &mut self,
        max_steps: u64,
        mut on_write: impl FnMut(u32, &[u8]),
    ) -> Result<(Stop, u64), Rv32Error> {
        let mut steps = 0u64;
        while steps < max_steps {
            let ev = self.step()?;
            steps += 1;
            match ev {
                StepEvent::Retired => {}
                StepEvent::Write { fd, data } => on_write(fd, &data),
                StepEvent::Exit { code } => return Ok((Stop::Exit(code), steps)),
                StepEvent::Breakpoint { pc } => return Ok((Stop::Breakpoint(pc), steps)),
            }
        }
        Err(Rv32Error::StepLimit {
            limit: max_steps,
            pc: self.pc,
        })
    }

    /// Runs until exit or EBREAK, at most `max_steps` instructions, collecting console output.
    pub fn run(&mut self, max_steps: u64) -> Result<RunResult, Rv32Error> {
        let mut output = Vec::new();
        let (stop, steps) = self.run_with(max_steps, |_, d| output.extend_from_slice(d))?;
        Ok(RunResult {
            stop,
            steps,
            output,
        })
    }
}
