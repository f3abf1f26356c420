// Puzzle 2 (Zip): out[i] = a[i] + b[i].
__global__ void zip(int *out, int *a, int *b) {
    int i = threadIdx.x;
    out[i] = a[i] + b[i];
}
