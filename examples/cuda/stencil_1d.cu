// Corpus kernel: a radius-2 weighted stencil with a shared halo, four blocks of 8 over 30 elements (zeros past the ends).
__global__ void stencil_1d(int *out, int *a, int n) {
    __shared__ int s[12];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t + 2] = i < n ? a[i] : 0;
    if (t < 2) {
        int left = i - 2;
        s[t] = left >= 0 ? a[left] : 0;
        int right = i + 8;
        s[t + 10] = right < n ? a[right] : 0;
    }
    __syncthreads();
    if (i < n) {
        out[i] = s[t] - 2 * s[t + 1] + 5 * s[t + 2] - 2 * s[t + 3] + s[t + 4];
    }
}
