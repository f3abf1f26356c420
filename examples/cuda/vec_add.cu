// Corpus kernel: out = a + b over 20 elements in three blocks of 8 (the last block partly idle).
__global__ void vec_add(int *out, int *a, int *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a[i] + b[i];
    }
}
