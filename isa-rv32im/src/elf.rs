//! ELF32 loader: checks that a file is a little-endian 32-bit RISC-V executable and copies its `PT_LOAD` segments
//! into RAM (System V ABI, "Program Loading": `p_filesz` bytes from the file at `p_vaddr`, the rest up to
//! `p_memsz` zero-filled). Parsing uses the `object` crate's bounds-checked ELF reader; every malformed input is an
//! [`ElfError`], never a panic.

use object::LittleEndian;
use object::elf::{self, FileHeader32};
use object::read::elf::{FileHeader, ProgramHeader};
use thiserror::Error;

use crate::interp::{Config, Cpu};
use crate::mem::Ram;

/// Why an ELF file could not be loaded.
/// What a non-32-bit ELF is, from its class and (little-endian) `e_machine`: "an RV64 binary", "a 64-bit
/// x86-64 binary", ... (machine numbers from the System V ABI's list).
fn describe_class(class: u8, machine: u16) -> String {
    let name = match machine {
        3 => "x86",
        40 => "ARM",
        62 => "x86-64",
        183 => "AArch64",
        243 => "RISC-V",
        _ => "",
    };
    match (class, machine) {
        (2, 243) => "a 64-bit RISC-V (RV64) binary".to_string(),
        (2, _) if !name.is_empty() => format!("a 64-bit {name} binary"),
        (2, m) => format!("a 64-bit binary for machine {m}"),
        (c, _) => format!("class {c} is neither 32- nor 64-bit"),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ElfError {
    /// Shorter than an ELF identification or no `\x7fELF` magic.
    #[error("not an ELF file (no \\x7fELF magic)")]
    NotElf,
    /// `EI_CLASS` is not ELFCLASS32.
    #[error("wrong ELF class {class} ({}; expected 1 = ELFCLASS32, a 32-bit RISC-V executable)", describe_class(*class, *machine))]
    WrongClass { class: u8, machine: u16 },
    /// `EI_DATA` is not ELFDATA2LSB.
    #[error("wrong ELF data encoding {0} (expected 1 = little-endian)")]
    WrongEndian(u8),
    /// `e_machine` is not EM_RISCV (243).
    #[error("wrong ELF machine {0} (expected 243 = EM_RISCV)")]
    WrongMachine(u16),
    /// `e_type` is not ET_EXEC.
    #[error("wrong ELF type {0} (expected 2 = ET_EXEC, a statically linked executable)")]
    WrongType(u16),
    /// A header or segment lies outside the file or is otherwise inconsistent.
    #[error("malformed ELF: {0}")]
    Malformed(String),
    /// A `PT_LOAD` segment does not fit in RAM.
    #[error(
        "segment at {vaddr:#010x} of {memsz:#x} bytes lies outside RAM [{ram_base:#010x}, {ram_end:#x}); \
         link the program for this RAM or configure RAM to cover it"
    )]
    SegmentOutsideRam {
        vaddr: u32,
        memsz: u32,
        ram_base: u32,
        ram_end: u64,
    },
    /// The entry point is not inside a loaded segment of RAM or not 4-byte aligned.
    #[error("entry point {0:#010x} is outside RAM or misaligned")]
    BadEntry(u32),
    /// No `PT_LOAD` segment.
    #[error("no loadable (PT_LOAD) segment")]
    NoLoadSegments,
    /// The RAM configuration itself is impossible (extends past 2^32).
    #[error("RAM of {size:#x} bytes at {base:#010x} extends past 2^32")]
    BadRamConfig { base: u32, size: u32 },
}

/// One loadable segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Virtual address (= physical: no MMU).
    pub vaddr: u32,
    /// Size in memory (>= `data.len()`; the rest is zero).
    pub memsz: u32,
    /// Initialised bytes from the file.
    pub data: Vec<u8>,
}

/// A parsed executable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfImage {
    /// Entry point (`e_entry`).
    pub entry: u32,
    /// The `PT_LOAD` segments with non-zero `p_memsz`, in file order.
    pub segments: Vec<Segment>,
}

fn malformed(what: &str) -> impl Fn(object::read::Error) -> ElfError + '_ {
    move |e| ElfError::Malformed(format!("{what}: {e}"))
}

