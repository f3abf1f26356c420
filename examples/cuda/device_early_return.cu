// Device functions that return early (from inside loops and branches), inlined with a counter level of
// their own: the first index of a value in a row, and a clamped Collatz step count.
#define ROW 8

__device__ int find(const int *rows, int row, int v) {
    for (int c = 0; c < ROW; c++) {
        if (rows[row * ROW + c] == v) return c;
    }
    return -1;
}

__device__ int collatz(int x, int limit) {
    int s = 0;
    while (x != 1) {
        if (s == limit) return -s;
        x = (x & 1) ? 3 * x + 1 : x >> 1;
        s++;
    }
    return s;
}

__global__ void device_early_return(int *pos, int *steps, const int *rows, int target) {
    int t = threadIdx.x;
    pos[t] = find(rows, t, target);
    steps[t] = collatz(t + 3, 12);
}
