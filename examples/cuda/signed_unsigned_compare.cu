// Corpus kernel: the same bits compared as int and as unsigned, and an int compared with an unsigned parameter (converted to unsigned).
__global__ void signed_unsigned_compare(int *out, int *a, int *b, unsigned n) {
    int i = threadIdx.x;
    int x = a[i];
    int y = b[i];
    unsigned ux = x;
    unsigned uy = y;
    int bits = 0;
    if (x < y) bits |= 1;
    if (ux < uy) bits |= 2;
    if (x <= y) bits |= 4;
    if (ux >= uy) bits |= 8;
    if (x < n) bits |= 16;
    if (ux > 5u) bits |= 32;
    if ((x ^ y) < 0) bits |= 64;
    if (x == y) bits |= 128;
    if (x != y) bits |= 256;
    out[i] = bits;
}
