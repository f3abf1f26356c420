// Puzzle 17 (Matmul, full): 3x3 tiles over an 8x8 product; every block walks the shared dimension in steps
// of 3, staging a tile of a and one of b (zeros past the edge) between two barriers.
__global__ void matmul_full(int *out, int *a, int *b, int size) {
    __shared__ int sa[3][3];
    __shared__ int sb[3][3];
    int li = threadIdx.x;
    int lj = threadIdx.y;
    int i = blockIdx.x * 3 + li;
    int j = blockIdx.y * 3 + lj;
    int acc = 0;
    for (int t = 0; t < size; t += 3) {
        int x = 0;
        if (i < size && t + lj < size) {
            x = a[i * size + t + lj];
        }
        int y = 0;
        if (t + li < size && j < size) {
            y = b[(t + li) * size + j];
        }
        sa[li][lj] = x;
        sb[li][lj] = y;
        __syncthreads();
        for (int k = 0; k < 3; k++) {
            acc += sa[li][k] * sb[k][lj];
        }
        __syncthreads();
    }
    if (i < size && j < size) {
        out[i * size + j] = acc;
    }
}
