// Corpus kernel: bool parameters (true/false in the launch) steering the computation.
__global__ void bool_params(int *out, int *a, bool negate, bool clamp_it, int offset) {
    int i = threadIdx.x;
    int v = a[i] + offset;
    if (negate) {
        v = -v;
    }
    if (clamp_it) {
        v = min(max(v, -10), 10);
    }
    if (negate && !clamp_it) {
        v += 1000;
    }
    out[i] = v;
}
