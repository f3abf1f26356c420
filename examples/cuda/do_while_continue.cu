// Corpus kernel: continue inside do-while jumps to the condition; a per-lane trip count and a skipped body half the time.
__global__ void do_while_continue(int *out, int *trips, int *a) {
    int i = threadIdx.x;
    int n = a[i];
    int k = 0;
    int s = 0;
    do {
        k++;
        if (k % 2 == 0) {
            continue;
        }
        s += k * i;
    } while (k < n);
    out[i] = s;
    trips[i] = k;
}
