# Self-checking test of every RV32IM+Zba instruction, written in assembly so that the exact instructions are
# known: all loads and stores at every byte offset (misaligned ones included), all branches both ways, JAL/JALR,
# LUI/AUIPC, FENCE, the M edge cases of Unpriv Table 7.1, Zba. Prints "isa_selftest: N checks ok" and exits 0, or
# prints the failing check number and exits with it. Its own _start: run it in lockstep with qemu-riscv32.
    .option norvc
    .macro CHECK reg, value
    addi  s11, s11, 1
    li    t6, \value
    bne   \reg, t6, fail
    .endm

    .section .text.start, "ax"
    .globl _start
_start:
    la    sp, __stack_top
    li    s11, 0                      # check counter

    # ---- LUI / AUIPC
    lui   a0, 0xfffff
    CHECK a0, 0xfffff000
1:  auipc a1, 0
    la    a2, 1b
    sub   a1, a1, a2
    CHECK a1, 0
    auipc a1, 0x1
2:  la    a2, 2b
    sub   a1, a1, a2
    CHECK a1, 0x1000 - 4               # auipc was 4 bytes before label 2 ... (la expands to auipc+addi)

    # ---- OP-IMM
    li    a0, 0x7fffffff
    addi  a1, a0, 1
    CHECK a1, 0x80000000
    slti  a1, a1, 0
    CHECK a1, 1
    li    a0, 5
    sltiu a1, a0, -1
    CHECK a1, 1
    xori  a1, a0, -1
    CHECK a1, 0xfffffffa
    ori   a1, a0, 0x7f0
    CHECK a1, 0x7f5
    andi  a1, a0, -4
    CHECK a1, 4
    li    a0, 0x80000001
    slli  a1, a0, 1
    CHECK a1, 2
    srli  a1, a0, 31
    CHECK a1, 1
    srai  a1, a0, 31
    CHECK a1, 0xffffffff

    # ---- OP
    li    a0, 0x80000000
    li    a2, 0xffffffff
    add   a1, a0, a2
    CHECK a1, 0x7fffffff
    sub   a1, a0, a2
    CHECK a1, 0x80000001
    li    a3, 33
    sll   a1, a2, a3
    CHECK a1, 0xfffffffe
    srl   a1, a0, a3
    CHECK a1, 0x40000000
    sra   a1, a0, a3
    CHECK a1, 0xc0000000
    slt   a1, a0, zero
    CHECK a1, 1
    sltu  a1, a0, zero
    CHECK a1, 0
    xor   a1, a0, a2
    CHECK a1, 0x7fffffff
    or    a1, a0, a3
    CHECK a1, 0x80000021
    and   a1, a2, a3
    CHECK a1, 33

    # ---- M (Unpriv chapter 7, Table 7.1)
    li    a0, 123456789
    li    a3, 987654321
    mul   a1, a0, a3
    CHECK a1, 0xfbff5385
    mulhu a1, a0, a3
    CHECK a1, 28389652
    li    a0, 0x80000000
    mulh  a1, a0, a0
    CHECK a1, 0x40000000
    mulhsu a1, a2, a2                  # -1 * (2^32-1)
    CHECK a1, 0xffffffff
    mulhu a1, a2, a2
    CHECK a1, 0xfffffffe
    div   a1, a0, a2                   # overflow
    CHECK a1, 0x80000000
    rem   a1, a0, a2
    CHECK a1, 0
    li    a3, 7
    div   a1, a3, zero
    CHECK a1, 0xffffffff
    divu  a1, a3, zero
    CHECK a1, 0xffffffff
    rem   a1, a3, zero
    CHECK a1, 7
    remu  a1, a3, zero
    CHECK a1, 7
    li    a4, -2
    div   a1, a3, a4
    CHECK a1, 0xfffffffd
    rem   a1, a3, a4
    CHECK a1, 1
    divu  a1, a2, a3
    CHECK a1, 613566756
    remu  a1, a2, a3
    CHECK a1, 3

    # ---- Zba
    li    a0, 3
    li    a3, 100
    sh1add a1, a0, a3
    CHECK a1, 106
    sh2add a1, a0, a3
    CHECK a1, 112
    sh3add a1, a0, a3
    CHECK a1, 124
    li    a0, 0x80000001
    sh3add a1, a0, zero
    CHECK a1, 8

    # ---- FENCE
    fence
    fence rw, rw

    # ---- loads and stores at every byte offset 0..3 (misaligned allowed, byte-wise)
    la    s0, buf
    li    s1, 0                        # offset
