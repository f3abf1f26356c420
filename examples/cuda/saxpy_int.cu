// Corpus kernel: out = alpha * x + y with scalar alpha, in blocks of 16.
__global__ void saxpy_int(int *out, int *x, int *y, int alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = alpha * x[i] + y[i];
    }
}
