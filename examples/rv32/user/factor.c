/* Reads numbers from standard input (one per line, up to 2^32 - 1) and prints each one's prime
   factorisation; exits 0 at the end of input, 1 on a line that is not a number. */
#include <stdio.h>

static int read_number(unsigned long *n) {
    int c, digits = 0;
    unsigned long long v = 0;
    while ((c = getchar()) == ' ' || c == '\t' || c == '\n' || c == '\r')
        ;
    if (c == EOF)
        return 0;
    for (; c >= '0' && c <= '9'; c = getchar()) {
        v = v * 10 + (unsigned)(c - '0');
        if (v > 0xffffffffULL)
            return -1;
        digits++;
    }
    if (!digits || (c != '\n' && c != EOF && c != ' ' && c != '\r'))
        return -1;
    *n = (unsigned long)v;
    return 1;
}

int main(void) {
    unsigned long n;
    int r;
    while ((r = read_number(&n)) > 0) {
        printf("%lu =", n);
        if (n < 2) {
            printf(" %lu\n", n);
            continue;
        }
        const char *sep = " ";
        for (unsigned long p = 2; p <= n / p; p += (p == 2) ? 1 : 2) {
            while (n % p == 0) {
                printf("%s%lu", sep, p);
                sep = " * ";
                n /= p;
            }
        }
        if (n > 1)
            printf("%s%lu", sep, n);
        printf("\n");
    }
    if (r < 0) {
        fprintf(stderr, "factor: not a number\n");
        return 1;
    }
    return 0;
}
