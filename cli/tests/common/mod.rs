//! Helpers shared by the `loom` binary's integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The built `loom` binary.
pub fn loom() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loom"))
}

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A fresh, empty scratch directory for test `name` (per process).
pub fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("loom-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// A minimal ELF32 RISC-V executable: `words` at 0x10000 (the entry), one PT_LOAD segment.
pub fn tiny_elf(words: &[u32]) -> Vec<u8> {
    let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let (ehsize, phsize) = (52u32, 32u32);
    let mut e = vec![0x7f, b'E', b'L', b'F', 1, 1, 1, 0];
    e.resize(16, 0);
    let h16 = |e: &mut Vec<u8>, v: u16| e.extend(v.to_le_bytes());
    let h32 = |e: &mut Vec<u8>, v: u32| e.extend(v.to_le_bytes());
    h16(&mut e, 2); // ET_EXEC
    h16(&mut e, 243); // EM_RISCV
    h32(&mut e, 1);
    h32(&mut e, 0x10000); // entry
    h32(&mut e, ehsize); // phoff
    h32(&mut e, 0); // shoff
    h32(&mut e, 0); // flags
    h16(&mut e, ehsize as u16);
    h16(&mut e, phsize as u16);
    h16(&mut e, 1); // phnum
    h16(&mut e, 40);
    h16(&mut e, 0);
    h16(&mut e, 0);
    let off = ehsize + phsize;
    for v in [1u32, off, 0x10000, 0x10000, code.len() as u32, code.len() as u32, 5, 4] {
        h32(&mut e, v); // PT_LOAD, offset, vaddr, paddr, filesz, memsz, R+X, align
    }
    e.extend(code);
    e
}
