// Corpus kernel: min, max and abs of mixed-sign values (never abs(INT_MIN)).
__global__ void min_max_abs(int *out, int *a, int *b) {
    int i = threadIdx.x;
    int x = a[i];
    int y = b[i];
    out[i * 4 + 0] = min(x, y);
    out[i * 4 + 1] = max(x, y);
    out[i * 4 + 2] = abs(x);
    out[i * 4 + 3] = max(min(x, 500), -500) + abs(min(x, 0) / 2);
}
