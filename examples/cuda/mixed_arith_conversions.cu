// Corpus kernel: int and unsigned mixed in one expression: the int operand converts to unsigned (division, shift, compare).
__global__ void mixed_arith_conversions(unsigned *out, int *a, unsigned d) {
    int i = threadIdx.x;
    int x = a[i];
    out[i * 3 + 0] = x / d;
    out[i * 3 + 1] = (x + 0u) >> 4;
    out[i * 3 + 2] = x < d ? 1u : 2u;
}
