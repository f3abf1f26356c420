// Corpus kernel: C division and remainder (truncation toward zero) on every sign combination and near the extremes (never INT_MIN / -1, never / 0).
__global__ void div_rem_signed(int *q, int *r, int *a, int *b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = a[i];
    int y = b[i];
    q[i] = x / y;
    r[i] = x % y;
}
