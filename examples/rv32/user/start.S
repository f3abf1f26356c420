/* Program entry for a user-mode Linux-style RV32 program linked with the toolchain's default linker script.
   The loader leaves sp at the start-up block (argc, argv, envp, auxv), as qemu-riscv32 and the woven machine
   both do; nothing here sets sp. */
    .section .text.start,"ax"
    .globl _start
_start:
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop
    lw a0, 0(sp)        /* argc */
    addi a1, sp, 4      /* argv */
    call main
    call exit
1:  j 1b
