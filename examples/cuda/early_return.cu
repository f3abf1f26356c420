// Corpus kernel: early returns: past n, and for negative inputs after writing a marker.
__global__ void early_return(int *out, int *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    if (a[i] < 0) {
        out[i] = -1;
        return;
    }
    int v = a[i] * 2;
    if (v > 60) {
        out[i] = 60;
        return;
    }
    out[i] = v + 1;
}
