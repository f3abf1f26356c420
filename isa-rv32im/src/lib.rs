//! RV32IM + Zba as a machine plugin: the groundwork that does not depend on the weaver.
//!
//! - [`decode`]: instruction decoding (Unpriv §2.2-§2.3, chapter 24 listings; Zba in Bitmanip 1.0.0 §2.1),
//! - [`alu`]: the pure semantics of the computational instructions (the circuit's oracle),
//! - [`mem`]: flat little-endian byte RAM,
//! - [`interp`]: the reference interpreter with the Linux ecall ABI of qemu-riscv32 (write, exit),
//! - [`elf`]: the ELF32 loader,
//! - [`lockstep`]: the lockstep checks with one report type: the interpreter against qemu-riscv32 logs
//!   (`-singlestep -d cpu,nochain`), the circuit and woven traces against the interpreter,
//! - [`face`]: the machine's public face: register, memory and port indices, options (RAM geometry, layout),
//!   fault codes, the RAM image,
//! - [`circuit`]: the machine as an `isa-api` circuit (what the weaver compiles), one file per section under
//!   `circuit/`, and a host-side hart over the reference evaluator,
//! - [`examples`]: the committed example programs of `examples/rv32/` with their expected output,
//! - [`front`]: the machine's front for the binary (config keys, ELF loader, demo, console/exit/fault devices).
//!
//! "Unpriv" = *The RISC-V Instruction Set Manual, Volume I: Unprivileged ISA*, document version 20191213.

pub mod alu;
pub mod circuit;
pub mod circuit_plugin;
pub mod decode;
pub mod elf;
pub mod error;
pub mod examples;
pub mod face;
pub mod front;
pub mod interp;
pub mod lockstep;
pub mod mem;
pub mod program;

pub use circuit::{CircuitHart, FaultCode, Rv32MachineOptions, rv32im_machine};
pub use elf::{ElfError, ElfImage, load_elf, parse_elf};
pub use error::{Access, Rv32Error};
pub use interp::{Config, Cpu, RunResult, StepEvent, Stop};
pub use mem::Ram;
