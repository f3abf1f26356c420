// Reverse a whole array through shared memory: each block loads its tile reversed, meets its other warps at
// the barrier, and stores the tile into the mirrored place. Threads past n load 0 and store nothing.
__global__ void reverse_shared(int *out, const int *a, int n) {
    __shared__ int tile[16];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    tile[blockDim.x - 1 - t] = i < n ? a[i] : 0;
    __syncthreads();
    int pad = gridDim.x * blockDim.x - n;
    int j = (gridDim.x - 1 - blockIdx.x) * blockDim.x + t - pad;
    if (j >= 0) {
        out[j] = tile[t];
    }
}
