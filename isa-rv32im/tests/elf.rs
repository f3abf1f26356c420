//! ELF loader: good files load, bad ones give clear errors, garbage never panics.

use isa_rv32im::examples::example;
use isa_rv32im::{Config, ElfError, load_elf, parse_elf};

fn hello() -> &'static [u8] {
    example("hello").unwrap().elf
}

#[test]
fn loads_hello() {
    let img = parse_elf(hello()).unwrap();
    assert_eq!(img.entry, 0x1_0000);
    assert_eq!(img.segments.len(), 1);
    assert_eq!(img.segments[0].vaddr, 0x1_0000);
    assert!(
        img.segments[0].memsz as usize >= img.segments[0].data.len() + 32 * 1024,
        "stack in p_memsz"
    );
    let cpu = load_elf(hello(), Config::default()).unwrap();
    assert_eq!(cpu.pc(), 0x1_0000);
    // sp: 16 bytes below the top of RAM, at an all-zero argc/argv/envp/auxv block.
    assert_eq!(cpu.x(2), 0x5_0000 - 16);
    assert_eq!(cpu.ram().bytes()[cpu.ram().bytes().len() - 16..], [0u8; 16]);
    // First instruction: auipc sp, ... (crt0)
    assert_eq!(cpu.fetch().unwrap() & 0xfff, 0x117);
}

/// Offset of hello.elf's PT_LOAD program header (the second one; the first is PT_RISCV_ATTRIBUTES).
const PH: usize = 52 + 32;

fn patched(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut v = hello().to_vec();
    f(&mut v);
    v
}

#[test]
fn clear_errors() {
    assert_eq!(parse_elf(b"").unwrap_err(), ElfError::NotElf);
    assert_eq!(
        parse_elf(b"#!/bin/sh\necho hi\n").unwrap_err(),
        ElfError::NotElf
    );
    assert_eq!(
        parse_elf(&patched(|v| v[4] = 2)).unwrap_err(),
        ElfError::WrongClass { class: 2, machine: 243 }
    );
    assert!(parse_elf(&patched(|v| v[4] = 2)).unwrap_err().to_string().contains("a 64-bit RISC-V (RV64) binary"));
    // A host binary (x86-64, as /bin/ls) is named as one, not guessed to be RV64.
    let x86 = parse_elf(&patched(|v| {
        v[4] = 2;
        v[18] = 62;
    }))
    .unwrap_err();
    assert_eq!(x86.to_string(), "wrong ELF class 2 (a 64-bit x86-64 binary; expected 1 = ELFCLASS32, a 32-bit RISC-V executable)");
    assert_eq!(
        parse_elf(&patched(|v| v[5] = 2)).unwrap_err(),
        ElfError::WrongEndian(2)
    );
    assert_eq!(
        parse_elf(&patched(|v| v[18] = 62)).unwrap_err(),
        ElfError::WrongMachine(62)
    ); // x86-64
    assert_eq!(
        parse_elf(&patched(|v| v[16] = 3)).unwrap_err(),
        ElfError::WrongType(3)
    ); // ET_DYN
    // e_phoff beyond the file
    let e = parse_elf(&patched(|v| {
        v[28..32].copy_from_slice(&0xffff_0000u32.to_le_bytes())
    }))
    .unwrap_err();
    assert!(matches!(e, ElfError::Malformed(_)), "{e}");
    assert_eq!(hello()[PH..PH + 4], [1, 0, 0, 0], "PT_LOAD header position");
    // p_filesz > p_memsz (p_filesz at +16, p_memsz at +20)
    let e = parse_elf(&patched(|v| {
        v[PH + 20..PH + 24].copy_from_slice(&1u32.to_le_bytes())
    }))
    .unwrap_err();
    assert!(e.to_string().contains("p_filesz"), "{e}");
    // p_offset beyond the file
    let e = parse_elf(&patched(|v| {
        v[PH + 4..PH + 8].copy_from_slice(&0x00ff_0000u32.to_le_bytes())
    }))
    .unwrap_err();
    assert!(e.to_string().contains("outside the"), "{e}");
    // No PT_LOAD: make the only header PT_NULL
    assert_eq!(
        parse_elf(&patched(
            |v| v[PH..PH + 4].copy_from_slice(&0u32.to_le_bytes())
        ))
        .unwrap_err(),
        ElfError::NoLoadSegments
    );
    // Segment outside RAM
    let e = load_elf(
        hello(),
        Config {
            ram_base: 0x2_0000,
            ram_size: 0x1000,
        },
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            ElfError::SegmentOutsideRam {
                vaddr: 0x1_0000,
                ..
            }
        ),
        "{e}"
    );
    // Entry outside the loaded segments
    let e = load_elf(
        &patched(|v| v[24..28].copy_from_slice(&0x4_0000u32.to_le_bytes())),
        Config::default(),
    )
    .unwrap_err();
    assert_eq!(e, ElfError::BadEntry(0x4_0000));
    let e = load_elf(
        &patched(|v| v[24..28].copy_from_slice(&0x1_0002u32.to_le_bytes())),
        Config::default(),
    )
    .unwrap_err();
    assert_eq!(e, ElfError::BadEntry(0x1_0002));
    // Impossible RAM
    let e = load_elf(
        hello(),
        Config {
            ram_base: 0xffff_0000,
            ram_size: 0x2_0000,
        },
    )
    .unwrap_err();
    assert!(matches!(e, ElfError::BadRamConfig { .. }));
}

#[test]
fn truncated_and_corrupted_files_never_panic() {
    let good = hello();
    // Every truncation.
    for len in 0..good.len() {
        let _ = load_elf(&good[..len], Config::default());
    }
    // Pseudo-random byte corruption of the headers and beyond.
    let mut s = 0x9e37_79b9u32;
    let mut loaded = 0;
    for _ in 0..5000 {
        let mut v = good.to_vec();
        for _ in 0..4 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let pos = (s as usize >> 8) % 200.min(v.len()); // headers live in the first 200 bytes
            v[pos] = (s & 0xff) as u8;
        }
        if let Ok(mut cpu) = load_elf(&v, Config::default()) {
            loaded += 1;
            let _ = cpu.run(10_000); // may fault, must not panic
        }
    }
    // Pure garbage.
    for seed in 0..2000u32 {
        let mut x = seed.wrapping_mul(2_654_435_761) | 1;
        let mut v: Vec<u8> = (0..(seed % 300))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        if seed % 2 == 0 && v.len() >= 20 {
            v[..4].copy_from_slice(b"\x7fELF");
            v[4] = 1;
            v[5] = 1;
            v[6] = 1;
            v[18] = 243;
            v[16] = 2;
        }
        let _ = parse_elf(&v);
    }
    assert!(loaded > 0);
}
