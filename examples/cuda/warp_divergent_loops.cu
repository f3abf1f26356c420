// Corpus kernel: lanes of one warp run loops of different kinds and lengths chosen by their index, then meet at a barrier.
__global__ void warp_divergent_loops(int *out, int *a) {
    __shared__ int s[16];
    int t = threadIdx.x;
    int n = a[t];
    int v = 0;
    if (t % 3 == 0) {
        for (int k = 0; k < n; k++) {
            v += k;
        }
    } else if (t % 3 == 1) {
        int k = n;
        while (k > 0) {
            v += k * 2;
            k -= 3;
        }
    } else {
        int k = 0;
        do {
            v -= k;
            k += 2;
        } while (k < n);
    }
    s[t] = v;
    __syncthreads();
    out[t] = s[t] + s[15 - t];
}
