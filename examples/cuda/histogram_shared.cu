// Corpus kernel: a histogram of 8 bins: shared-memory atomics per block, then one global atomicAdd per bin and block.
__global__ void histogram_shared(int *hist, int *a) {
    __shared__ int bins[8];
    int t = threadIdx.x;
    if (t < 8) {
        bins[t] = 0;
    }
    __syncthreads();
    atomicAdd(&bins[a[blockIdx.x * blockDim.x + t]], 1);
    __syncthreads();
    if (t < 8) {
        atomicAdd(&hist[t], bins[t]);
    }
}
