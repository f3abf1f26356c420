// Corpus kernel: loops counting down with unsigned counters (k > 0 and k-- != 0 forms).
__global__ void unsigned_countdown(unsigned *out, unsigned *n) {
    int i = threadIdx.x;
    unsigned s = 0;
    for (unsigned k = n[i]; k > 0; k--) {
        s += k * k;
    }
    unsigned m = n[i];
    while (m-- != 0) {
        s += 1000;
    }
    out[i] = s + m;
}
