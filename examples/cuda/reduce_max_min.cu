// Corpus kernel: block maximum and minimum of negative and positive values by two interleaved tree reductions.
__global__ void reduce_max_min(int *out, int *a) {
    __shared__ int hi[16];
    __shared__ int lo[16];
    int t = threadIdx.x;
    hi[t] = a[t];
    lo[t] = a[t];
    __syncthreads();
    for (int stride = 8; stride >= 1; stride /= 2) {
        if (t < stride) {
            hi[t] = max(hi[t], hi[t + stride]);
            lo[t] = min(lo[t], lo[t + stride]);
        }
        __syncthreads();
    }
    if (t == 0) {
        out[0] = hi[0];
        out[1] = lo[0];
    }
}
