// Corpus kernel: nested ?: choosing among computed values, with min, max and abs inside.
__global__ void ternary_chain(int *out, int *a, int *b) {
    int i = threadIdx.x;
    int x = a[i];
    int y = b[i];
    int v = x > y ? (x > 0 ? x - y : abs(x) + y) : (y > 10 ? min(x, y) * 3 : max(x, -y));
    out[i] = v == 0 ? -99 : v;
}
