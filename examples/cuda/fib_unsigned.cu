// Corpus kernel: Fibonacci numbers modulo 2^32 with per-lane n up to 100.
__global__ void fib_unsigned(unsigned *out, int *n) {
    int i = threadIdx.x;
    unsigned a = 0;
    unsigned b = 1;
    for (int k = 0; k < n[i]; k++) {
        unsigned c = a + b;
        a = b;
        b = c;
    }
    out[i] = a;
}
