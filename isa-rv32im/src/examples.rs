//! The example programs of `examples/rv32/` (C sources in `examples/rv32/src`, built by
//! `examples/rv32/build.sh`), embedded so that tests, the CLI and later the woven machine need no cross
//! toolchain. `expected_stdout` and `expected_status` were recorded from qemu-riscv32 by the build script.

/// One committed example program.
#[derive(Clone, Copy, Debug)]
pub struct Example {
    /// Short name (`examples/rv32/bin/<name>.elf`).
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// The ELF32 executable (linked at 0x10000, fits the default 256 KiB RAM).
    pub elf: &'static [u8],
    /// Console output under qemu-riscv32.
    pub expected_stdout: &'static [u8],
    /// Exit status under qemu-riscv32, as text (e.g. `"0\n"`).
    pub expected_status: &'static str,
}

impl Example {
    /// The expected exit status as a number.
    pub fn status(&self) -> Option<i32> {
        self.expected_status.trim().parse().ok()
    }
}

/// All example programs.
pub const EXAMPLES: &[Example] = &[
    Example {
        name: "hello",
        description: "prints a greeting",
        elf: include_bytes!("../../examples/rv32/bin/hello.elf"),
        expected_stdout: include_bytes!("../../examples/rv32/expected/hello.out"),
        expected_status: include_str!("../../examples/rv32/expected/hello.status"),
    },
    Example {
        name: "sort",
        description: "quicksort of 300 xorshift32 numbers, order and sum checked",
        elf: include_bytes!("../../examples/rv32/bin/sort.elf"),
        expected_stdout: include_bytes!("../../examples/rv32/expected/sort.out"),
        expected_status: include_str!("../../examples/rv32/expected/sort.status"),
    },
    Example {
        name: "crc32",
        description: "CRC-32 bitwise and table-driven (check value cbf43926)",
        elf: include_bytes!("../../examples/rv32/bin/crc32.elf"),
        expected_stdout: include_bytes!("../../examples/rv32/expected/crc32.out"),
        expected_status: include_str!("../../examples/rv32/expected/crc32.status"),
    },
    Example {
        name: "sha256",
        description: "SHA-256 of the FIPS 180-4 test messages",
        elf: include_bytes!("../../examples/rv32/bin/sha256.elf"),
        expected_stdout: include_bytes!("../../examples/rv32/expected/sha256.out"),
        expected_status: include_str!("../../examples/rv32/expected/sha256.status"),
    },
    Example {
        name: "sieve",
        description: "sieve of Eratosthenes below 10000 (1229 primes)",
        elf: include_bytes!("../../examples/rv32/bin/sieve.elf"),
        expected_stdout: include_bytes!("../../examples/rv32/expected/sieve.out"),
        expected_status: include_str!("../../examples/rv32/expected/sieve.status"),
    },
    Example {
        name: "bignum",
        description: "exact decimal bignum products, 123456789 x 987654321 and larger, and 30!",
        elf: include_bytes!("../../examples/rv32/bin/bignum.elf"),
        expected_stdout: include_bytes!("../../examples/rv32/expected/bignum.out"),
        expected_status: include_str!("../../examples/rv32/expected/bignum.status"),
    },
    Example {
        name: "printf",
        description: "our integer printf: widths, flags, signs, 64-bit values",
        elf: include_bytes!("../../examples/rv32/bin/printf.elf"),
        expected_stdout: include_bytes!("../../examples/rv32/expected/printf.out"),
        expected_status: include_str!("../../examples/rv32/expected/printf.status"),
    },
    Example {
        name: "zba",
        description: "array indexing compiled to sh1add/sh2add/sh3add",
        elf: include_bytes!("../../examples/rv32/bin/zba.elf"),
        expected_stdout: include_bytes!("../../examples/rv32/expected/zba.out"),
        expected_status: include_str!("../../examples/rv32/expected/zba.status"),
    },
    Example {
        name: "muldiv",
        description: "all eight M instructions over edge operands (division by zero, overflow)",
        elf: include_bytes!("../../examples/rv32/bin/muldiv.elf"),
        expected_stdout: include_bytes!("../../examples/rv32/expected/muldiv.out"),
        expected_status: include_str!("../../examples/rv32/expected/muldiv.status"),
    },
    Example {
        name: "isa_selftest",
        description: "assembly self-check of every instruction: loads/stores at every byte offset, branches, JAL/JALR, LUI/AUIPC, M edge cases, Zba",
        elf: include_bytes!("../../examples/rv32/bin/isa_selftest.elf"),
        expected_stdout: include_bytes!("../../examples/rv32/expected/isa_selftest.out"),
        expected_status: include_str!("../../examples/rv32/expected/isa_selftest.status"),
    },
    Example {
        name: "demo",
        description: "built-in demo: exact bignum products 123456789 x 987654321 and of two 29-digit numbers, computed in the machine",
        elf: include_bytes!("../../examples/rv32/bin/demo.elf"),
        expected_stdout: include_bytes!("../../examples/rv32/expected/demo.out"),
        expected_status: include_str!("../../examples/rv32/expected/demo.status"),
    },
];

/// Looks an example up by name.
pub fn example(name: &str) -> Option<&'static Example> {
    EXAMPLES.iter().find(|e| e.name == name)
}

/// MicroPython for this machine (`examples/rv32/micropython`, built from MicroPython's embed port by its
/// `build.sh`, at MicroPython's extra-features level with single-precision software floats, f-strings and line
/// numbers): it reads a Python script from standard input (read(2) on fd 0) until the end of input, runs it,
/// and exits 0, or 1 when the script raised an exception. Default-linked at 0x10000: 237 KiB of code and
/// data, a 128 KiB heap and a 16 KiB script buffer, 381 KiB from the RAM base in all, so it runs in 512 KiB
/// of RAM with a stack of up to 96 KiB ([`MICROPYTHON_RAM`]).
pub const MICROPYTHON_ELF: &[u8] = include_bytes!("../../examples/rv32/micropython/bin/micropython.elf");

/// The RAM MicroPython needs at least (bytes, a power of two, from 0x10000): the image, its bss and the stack.
pub const MICROPYTHON_RAM: u32 = 512 * 1024;
