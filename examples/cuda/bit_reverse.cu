// Corpus kernel: reverse the 32 bits of each word with a loop of shifts and masks.
__global__ void bit_reverse(unsigned *out, unsigned *a) {
    int i = threadIdx.x;
    unsigned x = a[i];
    unsigned r = 0;
    for (int b = 0; b < 32; b++) {
        r = (r << 1) | (x & 1u);
        x >>= 1;
    }
    out[i] = r;
}
