//! Program loading for the woven machine: an ELF32 executable becomes the machine's initial memory contents
//! (RAM words or byte lanes, and the register file), and those become the *load tokens* of the prompt
//! (`LOAD_<mem>_ADDR`/`LOAD_<mem>_DATA`, then `STEP`), as the trace protocol of `isa-api` defines them.
//!
//! This is the host's program loader: it copies bytes and never executes an instruction.

use crate::circuit::{MemoryLayout, Rv32MachineOptions, mem, ram_image};
use crate::elf::{ElfError, parse_elf};
use crate::mem::Ram;
use thiserror::Error;

/// Why a program cannot be loaded into the woven machine.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProgramError {
    /// The file is not a loadable RV32 executable.
    #[error(transparent)]
    Elf(#[from] ElfError),
    /// The RAM geometry of the options is impossible.
    #[error("RAM of {size} bytes at {base:#x} is not a valid machine RAM")]
    BadRam { base: u32, size: u32 },
}

/// A program as the machine's initial state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramImage {
    /// RAM contents from the RAM base, `ram_size` bytes.
    pub ram: Vec<u8>,
    /// x0..x31: all zero except sp (x2), as [`crate::load_elf`] sets them ([`crate::elf::initial_sp`]).
    pub x: [u32; 32],
    /// Entry point (`e_entry`): the machine's first pc, preset in the prompt when it is not the RAM base.
    pub entry: u32,
    ram_base: u32,
    layout: MemoryLayout,
}

impl ProgramImage {
    /// Load an ELF32 RISC-V executable for the machine of `opts`. Checks everything; never panics.
    pub fn from_elf(bytes: &[u8], opts: &Rv32MachineOptions) -> Result<ProgramImage, ProgramError> {
        let image = parse_elf(bytes)?;
        let mut ram = Ram::new(opts.ram_base, opts.ram_size).ok_or(ProgramError::BadRam { base: opts.ram_base, size: opts.ram_size })?;
        image.load_into_ram(&mut ram)?;
        let mut x = [0u32; 32];
        x[2] = crate::elf::initial_sp(&ram);
        Ok(ProgramImage { ram: ram.bytes().to_vec(), x, entry: image.entry, ram_base: opts.ram_base, layout: opts.layout })
    }

    /// The loads of this program: every RAM memory's words in order, then the register file (sp); and the
    /// `PC` register preset to the entry point's word index when the entry point is not the RAM base.
    pub fn load_image(&self) -> isa_api::LoadImage {
        let mut loads: Vec<isa_api::MemLoad> =
            ram_image(&self.ram, self.layout).into_iter().enumerate().map(|(m, words)| isa_api::MemLoad { mem: mem::RAM0 + m as u32, base: 0, words }).collect();
        loads.push(isa_api::MemLoad { mem: mem::X, base: 0, words: self.x.iter().map(|v| *v as u64).collect() });
        isa_api::LoadImage { loads, regs: self.pc_preset() }
    }

    /// The `PC` preset: `(reg::PC, word index of the entry point)`, none when the entry is the RAM base.
    pub fn pc_preset(&self) -> Vec<(u32, u64)> {
        let word = u64::from(self.entry.wrapping_sub(self.ram_base) >> 2);
        if word == 0 { Vec::new() } else { vec![(crate::circuit::reg::PC, word)] }
    }

    /// The prompt that loads this program and starts the machine: load tokens for every nonzero RAM word
    /// (each RAM memory in order) and register, then `STEP`.
    pub fn prompt(&self, proto: &isa_api::Protocol) -> Vec<u32> {
        self.load_image().prompt(proto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuit::rv32im_machine;
    use crate::examples::example;

    #[test]
    fn the_image_equals_the_interpreters_loaded_state() {
        let opts = Rv32MachineOptions::default();
        for name in ["hello", "demo", "sha256"] {
            let ex = example(name).unwrap();
            let img = ProgramImage::from_elf(ex.elf, &opts).unwrap();
            let cpu = crate::load_elf(ex.elf, opts.interp_config()).unwrap();
            assert_eq!(img.ram, cpu.ram().bytes(), "{name}");
            assert_eq!(img.x.to_vec(), cpu.regs().to_vec(), "{name}");
            assert_eq!(img.entry, cpu.pc());
        }
    }

    #[test]
    fn the_prompt_loads_nonzero_words_and_ends_with_step() {
        let opts = Rv32MachineOptions::default();
        let desc = rv32im_machine(&opts).unwrap();
        let proto = isa_api::Protocol::of(&desc);
        let img = ProgramImage::from_elf(example("hello").unwrap().elf, &opts).unwrap();
        let p = img.prompt(&proto);
        assert_eq!(*p.last().unwrap(), proto.step_token);
        let nonzero_words = img.ram.chunks(4).filter(|w| w.iter().any(|b| *b != 0)).count();
        // Per word: the address and data chunks of the RAM load fields; sp: the same for X.
        let per_ram = proto.fields_where(|r| matches!(r, isa_api::FieldRole::LoadAddr { mem: 1, .. } | isa_api::FieldRole::LoadData { mem: 1, .. })).len();
        let per_x = proto.fields_where(|r| matches!(r, isa_api::FieldRole::LoadAddr { mem: 0, .. } | isa_api::FieldRole::LoadData { mem: 0, .. })).len();
        assert_eq!(p.len(), nonzero_words * per_ram + per_x + 1);
    }

    #[test]
    fn bad_programs_are_named() {
        let opts = Rv32MachineOptions::default();
        assert!(matches!(ProgramImage::from_elf(b"nope", &opts), Err(ProgramError::Elf(_))));
        let small = Rv32MachineOptions { ram_size: 1024, ..opts };
        let e = ProgramImage::from_elf(example("sha256").unwrap().elf, &small).unwrap_err();
        assert!(matches!(e, ProgramError::Elf(ElfError::SegmentOutsideRam { .. })), "{e}");
        assert!(e.to_string().contains("lies outside RAM"), "{e}");
        let moved = Rv32MachineOptions { ram_base: 0x20000, ..opts };
        let e = ProgramImage::from_elf(example("hello").unwrap().elf, &moved).unwrap_err();
        assert!(matches!(e, ProgramError::Elf(ElfError::SegmentOutsideRam { vaddr: 0x10000, ram_base: 0x20000, .. })), "{e}");
    }
}
