// Corpus kernel: the non-negative (Euclidean) remainder ((x % m) + m) % m next to C's remainder.
__global__ void euclid_modulo(int *c_rem, int *e_rem, int *a, int *m) {
    int i = threadIdx.x;
    int x = a[i];
    int d = m[i];
    c_rem[i] = x % d;
    e_rem[i] = ((x % d) + d) % d;
}
