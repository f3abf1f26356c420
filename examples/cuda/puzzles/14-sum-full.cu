// Puzzle 14 (Sum, full): one sum per block of 8 over 15 elements (the last block is short).
__global__ void sum_full(int *out, int *a, int size) {
    __shared__ int cache[8];
    int local_i = threadIdx.x;
    int i = blockIdx.x * blockDim.x + local_i;
    int v = 0;
    if (i < size) {
        v = a[i];
    }
    cache[local_i] = v;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride >= 1; stride >>= 1) {
        if (local_i < stride) {
            cache[local_i] = cache[local_i] + cache[local_i + stride];
        }
        __syncthreads();
    }
    if (local_i == 0) {
        out[blockIdx.x] = cache[0];
    }
}
