// Corpus kernel: __mulhi and __umulhi (the high words of 64-bit products) next to the low words.
__global__ void mulhi(int *hi, unsigned *uhi, unsigned *lo, int *a, int *b) {
    int i = threadIdx.x;
    hi[i] = __mulhi(a[i], b[i]);
    uhi[i] = __umulhi((unsigned)a[i], (unsigned)b[i]);
    lo[i] = (unsigned)a[i] * (unsigned)b[i];
}
