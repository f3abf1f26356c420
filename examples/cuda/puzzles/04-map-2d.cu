// Puzzle 4 (Map 2D): a 3x3 block over a 2x2 array (row threadIdx.x, column threadIdx.y), both guarded.
__global__ void map_2d(int *out, int *a, int size) {
    int i = threadIdx.x;
    int j = threadIdx.y;
    if (i < size && j < size) {
        out[i * size + j] = a[i * size + j] + 10;
    }
}
