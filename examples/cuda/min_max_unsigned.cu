// Corpus kernel: min and max of unsigned values past 2^31 (unsigned comparisons).
__global__ void min_max_unsigned(unsigned *lo, unsigned *hi, unsigned *a, unsigned *b) {
    int i = threadIdx.x;
    unsigned x = a[i];
    unsigned y = b[i];
    lo[i] = min(x, y);
    hi[i] = max(x, y);
}
