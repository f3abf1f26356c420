// Corpus kernel: several __device__ helpers calling each other (no recursion), called more than once per thread.
__device__ int clamp_to(int x, int lo, int hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}

__device__ int sq(int x) {
    return x * x;
}

__device__ int dist2(int x0, int y0, int x1, int y1) {
    return sq(x1 - x0) + sq(y1 - y0);
}

__device__ int count_multiples(int n, int d) {
    int c = 0;
    for (int k = 1; k <= n; k++) {
        if (k % d == 0) {
            c++;
        }
    }
    return c;
}

__global__ void device_helpers(int *out, int *a, int *b) {
    int i = threadIdx.x;
    int x = clamp_to(a[i], -100, 100);
    int d = dist2(x, b[i], -x, i);
    out[i] = d + count_multiples(b[i], 3) * 1000 + count_multiples(b[i], 7) * 100000 + clamp_to(d, 0, 99);
}