ldst_loop:
    add   s2, s0, s1
    li    a0, 0x84838281
    sw    a0, 0(s2)                    # bytes 81 82 83 84 at s2
    li    a0, 0x75
    sb    a0, 4(s2)
    lb    a1, 0(s2)
    CHECK a1, 0xffffff81
    lbu   a1, 0(s2)
    CHECK a1, 0x81
    lh    a1, 1(s2)
    CHECK a1, 0xffff8382
    lhu   a1, 1(s2)
    CHECK a1, 0x8382
    lh    a1, 3(s2)                    # 84 75
    CHECK a1, 0x7584
    lw    a1, 0(s2)
    CHECK a1, 0x84838281
    lw    a1, 1(s2)
    CHECK a1, 0x75848382
    li    a0, 0xbeef
    sh    a0, 2(s2)
    lw    a1, 0(s2)
    CHECK a1, 0xbeef8281
    lb    a1, 4(s2)
    CHECK a1, 0x75
    lw    a1, -4(s2)                   # the word before (previous iteration's data or zero)
    addi  s1, s1, 1
    li    t0, 4
    blt   s1, t0, ldst_loop
    # last iteration (s2 = buf+3): 81 82 ef be 75 at buf+3..buf+7
    lw    a1, 4(s0)
    CHECK a1, 0x75beef82
    lbu   a1, 3(s0)
    CHECK a1, 0x81

    # ---- branches, both ways
    li    a0, -1
    li    a3, 1
    beq   a0, a0, 1f
    j     fail
1:  beq   a0, a3, fail
    bne   a0, a3, 1f
    j     fail
1:  bne   a0, a0, fail
    blt   a0, a3, 1f
    j     fail
1:  blt   a3, a0, fail
    bge   a3, a0, 1f
    j     fail
1:  bge   a0, a3, fail
    bge   a0, a0, 1f
    j     fail
1:  bltu  a3, a0, 1f
    j     fail
1:  bltu  a0, a3, fail
    bgeu  a0, a3, 1f
    j     fail
1:  bgeu  a3, a0, fail
    # backward branch loop: sum 1..10
    li    a0, 0
    li    a3, 10
1:  add   a0, a0, a3
    addi  a3, a3, -1
    bnez  a3, 1b
    CHECK a0, 55

    # ---- JAL / JALR
    jal   ra, sub1
    CHECK a0, 0x5a
    la    t0, sub1
    jalr  ra, 0(t0)
    CHECK a0, 0x5a
    la    t0, sub1 + 1
    jalr  ra, -1(t0)                   # target (t0 - 1) & ~1
    CHECK a0, 0x5a
    la    t0, sub2
    jalr  t0, 0(t0)                    # rd == rs1
    CHECK a0, 0xa5
    jal   zero, 1f
    j     fail
1:
    # ---- x0 stays zero
    addi  zero, zero, 1
    CHECK zero, 0

    # ---- report
    mv    a0, s11
    call  report_ok
    li    a0, 0
    li    a7, 93
    ecall

fail:
    mv    a0, s11
    call  report_fail
    mv    a0, s11
    li    a7, 93
    ecall

sub1:
    li    a0, 0x5a
    ret
sub2:
    li    a0, 0xa5
    jr    t0

    .bss
    .balign 16
    .space 16
buf:
    .space 32
