// Puzzle 8 (Shared): each block stages its slice in shared memory, meets at the barrier, then writes.
__global__ void shared(int *out, int *a, int size) {
    __shared__ int cache[4];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int local_i = threadIdx.x;
    if (i < size) {
        cache[local_i] = a[i];
    }
    __syncthreads();
    if (i < size) {
        out[i] = cache[local_i] + 10;
    }
}
