// Corpus kernel: a __device__ function with several early returns, called once per element.
__device__ int classify(int x) {
    if (x < 0) {
        return -1;
    }
    if (x == 0) {
        return 0;
    }
    if (x < 10) {
        return 1;
    }
    if (x <= 100) {
        return 2;
    }
    return 3;
}

__global__ void device_classify(int *out, int *a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = classify(a[i]) * 10 + classify(a[i] - 5);
}
