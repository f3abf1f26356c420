// Corpus kernel: 8x8 matrix transpose through a 4x4 shared tile per block, 2-D grid of 2x2 blocks of 4x4 threads.
__global__ void transpose_shared(int *out, int *a) {
    __shared__ int tile[4][5];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int col = blockIdx.x * 4 + tx;
    int row = blockIdx.y * 4 + ty;
    tile[ty][tx] = a[row * 8 + col];
    __syncthreads();
    int ocol = blockIdx.y * 4 + tx;
    int orow = blockIdx.x * 4 + ty;
    out[orow * 8 + ocol] = tile[tx][ty];
}
