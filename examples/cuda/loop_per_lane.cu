// Corpus kernel: a loop whose trip count is the lane's input (0 to 15): lanes leave the loop at different times.
__global__ void loop_per_lane(int *out, int *count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int s = 0;
    for (int k = 0; k < count[i]; k++) {
        s += k * k + 1;
    }
    out[i] = s;
}
