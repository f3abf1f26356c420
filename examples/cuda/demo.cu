// The built-in demo: each block reverses its slice of `a` through shared memory (on 4 lanes a block of 8
// threads is two warps, which meet at the barrier) and every thread adds its element's square to `sum` with
// atomicAdd. Threads past `n` only take part in the barrier.
__global__ void demo(int *out, int *sum, const int *a, int n) {
    __shared__ int tile[8];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    tile[t] = i < n ? a[i] : 0;
    __syncthreads();
    int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - t);
    if (j < n) {
        out[j] = tile[t];
    }
    atomicAdd(&sum[0], tile[t] * tile[t]);
}
