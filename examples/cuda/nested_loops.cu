// Corpus kernel: nested loops with a break from the inner loop and a continue of the outer one, per-lane bounds.
__global__ void nested_loops(int *out, int *lim) {
    int t = threadIdx.x;
    int n = lim[t];
    int acc = 0;
    for (int i = 0; i < n; i++) {
        if (i == t % 4) {
            continue;
        }
        int j = 0;
        while (true) {
            if (j * i > n) {
                break;
            }
            acc += i * 10 + j;
            j++;
            if (j > 5) {
                break;
            }
        }
    }
    out[t] = acc;
}
