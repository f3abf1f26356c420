// Puzzle 7 (Blocks 2D): a 2x2 grid of 3x3 blocks over a 5x5 array.
__global__ void blocks_2d(int *out, int *a, int size) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < size && j < size) {
        out[i * size + j] = a[i * size + j] + 10;
    }
}
