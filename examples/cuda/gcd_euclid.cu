// Corpus kernel: Euclid's gcd per lane (a while loop with % and a per-lane trip count).
__global__ void gcd_euclid(int *out, int *a, int *b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = a[i];
    int y = b[i];
    while (y != 0) {
        int t = x % y;
        x = y;
        y = t;
    }
    out[i] = x;
}
