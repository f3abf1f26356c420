// Corpus kernel: modular exponentiation by squaring (moduli below 2^16, so products fit 32 bits).
__global__ void power_mod(unsigned *out, unsigned *base, unsigned *exp, unsigned *mod) {
    int i = threadIdx.x;
    unsigned m = mod[i];
    unsigned b = base[i] % m;
    unsigned e = exp[i];
    unsigned r = 1 % m;
    while (e > 0) {
        if (e & 1u) {
            r = r * b % m;
        }
        b = b * b % m;
        e >>= 1;
    }
    out[i] = r;
}
