// Corpus kernel: a triangular double loop (inner bound is the outer index) with per-lane outer bounds.
__global__ void triangle_loops(int *out, int *n) {
    int t = threadIdx.x;
    int s = 0;
    for (int i = 0; i < n[t]; i++) {
        for (int j = 0; j <= i; j++) {
            s += (i ^ j) + t;
        }
    }
    out[t] = s;
}
