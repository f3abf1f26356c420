// Corpus kernel: unsigned division and remainder with operands past 2^31.
__global__ void div_rem_unsigned(unsigned *q, unsigned *r, unsigned *a, unsigned *b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    q[i] = a[i] / b[i];
    r[i] = a[i] % b[i];
}
