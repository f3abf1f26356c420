// Corpus kernel: population count by clearing the lowest set bit until none is left (per-lane trip counts 0 to 32).
__global__ void popcount_loop(int *out, unsigned *a) {
    int i = threadIdx.x;
    unsigned x = a[i];
    int c = 0;
    while (x) {
        x &= x - 1;
        c++;
    }
    out[i] = c;
}
