// Corpus kernel: tree reduction of 32 values per block in shared memory (eight warps on 4 lanes meet at every level), two blocks.
__global__ void reduce_sum_32(int *out, int *a) {
    __shared__ int s[32];
    int t = threadIdx.x;
    s[t] = a[blockIdx.x * 32 + t];
    __syncthreads();
    for (int stride = 16; stride > 0; stride >>= 1) {
        if (t < stride) {
            s[t] += s[t + stride];
        }
        __syncthreads();
    }
    if (t == 0) {
        out[blockIdx.x] = s[0];
    }
}
