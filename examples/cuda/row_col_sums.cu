// Corpus kernel: row and column sums of a 6x8 matrix by atomicAdd from a 2-D grid of 4x3 blocks.
__global__ void row_col_sums(int *rows, int *cols, int *a) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < 6 && c < 8) {
        int v = a[r * 8 + c];
        atomicAdd(&rows[r], v);
        atomicAdd(&cols[c], v);
    }
}
