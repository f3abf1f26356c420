/* Our own environment for the riscv-tests ISA programs (riscv-software-src/riscv-tests, isa/), in place of
   its env/ submodule: user mode, no traps, no CSRs. A test program starts at _start (the toolchain's default
   linker script puts it wherever .text lands) and ends with the Linux exit syscall:
   RVTEST_PASS exits 0; RVTEST_FAIL exits with the failing test's number (TESTNUM = gp), or 255 when no test
   number was set. So qemu-riscv32, the interpreter and the woven machine all report a test by its exit status. */
#ifndef LOOM_RISCV_TEST_H
#define LOOM_RISCV_TEST_H

#define RVTEST_RV32U .macro init; .endm
#define RVTEST_RV64U .macro init; .endm

#define TESTNUM gp

#define RVTEST_CODE_BEGIN \
        .text;            \
        .align 2;         \
        .globl _start;    \
_start:                   \
        li TESTNUM, 0;

#define RVTEST_CODE_END \
        unimp

#define RVTEST_PASS \
        li a0, 0;   \
        li a7, 93;  \
        ecall;

#define RVTEST_FAIL      \
        mv a0, TESTNUM;  \
        bnez a0, 1f;     \
        li a0, 255;      \
1:      li a7, 93;       \
        ecall;

#define EXTRA_DATA

#define RVTEST_DATA_BEGIN \
        EXTRA_DATA        \
        .pushsection .tohost, "aw", @progbits; \
        .align 6; .global tohost; tohost: .dword 0; .size tohost, 8; \
        .align 6; .global fromhost; fromhost: .dword 0; .size fromhost, 8; \
        .popsection;      \
        .align 4; .global begin_signature; begin_signature:

#define RVTEST_DATA_END \
        .align 4; .global end_signature; end_signature:

#endif
