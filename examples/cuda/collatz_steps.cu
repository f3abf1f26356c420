// Corpus kernel: Collatz steps to reach 1 per lane (a while loop with a per-lane trip count).
__global__ void collatz_steps(int *out, unsigned *start) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = start[i];
    int steps = 0;
    while (x != 1) {
        if (x & 1) {
            x = 3 * x + 1;
        } else {
            x = x >> 1;
        }
        steps++;
    }
    out[i] = steps;
}
