// Puzzle 1 (Map): one thread per element, out[i] = a[i] + 10.
__global__ void map(int *out, int *a) {
    int i = threadIdx.x;
    out[i] = a[i] + 10;
}
