// Corpus kernel: a 2-D block (8x4) sums its rows in a shared 2-D array: a tree reduction along x for every y at once.
__global__ void shared_2d_reduce_rows(int *sums, int *a) {
    __shared__ int s[4][8];
    int x = threadIdx.x;
    int y = threadIdx.y;
    int row = blockIdx.y * 4 + y;
    s[y][x] = a[row * 8 + x];
    __syncthreads();
    for (int stride = 4; stride > 0; stride /= 2) {
        if (x < stride) {
            s[y][x] += s[y][x + stride];
        }
        __syncthreads();
    }
    if (x == 0) {
        sums[row] = s[y][0];
    }
}
