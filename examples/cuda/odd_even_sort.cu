// Corpus kernel: odd-even transposition sort of 16 values, 16 rounds of compare-exchange between barriers.
__global__ void odd_even_sort(int *out, int *a) {
    __shared__ int s[16];
    int t = threadIdx.x;
    s[t] = a[t];
    __syncthreads();
    for (int round = 0; round < 16; round++) {
        int first = round & 1;
        if ((t & 1) == first && t + 1 < 16) {
            int x = s[t];
            int y = s[t + 1];
            if (x > y) {
                s[t] = y;
                s[t + 1] = x;
            }
        }
        __syncthreads();
    }
    out[t] = s[t];
}
