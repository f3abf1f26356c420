// Corpus kernel: stream compaction with a shared exclusive scan of flags: positive values packed in order (deterministic).
__global__ void compact_flags(int *out, int *count, int *a) {
    __shared__ int f[16];
    int t = threadIdx.x;
    int x = a[t];
    int flag = x > 0 ? 1 : 0;
    f[t] = flag;
    __syncthreads();
    for (int off = 1; off < 16; off *= 2) {
        int v = t >= off ? f[t - off] : 0;
        __syncthreads();
        f[t] += v;
        __syncthreads();
    }
    if (flag) {
        out[f[t] - 1] = x;
    }
    if (t == 15) {
        count[0] = f[15];
    }
}
