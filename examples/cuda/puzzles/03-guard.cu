// Puzzle 3 (Guard): more threads than elements; threads past size do nothing.
__global__ void guard(int *out, int *a, int size) {
    int i = threadIdx.x;
    if (i < size) {
        out[i] = a[i] + 10;
    }
}
