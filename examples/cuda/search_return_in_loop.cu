// Corpus kernel: each thread searches its row of 8 for a key and returns from inside the loop when found.
__global__ void search_return_in_loop(int *out, int *rows, int key) {
    int r = threadIdx.x;
    for (int j = 0; j < 8; j++) {
        if (rows[r * 8 + j] == key) {
            out[r] = j;
            return;
        }
    }
    out[r] = -1;
}
