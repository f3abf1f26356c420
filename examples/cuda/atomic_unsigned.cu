// Corpus kernel: unsigned atomicAdd that wraps past 2^32, from three blocks.
__global__ void atomic_unsigned(unsigned *acc, unsigned *a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&acc[0], a[i]);
    atomicAdd(&acc[1], 1u);
    atomicAdd(&acc[2], a[i] >> 28);
}
