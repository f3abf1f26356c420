/* Sieve of Eratosthenes below 10000. */
#include "rt.h"
#define LIMIT 10000
static uint8_t composite[LIMIT];
int main(void) {
    for (int i = 2; i * i < LIMIT; i++)
        if (!composite[i])
            for (int j = i * i; j < LIMIT; j += i) composite[j] = 1;
    int count = 0, last = 0; uint32_t sum = 0;
    for (int i = 2; i < LIMIT; i++)
        if (!composite[i]) { count++; last = i; sum += i; }
    rt_printf("primes below %d: %d, largest %d, sum %u\n", LIMIT, count, last, sum);
    rt_printf("first:");
    for (int i = 2, k = 0; k < 10; i++) if (!composite[i]) { rt_printf(" %d", i); k++; }
    rt_printf("\n");
    return count == 1229 ? 0 : 1;
}
