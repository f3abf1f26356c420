// Corpus kernel: a xorshift32 random stream per lane; the lane keeps numbers below a bound (a loop with continue and a count).
__global__ void xorshift_rng(int *out, unsigned *last, unsigned *seed, unsigned bound) {
    int i = threadIdx.x;
    unsigned x = seed[i];
    int kept = 0;
    for (int k = 0; k < 40; k++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        if (x >= bound) {
            continue;
        }
        kept++;
    }
    out[i] = kept;
    last[i] = x;
}
