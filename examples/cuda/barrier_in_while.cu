// Corpus kernel: a while loop with a uniform trip count holding two barriers, and divergent work between them (8x4 block).
__global__ void barrier_in_while(int *out, int *a, int rounds) {
    __shared__ int s[4][8];
    int x = threadIdx.x;
    int y = threadIdx.y;
    s[y][x] = a[y * 8 + x];
    __syncthreads();
    int r = 0;
    while (r < rounds) {
        int v = s[(y + 1) % 4][x];
        if ((x + r) % 3 == 0) {
            v = -v + s[y][(x + 7) % 8];
        }
        __syncthreads();
        s[y][x] = v + r;
        __syncthreads();
        r++;
    }
    out[y * 8 + x] = s[y][x];
}
