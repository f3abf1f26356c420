// Puzzle 11 (1D Conv, simple): out[i] = sum_j a[i + j] * b[j] over i + j < a_size; one block of 8 threads,
// a and b staged in shared memory (8 + 4 words: the block's slice and the window's overhang).
__global__ void conv_simple(int *out, int *a, int *b, int a_size, int b_size) {
    __shared__ int sa[12];
    __shared__ int sb[4];
    int i = threadIdx.x;
    sa[i] = 0;
    if (i < a_size) {
        sa[i] = a[i];
    }
    if (i < 4) {
        sa[8 + i] = 0;
        sb[i] = 0;
        if (i < b_size) {
            sb[i] = b[i];
        }
    }
    __syncthreads();
    if (i < a_size) {
        int acc = 0;
        for (int j = 0; j < b_size; j++) {
            acc += sa[i + j] * sb[j];
        }
        out[i] = acc;
    }
}
