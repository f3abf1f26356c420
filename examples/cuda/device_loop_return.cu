// Corpus kernel: a __device__ function returning from inside a loop: the lowest set bit's index (-1 for 0).
__device__ int lowest_bit(unsigned x) {
    for (int b = 0; b < 32; b++) {
        if ((x >> b) & 1u) {
            return b;
        }
    }
    return -1;
}

__global__ void device_loop_return(int *out, unsigned *a) {
    int i = threadIdx.x;
    out[i] = lowest_bit(a[i]);
}
