/* A program as a user writes it: picolibc's printf, data and .bss, exit status from main. */
#include <stdio.h>

static unsigned squares[64]; /* .bss: zeroed by the loader */
int offset = 7;              /* .data */

int main(void) {
    unsigned sum = 0;
    for (int i = 0; i < 64; i++) {
        squares[i] = (unsigned)(i * i + offset);
        sum += squares[i];
    }
    printf("hello from a default-linked program: sum %u\n", sum);
    return 3;
}
