// Corpus kernel: per-block inclusive scans of 3 blocks of 8 and each block's total (the second pass of a multi-block scan adds them).
__global__ void scan_blocks(int *out, int *sums, int *a, int n) {
    __shared__ int s[8];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? a[i] : 0;
    __syncthreads();
    for (int off = 1; off < 8; off <<= 1) {
        int v = t >= off ? s[t - off] : 0;
        __syncthreads();
        s[t] = s[t] + v;
        __syncthreads();
    }
    out[i] = s[t];
    if (t == blockDim.x - 1) {
        sums[blockIdx.x] = s[t];
    }
}
