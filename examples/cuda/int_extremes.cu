// Corpus kernel: wrap-around arithmetic at the int extremes done in unsigned (C leaves signed overflow undefined).
__global__ void int_extremes(int *out, int *a) {
    int i = threadIdx.x;
    unsigned u = (unsigned)a[i];
    out[i * 4 + 0] = (int)(u + 1u);
    out[i * 4 + 1] = (int)(u - 1u);
    out[i * 4 + 2] = (int)(u * 2u);
    out[i * 4 + 3] = (int)(0u - u);
}
