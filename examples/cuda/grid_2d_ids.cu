// Corpus kernel: every thread of a 2x3 grid of 4x2 blocks writes its block and thread indices and the grid and block sizes.
__global__ void grid_2d_ids(int *ids, int *dims) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int width = gridDim.x * blockDim.x;
    ids[y * width + x] = blockIdx.y * 1000 + blockIdx.x * 100 + threadIdx.y * 10 + threadIdx.x;
    if (x == 0 && y == 0) {
        dims[0] = gridDim.x;
        dims[1] = gridDim.y;
        dims[2] = blockDim.x;
        dims[3] = blockDim.y;
    }
}
