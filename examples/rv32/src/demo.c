/* Built-in demo: exact bignum products, computed in the machine.

   Programs run very slowly inside the network, so this one is written to retire as few instructions as possible
   and to use no division instruction (DIV/DIVU/REM/REMU take dozens of machine steps each):
   - each output line "A x B = " is a string of the source; A and B are parsed from it at run time (the compiler
     cannot see the digits: the pointer goes through an empty asm) into base-10^4 limbs;
   - the product is formed column by column (a convolution with the carry folded in): a column sum is below
     8 * 9999^2 + 10^4 < 2^32, so 32-bit arithmetic suffices, and the carry s / 10^4 is a multiply-high by a
     reciprocal, exact for every 32-bit s;
   - the digits of A and B are read a word (four digits) at a time and combined with two multiplications;
   - each 4-digit limb of the product is split into two digit pairs by multiplications (no division) and
     written through a table of the 100 two-digit pairs;
   - all loops have constant trip counts and are unrolled, so no loop counters are left at run time. */
#include "rt.h"

typedef uint32_t u32;
typedef u32 __attribute__((may_alias)) word; /* text read as words and halfwords */
typedef uint16_t __attribute__((may_alias)) half;

#define PAIR10(t) t "0" t "1" t "2" t "3" t "4" t "5" t "6" t "7" t "8" t "9"
/* "00" "01" ... "99": entry x holds the two ASCII digits of x (tens first). */
static const char PAIRS[201] __attribute__((aligned(4))) =
    PAIR10("0") PAIR10("1") PAIR10("2") PAIR10("3") PAIR10("4")
    PAIR10("5") PAIR10("6") PAIR10("7") PAIR10("8") PAIR10("9");

#define MAXL 8 /* limbs per factor: up to 32 digits */

/* s / 10000 for every 32-bit s: 3518437209 = ceil(2^45 / 10^4), error 1168 * s < 2^45 (one MULHU + shift). */
static inline __attribute__((always_inline)) u32 div1e4(u32 s) { return (u32)(((uint64_t)s * 3518437209u) >> 45); }

/* Writes the four ASCII digits of r < 10^4 at d (2-byte aligned). r * ceil(2^32 / 100) = (r / 100) * 2^32 + f,
   where the 32-bit fraction f gives r % 100 = (f * 100) >> 32 (exact for every r < 10^4, error 4r < 2^32 / 100). */
static inline __attribute__((always_inline)) void put4(char *d, u32 r) {
    const half *pairs = (const half *)(const void *)PAIRS;
    uint64_t y = (uint64_t)r * 42949673u;
    ((half *)(void *)d)[0] = pairs[y >> 32];
    ((half *)(void *)d)[1] = pairs[((uint64_t)(u32)y * 100) >> 32];
}

/* The 4-digit number whose ASCII digits are the word at s (4-byte aligned; first digit in the lowest byte):
   d0 + d1<<8 + d2<<16 + d3<<24  ->  (10d0+d1) + (10d2+d3)<<16  ->  100(10d0+d1) + (10d2+d3), no byte overflows. */
static inline __attribute__((always_inline)) u32 group4(const char *s) {
    u32 w = *(const word *)(const void *)s & 0x0F0F0F0Fu;
    w = (w * (10 * 256 + 1)) >> 8 & 0x00FF00FFu;
    return (w * (100 * 65536 + 1)) >> 16;
}

/* n decimal digits at s -> base-10^4 limbs L[0..(n+3)/4), least significant first. Every full group of four
   digits must start at a 4-byte aligned address (the digits end at one). */
static inline __attribute__((always_inline)) void parse(const char *s, u32 n, u32 *L) {
#pragma GCC unroll 8
    for (u32 j = 0; j < n / 4; j++) L[j] = group4(s + n - 4 * j - 4);
    if (n % 4) {
        u32 x = 0;
#pragma GCC unroll 3
        for (u32 i = 0; i < n % 4; i++) x = x * 10 + (uint8_t)s[i] - '0';
        L[n / 4] = x;
    }
}

/* Prints "A x B = A*B\n" for the line "A x B = " with na- and nb-digit factors. */
static inline __attribute__((always_inline)) void demo(const char *line, u32 na, u32 nb) {
    const u32 la = (na + 3) / 4, lb = (nb + 3) / 4; /* limbs of A and B */
    const u32 m = (na + nb + 3) / 4;                  /* limbs of the product, which is below 10^(na+nb) */
    u32 A[MAXL], B[MAXL];
    u32 W[2 * MAXL + 1]; /* the product's digits, most significant limb first, then "\n" */
    char *d = (char *)W;
    const char *s = line;
    __asm__("" : "+r"(s)); /* the digits are read at run time */
    parse(s, na, A);
    parse(s + na + 3, nb, B);
    u32 carry = 0;
#pragma GCC unroll 16
    for (u32 k = 0; k < m; k++) { /* column k: the sum of A[i] * B[k - i]; the last carry is 0 */
        u32 sum = carry, lo = k + 1 > lb ? k + 1 - lb : 0, hi = k < la ? k + 1 : la;
#pragma GCC unroll 8
        for (u32 i = lo; i < hi; i++) sum += A[i] * B[k - i];
        carry = div1e4(sum);
        put4(d + 4 * (m - 1 - k), sum - carry * 10000);
    }
    d[4 * m] = '\n';
    const char *p = d, *end = d + 4 * m + 1;
    while (*p == '0') p++; /* at most four leading zeros; the product is not 0 */
    sys_write(1, line, na + nb + 6);
    sys_write(1, p, (size_t)(end - p));
}

/* The line "A x B = " is placed so that the digit groups of A and B lie on word boundaries: A's end at an
   aligned address (pad bytes before the text), and B's too, which needs B to have 4k+1 digits. */
#define DEMO(A, B)                                                                                             \
    do {                                                                                                       \
        _Static_assert((sizeof(B) - 1) % 4 == 1, "B needs 4k+1 digits");                                       \
        _Static_assert(sizeof(A) - 1 <= 4 * MAXL && sizeof(B) - 1 <= 4 * MAXL, "at most 4 * MAXL digits");       \
        static const struct {                                                                                  \
            char pad[(0u - (sizeof(A) - 1)) & 3];                                                              \
            char text[sizeof(A " x " B " = ")];                                                                \
        } line __attribute__((aligned(4))) = {.text = A " x " B " = "};                                        \
        demo(line.text, sizeof(A) - 1, sizeof(B) - 1);                                                         \
    } while (0)

int main(void) {
    DEMO("123456789", "987654321");
    DEMO("12345678901234567890123456789", "98765432109876543210987654321");
    return 0;
}
