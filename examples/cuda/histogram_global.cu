// Corpus kernel: a histogram straight into global memory with atomicAdd from four blocks; values bucketed by a signed division.
__global__ void histogram_global(int *hist, int *a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int bucket = a[i] / 10 + 4;
    atomicAdd(&hist[bucket], 1);
    atomicAdd(&hist[9], a[i]);
}
