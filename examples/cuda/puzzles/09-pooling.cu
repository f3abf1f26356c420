// Puzzle 9 (Pooling): out[i] = a[i-2] + a[i-1] + a[i], the window clipped at the start, read from shared memory.
__global__ void pooling(int *out, int *a, int size) {
    __shared__ int cache[8];
    int i = threadIdx.x;
    if (i < size) {
        cache[i] = a[i];
    }
    __syncthreads();
    if (i < size) {
        int s = cache[i];
        if (i >= 1) {
            s += cache[i - 1];
        }
        if (i >= 2) {
            s += cache[i - 2];
        }
        out[i] = s;
    }
}
