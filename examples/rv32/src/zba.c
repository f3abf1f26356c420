/* Array indexing over 16-, 32- and 64-bit elements: with -march=rv32im_zba gcc emits sh1add/sh2add/sh3add for
   the address arithmetic (checked by build.sh with objdump). */
#include "rt.h"
#define N 64
static uint16_t h[N];
static uint32_t w[N];
static uint64_t q[N];
static uint8_t idx[N];

__attribute__((noinline)) static uint32_t get16(const uint16_t *p, int i) { return p[i]; }
__attribute__((noinline)) static uint32_t get32(const uint32_t *p, int i) { return p[i]; }
__attribute__((noinline)) static uint64_t get64(const uint64_t *p, int i) { return p[i]; }

int main(void) {
    for (int i = 0; i < N; i++) {
        h[i] = (uint16_t)(i * 977);
        w[i] = (uint32_t)i * 2654435761u;
        q[i] = (uint64_t)i * 0x9e3779b97f4a7c15ull;
        idx[i] = (uint8_t)((i * 37 + 11) % N);
    }
    uint32_t s16 = 0, s32 = 0; uint64_t s64 = 0;
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < N; i++) {
            int j = idx[(i + r) % N];
            s16 += get16(h, j);
            s32 ^= get32(w, j) + (uint32_t)r;
            s64 += get64(q, j) >> r;
        }
    rt_printf("sum16 %u xor32 %08x sum64 %llx\n", s16, s32, (unsigned long long)s64);
    return 0;
}
