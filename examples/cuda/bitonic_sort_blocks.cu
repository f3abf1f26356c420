// Corpus kernel: two blocks each bitonic-sort their 16 values, the second block descending (a bool derived from blockIdx).
__global__ void bitonic_sort_blocks(int *out, int *a) {
    __shared__ int s[16];
    int t = threadIdx.x;
    int base = blockIdx.x * 16;
    bool descending = blockIdx.x == 1;
    s[t] = a[base + t];
    __syncthreads();
    for (int k = 2; k <= 16; k *= 2) {
        for (int j = k / 2; j > 0; j /= 2) {
            int p = t ^ j;
            if (p > t) {
                bool up = ((t & k) == 0) != descending;
                int x = s[t];
                int y = s[p];
                if (up ? x > y : x < y) {
                    s[t] = y;
                    s[p] = x;
                }
            }
            __syncthreads();
        }
    }
    out[base + t] = s[t];
}
