// Corpus kernel: 8x8 matrix product with 4x4 shared tiles (two tiles along the shared dimension), 2x2 blocks of 16 threads.
__global__ void matmul_tiled(int *c, int *a, int *b) {
    __shared__ int ta[4][4];
    __shared__ int tb[4][4];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * 4 + ty;
    int col = blockIdx.x * 4 + tx;
    int acc = 0;
    for (int t = 0; t < 2; t++) {
        ta[ty][tx] = a[row * 8 + t * 4 + tx];
        tb[ty][tx] = b[(t * 4 + ty) * 8 + col];
        __syncthreads();
        for (int e = 0; e < 4; e++) {
            acc += ta[ty][e] * tb[e][tx];
        }
        __syncthreads();
    }
    c[row * 8 + col] = acc;
}
