/* Sorts 300 pseudo-random numbers (xorshift32) with quicksort, checks the order, prints a digest. */
#include "rt.h"
#define N 300
static uint32_t a[N];
static uint32_t rng = 2463534242u;
static uint32_t xorshift32(void) { rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5; return rng; }

static void quicksort(uint32_t *v, int lo, int hi) {
    while (lo < hi) {
        uint32_t p = v[(lo + hi) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (v[i] < p) i++;
            while (v[j] > p) j--;
            if (i <= j) { uint32_t t = v[i]; v[i] = v[j]; v[j] = t; i++; j--; }
        }
        if (j - lo < hi - i) { quicksort(v, lo, j); lo = i; } else { quicksort(v, i, hi); hi = j; }
    }
}

int main(void) {
    uint32_t sum = 0;
    for (int i = 0; i < N; i++) { a[i] = xorshift32() % 100000; sum += a[i]; }
    quicksort(a, 0, N - 1);
    int ok = 1; uint32_t sum2 = 0, h = 0;
    for (int i = 0; i < N; i++) {
        if (i && a[i - 1] > a[i]) ok = 0;
        sum2 += a[i];
        h = h * 31 + a[i];
    }
    rt_printf("sorted %d numbers: %s\n", N, ok && sum == sum2 ? "ok" : "FAILED");
    rt_printf("min %u max %u median %u\n", a[0], a[N - 1], a[N / 2]);
    rt_printf("first:");
    for (int i = 0; i < 8; i++) rt_printf(" %u", a[i]);
    rt_printf("\nsum %u hash %08x\n", sum2, h);
    return ok ? 0 : 1;
}
