// Corpus kernel: a 5-point stencil on a 10x10 grid by a 3x3 grid of 4x4 blocks; border cells copied, others averaged (signed division).
__global__ void stencil_2d(int *out, int *a, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) {
        return;
    }
    int c = a[y * w + x];
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
        out[y * w + x] = c;
    } else {
        int s = a[(y - 1) * w + x] + a[(y + 1) * w + x] + a[y * w + x - 1] + a[y * w + x + 1];
        out[y * w + x] = (4 * c + s) / 8;
    }
}
