// Corpus kernel: exclusive Blelloch scan of 32 values (up-sweep, clear, down-sweep) with 16 threads, two per thread.
__global__ void scan_blelloch(int *out, int *total, int *a) {
    __shared__ int s[32];
    int t = threadIdx.x;
    s[2 * t] = a[2 * t];
    s[2 * t + 1] = a[2 * t + 1];
    int offset = 1;
    for (int d = 16; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1;
            int bi = offset * (2 * t + 2) - 1;
            s[bi] += s[ai];
        }
        offset *= 2;
    }
    __syncthreads();
    if (t == 0) {
        total[0] = s[31];
        s[31] = 0;
    }
    for (int d = 1; d < 32; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1;
            int bi = offset * (2 * t + 2) - 1;
            int x = s[ai];
            s[ai] = s[bi];
            s[bi] += x;
        }
    }
    __syncthreads();
    out[2 * t] = s[2 * t];
    out[2 * t + 1] = s[2 * t + 1];
}
