// Corpus kernel: a loop with continue (multiples of 3) and a per-lane break (the running sum passes the lane's limit).
__global__ void break_continue(int *out, int *iters, int *limit) {
    int i = threadIdx.x;
    int acc = 0;
    int j;
    for (j = 0; j < 32; j++) {
        if (j % 3 == 0) {
            continue;
        }
        if (acc > limit[i]) {
            break;
        }
        acc += j + i;
    }
    out[i] = acc;
    iters[i] = j;
}
