// Corpus kernel: inclusive Hillis-Steele scan of 32 values in shared memory: read, barrier, add, barrier per step.
__global__ void scan_hillis_steele(int *out, int *a) {
    __shared__ int s[32];
    int t = threadIdx.x;
    s[t] = a[t];
    __syncthreads();
    for (int off = 1; off < 32; off *= 2) {
        int v = 0;
        if (t >= off) {
            v = s[t - off];
        }
        __syncthreads();
        s[t] += v;
        __syncthreads();
    }
    out[t] = s[t];
}
