# Minimal start-up code for the RV32IM examples (no OS, Linux syscall ABI of qemu-riscv32 user mode).
# QEMU user mode picks its own initial sp, so _start sets sp itself: the interpreter and QEMU agree on every
# register from the second instruction on. .bss and the stack are zero-filled by the loader (p_memsz > p_filesz).
    .section .text.start, "ax"
    .globl _start
_start:
    la    sp, __stack_top     # auipc + addi
    call  main                # auipc + jalr
    li    a7, 93              # exit(a0 = main's return value)
    ecall
1:  j     1b
