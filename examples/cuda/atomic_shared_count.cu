// Corpus kernel: per-block counts of matching elements with a shared atomic counter whose old values mark slots.
__global__ void atomic_shared_count(int *counts, int *slots, int *a, int threshold) {
    __shared__ int count[1];
    int t = threadIdx.x;
    if (t == 0) {
        count[0] = 0;
    }
    __syncthreads();
    if (a[blockIdx.x * 16 + t] > threshold) {
        int old = atomicAdd(&count[0], 1);
        slots[blockIdx.x * 16 + old] = 1;
    }
    __syncthreads();
    if (t == 0) {
        counts[blockIdx.x] = count[0];
    }
}
