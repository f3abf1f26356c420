// Corpus kernel: matrix-vector product, one row per thread, the vector staged in shared memory by a grid-stride copy.
__global__ void matvec(int *y, int *a, int *x, int rows, int cols) {
    __shared__ int xs[16];
    int t = threadIdx.x;
    for (int j = t; j < cols; j += blockDim.x) {
        xs[j] = x[j];
    }
    __syncthreads();
    int r = blockIdx.x * blockDim.x + t;
    if (r < rows) {
        int acc = 0;
        for (int j = 0; j < cols; j++) {
            acc += a[r * cols + j] * xs[j];
        }
        y[r] = acc;
    }
}
