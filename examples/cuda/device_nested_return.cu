// Corpus kernel: a __device__ function returning from inside two nested loops (the first pair summing to the target).
__device__ int pair_code(int a0, int a1, int a2, int a3, int a4, int a5, int target) {
    for (int p = 0; p < 6; p++) {
        int x = p == 0 ? a0 : p == 1 ? a1 : p == 2 ? a2 : p == 3 ? a3 : p == 4 ? a4 : a5;
        for (int q = p + 1; q < 6; q++) {
            int y = q == 1 ? a1 : q == 2 ? a2 : q == 3 ? a3 : q == 4 ? a4 : a5;
            if (x + y == target) {
                return p * 10 + q;
            }
        }
    }
    return -1;
}

__global__ void device_nested_return(int *out, int *rows, int target) {
    int r = threadIdx.x * 6;
    out[threadIdx.x] = pair_code(rows[r], rows[r + 1], rows[r + 2], rows[r + 3], rows[r + 4], rows[r + 5], target);
}
