// Corpus kernel: bitonic sort of 32 signed values in shared memory by one block of 32 threads (eight warps on 4 lanes).
__global__ void bitonic_sort_32(int *out, int *a) {
    __shared__ int s[32];
    int t = threadIdx.x;
    s[t] = a[t];
    __syncthreads();
    for (int k = 2; k <= 32; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            int p = t ^ j;
            if (p > t) {
                int x = s[t];
                int y = s[p];
                bool up = (t & k) == 0;
                if ((x > y) == up) {
                    s[t] = y;
                    s[p] = x;
                }
            }
            __syncthreads();
        }
    }
    out[t] = s[t];
}
