// Corpus kernel: each thread sums a[0..i] itself (trip counts 1 to 24 per lane).
__global__ void prefix_sum_naive(int *out, int *a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int s = 0;
    for (int j = 0; j <= i; j++) {
        s += a[j];
    }
    out[i] = s;
}
