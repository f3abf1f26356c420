// Corpus kernel: every compound assignment (+= -= *= /= %= <<= >>= &= |= ^=) in a sequence.
__global__ void compound_assign(int *out, int *a) {
    int i = threadIdx.x;
    int x = a[i];
    x += 17;
    x -= i * 3;
    x *= -5;
    x /= 7;
    x %= 1000;
    x ^= 0x5A5A;
    x |= 3;
    x &= ~16;
    x >>= 2;
    unsigned u = (unsigned)x;
    u <<= 3;
    u += 1u;
    out[i] = (int)u;
}
