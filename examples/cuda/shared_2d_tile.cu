// Corpus kernel: a 2-D shared tile with a one-cell halo: each 4x4 block sums its 3x3 neighbourhoods (zeros outside the 8x8 grid).
__global__ void shared_2d_tile(int *out, int *a) {
    __shared__ int tile[6][6];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int x0 = blockIdx.x * 4 - 1;
    int y0 = blockIdx.y * 4 - 1;
    int flat = ty * 4 + tx;
    for (int k = flat; k < 36; k += 16) {
        int ly = k / 6;
        int lx = k % 6;
        int gx = x0 + lx;
        int gy = y0 + ly;
        int v = 0;
        if (gx >= 0 && gx < 8 && gy >= 0 && gy < 8) {
            v = a[gy * 8 + gx];
        }
        tile[ly][lx] = v;
    }
    __syncthreads();
    int s = 0;
    for (int dy = 0; dy < 3; dy++) {
        for (int dx = 0; dx < 3; dx++) {
            s += tile[ty + dy][tx + dx];
        }
    }
    out[(blockIdx.y * 4 + ty) * 8 + blockIdx.x * 4 + tx] = s;
}
