// Corpus kernel: sign extension of the low byte and half-word by a left shift (unsigned) and an arithmetic right shift.
__global__ void sign_extend(int *b8, int *b16, unsigned *a) {
    int i = threadIdx.x;
    unsigned u = a[i];
    b8[i] = (int)(u << 24) >> 24;
    b16[i] = (int)(u << 16) >> 16;
}
