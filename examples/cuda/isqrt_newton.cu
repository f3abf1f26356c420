// Corpus kernel: integer square roots by Newton's iteration on unsigned values (a per-lane while loop).
__device__ unsigned isqrt(unsigned n) {
    if (n < 2) {
        return n;
    }
    unsigned x = n / 2 + 1;
    unsigned y = (x + n / x) / 2;
    while (y < x) {
        x = y;
        y = (x + n / x) / 2;
    }
    return x;
}

__global__ void isqrt_newton(unsigned *out, unsigned *a) {
    int i = threadIdx.x;
    out[i] = isqrt(a[i]);
}
