// Corpus kernel: a grid-stride loop: 2 blocks of 8 threads cover 75 elements, 4 or 5 per thread.
__global__ void grid_stride(int *out, int *a, int n) {
    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = a[i] * 3 - i;
    }
}
