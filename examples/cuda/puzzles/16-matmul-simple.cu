// Puzzle 16 (Matmul, simple): one 3x3 block, a and b staged in shared 3x3 tiles.
__global__ void matmul_simple(int *out, int *a, int *b, int size) {
    __shared__ int sa[3][3];
    __shared__ int sb[3][3];
    int i = threadIdx.x;
    int j = threadIdx.y;
    if (i < size && j < size) {
        sa[i][j] = a[i * size + j];
        sb[i][j] = b[i * size + j];
    }
    __syncthreads();
    if (i < size && j < size) {
        int acc = 0;
        for (int k = 0; k < size; k++) {
            acc += sa[i][k] * sb[k][j];
        }
        out[i * size + j] = acc;
    }
}
