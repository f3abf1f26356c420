// Corpus kernel: 6x5 times 5x7 integer matrix product, one thread per output element, 2-D grid of 4x4 blocks with guards.
__global__ void matmul_direct(int *c, int *a, int *b, int m, int k, int n) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        int acc = 0;
        for (int e = 0; e < k; e++) {
            acc += a[row * k + e] * b[e * n + col];
        }
        c[row * n + col] = acc;
    }
}