/// Parses an ELF32 RISC-V executable.
pub fn parse_elf(bytes: &[u8]) -> Result<ElfImage, ElfError> {
    // e_ident checks first, so that wrong class and endianness get their own messages.
    if bytes.len() < 16 || bytes[..4] != elf::ELFMAG[..] {
        return Err(ElfError::NotElf);
    }
    if bytes[4] != elf::ELFCLASS32.0 {
        // e_machine sits at the same offset in both classes.
        let machine = bytes.get(18..20).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
        return Err(ElfError::WrongClass { class: bytes[4], machine });
    }
    if bytes[5] != elf::ELFDATA2LSB.0 {
        return Err(ElfError::WrongEndian(bytes[5]));
    }
    let header = FileHeader32::<LittleEndian>::parse(bytes).map_err(malformed("file header"))?;
    let endian = LittleEndian;
    let machine = header.e_machine(endian).0;
    if machine != elf::EM_RISCV.0 {
        return Err(ElfError::WrongMachine(machine));
    }
    let ty = header.e_type(endian).0;
    if ty != elf::ET_EXEC.0 {
        return Err(ElfError::WrongType(ty));
    }
    let phdrs = header
        .program_headers(endian, bytes)
        .map_err(malformed("program headers"))?;
    let mut segments = Vec::new();
    for ph in phdrs {
        if ph.p_type(endian) != elf::PT_LOAD {
            continue;
        }
        let vaddr = ph.p_vaddr(endian);
        let memsz = ph.p_memsz(endian);
        let filesz = ph.p_filesz(endian);
        if filesz > memsz {
            return Err(ElfError::Malformed(format!(
                "segment at {vaddr:#010x}: p_filesz {filesz:#x} > p_memsz {memsz:#x}"
            )));
        }
        if memsz == 0 {
            continue;
        }
        if vaddr as u64 + memsz as u64 > 1 << 32 {
            return Err(ElfError::Malformed(format!(
                "segment at {vaddr:#010x} of {memsz:#x} bytes wraps past 2^32"
            )));
        }
        let data = ph.data(endian, bytes).map_err(|_| {
            ElfError::Malformed(format!(
                "segment at {vaddr:#010x}: file range offset {:#x} size {filesz:#x} is outside the {}-byte file",
                ph.p_offset(endian),
                bytes.len()
            ))
        })?;
        segments.push(Segment {
            vaddr,
            memsz,
            data: data.to_vec(),
        });
    }
    if segments.is_empty() {
        return Err(ElfError::NoLoadSegments);
    }
    Ok(ElfImage {
        entry: header.e_entry(endian),
        segments,
    })
}

impl ElfImage {
    /// Copies the segments into `cpu`'s RAM (zero-filling `p_memsz - p_filesz`) and sets pc to the entry point.
    /// Checks everything before writing anything.
    pub fn load_into(&self, cpu: &mut Cpu) -> Result<(), ElfError> {
        self.load_into_ram(cpu.ram_mut())?;
        cpu.set_pc(self.entry);
        Ok(())
    }

    /// Copies the segments into `ram` (zero-filling `p_memsz - p_filesz`) after checking that every segment
    /// lies inside it and that the entry point is a 4-byte aligned address inside a segment. Nothing is
    /// written when a check fails.
    pub fn load_into_ram(&self, ram: &mut Ram) -> Result<(), ElfError> {
        let (ram_base, ram_end) = (ram.base(), ram.end());
        let outside = |s: &Segment| ElfError::SegmentOutsideRam { vaddr: s.vaddr, memsz: s.memsz, ram_base, ram_end };
        if let Some(s) = self.segments.iter().find(|s| ram.offset(s.vaddr, s.memsz).is_none()) {
            return Err(outside(s));
        }
        let in_segment = self.segments.iter().any(|s| {
            self.entry >= s.vaddr && (self.entry as u64) + 4 <= s.vaddr as u64 + s.memsz as u64
        });
        if !in_segment || self.entry & 3 != 0 {
            return Err(ElfError::BadEntry(self.entry));
        }
        for s in &self.segments {
            let zeros = vec![0u8; (s.memsz as usize) - s.data.len()];
            // Both ranges were checked above; a failure here would be a bug, reported as an error anyway.
            ram.load(s.vaddr, &s.data)
                .and_then(|_| ram.load(s.vaddr + s.data.len() as u32, &zeros))
                .ok_or_else(|| outside(s))?;
        }
        Ok(())
    }
}

/// The stack pointer a program starts with: 16 bytes below the top of RAM (rounded down to 16), where four
/// zero words stand for the Linux start-up block a user-mode loader leaves at sp (argc = 0, an empty argv,
/// an empty envp, an auxiliary vector of just `AT_NULL`), so start-up code that reads argc finds 0 and a
/// program that never sets sp has the rest of RAM below it as its stack. qemu-riscv32 picks its own sp
/// (the same block, high in its address space): programs meant for register-level lockstep with qemu set
/// sp in their `_start`.
pub fn initial_sp(ram: &Ram) -> u32 {
    (ram.end().min(0xffff_fff0) as u32 & !15).wrapping_sub(16)
}

/// Creates a hart with `config`'s RAM, loads the executable and sets pc to its entry point. All other registers
/// are zero, as qemu-riscv32 user mode leaves them, except sp ([`initial_sp`]).
pub fn load_elf(bytes: &[u8], config: Config) -> Result<Cpu, ElfError> {
    let image = parse_elf(bytes)?;
    let mut cpu = Cpu::new(config).ok_or(ElfError::BadRamConfig {
        base: config.ram_base,
        size: config.ram_size,
    })?;
    image.load_into(&mut cpu)?;
    let sp = initial_sp(cpu.ram());
    cpu.set_x(2, sp);
    Ok(cpu)
}
