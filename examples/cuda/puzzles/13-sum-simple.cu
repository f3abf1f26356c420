// Puzzle 13 (Sum, simple): a block's sum by a tree reduction in shared memory.
__global__ void sum_simple(int *out, int *a, int size) {
    __shared__ int cache[8];
    int local_i = threadIdx.x;
    int i = blockIdx.x * blockDim.x + local_i;
    cache[local_i] = i < size ? a[i] : 0;
    __syncthreads();
    int stride = 1;
    while (stride < 8) {
        if (local_i % (2 * stride) == 0) {
            cache[local_i] += cache[local_i + stride];
        }
        stride *= 2;
        __syncthreads();
    }
    if (local_i == 0) {
        out[blockIdx.x] = cache[0];
    }
}
