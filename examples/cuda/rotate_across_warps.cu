// Corpus kernel: a 32-thread block rotates its values by k through shared memory: every read crosses warps.
__global__ void rotate_across_warps(int *out, int *a, int k) {
    __shared__ int s[32];
    int t = threadIdx.x;
    s[t] = a[t];
    __syncthreads();
    out[t] = s[(t + k) % 32];
}
