// Corpus kernel: four phases of shared-memory updates between barriers, each reading neighbours written in the previous phase by other warps.
__global__ void barrier_phases(int *out, int *a) {
    __shared__ int s[24];
    __shared__ int u[24];
    int t = threadIdx.x;
    s[t] = a[t];
    __syncthreads();
    u[t] = s[(t + 1) % 24] - s[(t + 23) % 24];
    __syncthreads();
    s[t] = u[t] * 2 + u[23 - t];
    __syncthreads();
    u[t] = max(s[t], s[(t + 12) % 24]);
    __syncthreads();
    out[t] = u[t] + s[t];
}
