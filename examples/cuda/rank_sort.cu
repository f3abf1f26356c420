// Corpus kernel: rank (counting) sort: each thread counts the elements smaller than its own (ties broken by index) and scatters.
__global__ void rank_sort(int *out, int *a) {
    int t = threadIdx.x;
    int x = a[t];
    int rank = 0;
    for (int j = 0; j < 24; j++) {
        int y = a[j];
        if (y < x || (y == x && j < t)) {
            rank++;
        }
    }
    out[rank] = x;
}
