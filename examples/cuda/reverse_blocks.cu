// Corpus kernel: each block of 16 reverses its slice through shared memory; threads past n still meet the barrier.
__global__ void reverse_blocks(int *out, int *a, int n) {
    __shared__ int s[16];
    int t = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    int i = base + t;
    s[t] = i < n ? a[i] : -1;
    __syncthreads();
    out[i] = s[15 - t];
}
