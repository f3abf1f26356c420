// Corpus kernel: a dot product over 4 blocks: a shared tree reduction per block, then one atomicAdd per block into the total.
__global__ void dot_atomic(int *total, int *partial, int *a, int *b, int n) {
    __shared__ int s[8];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? a[i] * b[i] : 0;
    __syncthreads();
    for (int stride = 4; stride > 0; stride >>= 1) {
        if (t < stride) {
            s[t] += s[t + stride];
        }
        __syncthreads();
    }
    if (t == 0) {
        partial[blockIdx.x] = s[0];
        atomicAdd(&total[0], s[0]);
    }
}
