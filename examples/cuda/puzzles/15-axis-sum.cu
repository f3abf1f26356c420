// Puzzle 15 (Axis Sum): blockIdx.y selects the row; each block sums its row of `size` elements.
__global__ void axis_sum(int *out, int *a, int size) {
    __shared__ int cache[8];
    int local_i = threadIdx.x;
    int row = blockIdx.y;
    cache[local_i] = 0;
    if (local_i < size) {
        cache[local_i] = a[row * size + local_i];
    }
    __syncthreads();
    for (int stride = 4; stride > 0; stride = stride / 2) {
        if (local_i < stride) {
            cache[local_i] += cache[local_i + stride];
        }
        __syncthreads();
    }
    if (local_i == 0) {
        out[row] = cache[0];
    }
}
