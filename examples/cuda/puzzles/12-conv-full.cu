// Puzzle 12 (1D Conv, full): the window crosses the block boundary, so each block stages its 8 elements and
// the next 4 (zeros past a_size) in shared memory.
__global__ void conv_full(int *out, int *a, int *b, int a_size, int b_size) {
    __shared__ int sa[12];
    __shared__ int sb[4];
    int local_i = threadIdx.x;
    int i = blockIdx.x * blockDim.x + local_i;
    int v = 0;
    if (i < a_size) {
        v = a[i];
    }
    sa[local_i] = v;
    if (local_i < 4) {
        int k = i + 8;
        int w = 0;
        if (k < a_size) {
            w = a[k];
        }
        sa[8 + local_i] = w;
        sb[local_i] = local_i < b_size ? b[local_i] : 0;
    }
    __syncthreads();
    if (i < a_size) {
        int acc = 0;
        for (int j = 0; j < b_size; j++) {
            acc += sa[local_i + j] * sb[j];
        }
        out[i] = acc;
    }
}
