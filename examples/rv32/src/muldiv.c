/* Every M-extension instruction over edge operands, through inline assembly so that division by zero and
   signed overflow reach the hardware (Unpriv Table 7.1: no trap, defined results). */
#include "rt.h"
#define OP(name)                                                                          \
    static uint32_t op_##name(uint32_t a, uint32_t b) {                                   \
        uint32_t r;                                                                       \
        __asm__ volatile(#name " %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));                 \
        return r;                                                                         \
    }
OP(mul) OP(mulh) OP(mulhsu) OP(mulhu) OP(div) OP(divu) OP(rem) OP(remu)
static const uint32_t vals[] = {0, 1, 2, 3, 7, 0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xffffffff, 123456789, 0xdeadbeef};
#define NV (sizeof vals / sizeof vals[0])
int main(void) {
    uint32_t (*ops[8])(uint32_t, uint32_t) = {op_mul, op_mulh, op_mulhsu, op_mulhu, op_div, op_divu, op_rem, op_remu};
    const char *names[8] = {"mul", "mulh", "mulhsu", "mulhu", "div", "divu", "rem", "remu"};
    for (int o = 0; o < 8; o++) {
        uint32_t h = 0;
        for (unsigned i = 0; i < NV; i++)
            for (unsigned j = 0; j < NV; j++) h = (h ^ ops[o](vals[i], vals[j])) * 16777619u;
        rt_printf("%-6s hash %08x\n", names[o], h);
    }
    rt_printf("div  -2^31/-1 = %08x  rem = %08x\n", op_div(0x80000000u, 0xffffffffu), op_rem(0x80000000u, 0xffffffffu));
    rt_printf("div  7/0 = %08x  divu 7/0 = %08x  rem 7/0 = %u  remu 7/0 = %u\n", op_div(7, 0), op_divu(7, 0), op_rem(7, 0), op_remu(7, 0));
    rt_printf("mulhsu(-1, 0xffffffff) = %08x  mulh(-2^31, -2^31) = %08x\n", op_mulhsu(0xffffffffu, 0xffffffffu), op_mulh(0x80000000u, 0x80000000u));
    return 0;
}
