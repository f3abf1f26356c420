// Corpus kernel: signed (arithmetic) and unsigned (logical) right shifts and left shifts by 0 to 31, on negative values too.
__global__ void shifts(unsigned *out, int *a, int *s) {
    int i = threadIdx.x;
    int x = a[i];
    int k = s[i];
    unsigned u = (unsigned)x;
    out[i * 4 + 0] = (unsigned)(x >> k);
    out[i * 4 + 1] = u >> k;
    out[i * 4 + 2] = u << k;
    out[i * 4 + 3] = (u << (31 - k)) >> 3;
}
