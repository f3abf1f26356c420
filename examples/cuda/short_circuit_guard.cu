// Corpus kernel: && and || guard array reads past the end: threads beyond n must never read a[i] (a has exactly n words).
__global__ void short_circuit_guard(int *out, int *a, int n) {
    int i = threadIdx.x;
    int v = 0;
    if (i < n && a[i] > 0) {
        v += 1;
    }
    if (i >= n || a[i] == 0) {
        v += 10;
    }
    if (!(i >= n) && (a[i] < 0 || a[n - 1 - i] < 0)) {
        v += 100;
    }
    v += i < n ? a[i] * 1000 : -1000;
    out[i] = v;
}
