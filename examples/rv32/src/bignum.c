/* Exact bignum multiplication: decimal strings -> base-10^9 limbs -> schoolbook product -> decimal. */
#include "rt.h"
#include <string.h>
#define BASE 1000000000u
#define MAXL 16

typedef struct { int n; uint32_t d[MAXL * 2]; } big; /* little-endian limbs */

static void parse(big *x, const char *s) {
    int len = (int)strlen(s);
    x->n = 0;
    for (int end = len; end > 0; end -= 9) {
        int start = end > 9 ? end - 9 : 0;
        uint32_t v = 0;
        for (int i = start; i < end; i++) v = v * 10 + (uint32_t)(s[i] - '0');
        x->d[x->n++] = v;
    }
}

static void mul(big *r, const big *a, const big *b) {
    uint64_t acc[MAXL * 2];
    memset(acc, 0, sizeof acc);
    for (int i = 0; i < a->n; i++) {
        uint64_t carry = 0;
        for (int j = 0; j < b->n; j++) {
            uint64_t t = acc[i + j] + (uint64_t)a->d[i] * b->d[j] + carry;
            acc[i + j] = t % BASE;
            carry = t / BASE;
        }
        acc[i + b->n] += carry;
    }
    r->n = a->n + b->n;
    for (int i = 0; i < r->n; i++) r->d[i] = (uint32_t)acc[i];
    while (r->n > 1 && r->d[r->n - 1] == 0) r->n--;
}

static void print(const big *x) {
    rt_printf("%u", x->d[x->n - 1]);
    for (int i = x->n - 2; i >= 0; i--) rt_printf("%09u", x->d[i]);
}

static void show(const char *a, const char *b) {
    big x, y, r;
    parse(&x, a); parse(&y, b); mul(&r, &x, &y);
    rt_printf("%s x %s = ", a, b);
    print(&r);
    rt_printf("\n");
}

int main(void) {
    show("123456789", "987654321");
    show("12345678901234567890123456789", "98765432109876543210987654321");
    show("31415926535897932384626433832795028841971", "27182818284590452353602874713526624977572");
    /* 30! by repeated multiplication */
    big f, k, t; parse(&f, "1");
    for (uint32_t i = 2; i <= 30; i++) { k.n = 1; k.d[0] = i; mul(&t, &f, &k); f = t; }
    rt_printf("30! = "); print(&f); rt_printf("\n");
    return 0;
}
