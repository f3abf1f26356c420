// Corpus kernel: each thread scans its row: continue over negatives, break at the sentinel 0, keep the running maximum.
__global__ void running_max(int *out, int *seen, int *rows) {
    int r = threadIdx.x;
    int best = -1;
    int count = 0;
    for (int j = 0; j < 10; j++) {
        int v = rows[r * 10 + j];
        if (v < 0) {
            continue;
        }
        if (v == 0) {
            break;
        }
        count++;
        best = max(best, v);
    }
    out[r] = best;
    seen[r] = count;
}
