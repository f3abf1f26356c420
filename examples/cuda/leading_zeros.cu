// Corpus kernel: count leading zeros by a loop from the top bit that breaks at the first 1.
__global__ void leading_zeros(int *out, unsigned *a) {
    int i = threadIdx.x;
    unsigned x = a[i];
    int n = 0;
    for (int b = 31; b >= 0; b--) {
        if ((x >> b) & 1u) {
            break;
        }
        n++;
    }
    out[i] = n;
}
