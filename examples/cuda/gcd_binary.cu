// Corpus kernel: Stein's binary gcd on unsigned values: shifts, subtraction, nested loops.
__device__ unsigned binary_gcd(unsigned u, unsigned v) {
    if (u == 0) {
        return v;
    }
    if (v == 0) {
        return u;
    }
    int shift = 0;
    while (((u | v) & 1u) == 0) {
        u >>= 1;
        v >>= 1;
        shift++;
    }
    while ((u & 1u) == 0) {
        u >>= 1;
    }
    do {
        while ((v & 1u) == 0) {
            v >>= 1;
        }
        if (u > v) {
            unsigned t = v;
            v = u;
            u = t;
        }
        v = v - u;
    } while (v != 0);
    return u << shift;
}

__global__ void gcd_binary(unsigned *out, unsigned *a, unsigned *b) {
    int i = threadIdx.x;
    out[i] = binary_gcd(a[i], b[i]);
}
