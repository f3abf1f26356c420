// Corpus kernel: block-wide any/all/count votes through shared atomics, between barriers.
__global__ void block_vote(int *votes, int *a, int limit) {
    __shared__ int v[3];
    int t = threadIdx.x;
    if (t < 3) {
        v[t] = 0;
    }
    __syncthreads();
    bool p = a[blockIdx.x * 16 + t] > limit;
    if (p) {
        atomicAdd(&v[0], 1);
    }
    if (!p) {
        atomicAdd(&v[1], 1);
    }
    atomicAdd(&v[2], p ? 2 : -1);
    __syncthreads();
    if (t == 0) {
        votes[blockIdx.x * 3 + 0] = v[0] > 0;
        votes[blockIdx.x * 3 + 1] = v[1] == 0;
        votes[blockIdx.x * 3 + 2] = v[0] * 100 + v[2];
    }
}
