// Corpus kernel: division and remainder by constants (3, -7, 16, -16, 1) of negative and positive values: no shift shortcuts for negatives.
__global__ void div_by_constants(int *out, int *a) {
    int i = threadIdx.x;
    int x = a[i];
    out[i * 6 + 0] = x / 3;
    out[i * 6 + 1] = x / -7;
    out[i * 6 + 2] = x / 16;
    out[i * 6 + 3] = x % 16;
    out[i * 6 + 4] = x % -16;
    out[i * 6 + 5] = x / 1 + x % 5;
}
