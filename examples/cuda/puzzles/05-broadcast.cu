// Puzzle 5 (Broadcast): out[i][j] = a[i][0] + b[0][j] (a is a column, b a row).
__global__ void broadcast(int *out, int *a, int *b, int size) {
    int i = threadIdx.x;
    int j = threadIdx.y;
    if (i < size && j < size) {
        out[i * size + j] = a[i] + b[j];
    }
}
