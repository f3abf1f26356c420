// Corpus kernel: per-thread work over a 2-D block (8x4): each thread combines its row and column neighbours in shared memory.
__global__ void local_arrays_free_rowwise(int *out, int *a) {
    __shared__ int s[4][8];
    int x = threadIdx.x;
    int y = threadIdx.y;
    s[y][x] = a[y * 8 + x];
    __syncthreads();
    int left = x > 0 ? s[y][x - 1] : 0;
    int right = x < 7 ? s[y][x + 1] : 0;
    int up = y > 0 ? s[y - 1][x] : 0;
    int down = y < 3 ? s[y + 1][x] : 0;
    out[y * 8 + x] = left + right - up * down + s[y][x];
}
