// Puzzle 6 (Blocks): fewer threads per block than elements; the global index spans the blocks.
__global__ void blocks(int *out, int *a, int size) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < size) {
        out[i] = a[i] + 10;
    }
}
