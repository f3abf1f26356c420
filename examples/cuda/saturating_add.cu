// Corpus kernel: saturating signed addition computed without overflow (checks before adding).
__device__ int sat_add(int x, int y) {
    if (y > 0 && x > 2147483647 - y) {
        return 2147483647;
    }
    if (y < 0 && x < -2147483647 - 1 - y) {
        return -2147483647 - 1;
    }
    return x + y;
}

__global__ void saturating_add(int *out, int *a, int *b) {
    int i = threadIdx.x;
    out[i] = sat_add(a[i], b[i]);
}
