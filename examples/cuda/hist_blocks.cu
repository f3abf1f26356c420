// A histogram of 8 bins: a grid-stride loop counts into a shared histogram with atomicAdd, then the block adds
// its bins to the global one (also with atomicAdd) and thread 0 counts the block's elements.
__device__ unsigned bin_of(int x) {
    return (unsigned)(x < 0 ? -x : x) % 8u;
}

__global__ void hist_blocks(unsigned *hist, int *per_block, const int *a, int n) {
    __shared__ unsigned local[8];
    int t = threadIdx.x;
    if (t < 8) local[t] = 0u;
    __syncthreads();
    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += stride) {
        atomicAdd(&local[bin_of(a[i])], 1u);
    }
    __syncthreads();
    if (t < 8 && local[t] != 0u) atomicAdd(&hist[t], local[t]);
    if (t == 0) {
        int total = 0;
        for (int b = 0; b < 8; b++) total += local[b];
        per_block[blockIdx.x] = total;
    }
}
