// Corpus kernel: pre- and post-increment and decrement, their values and their effects.
__global__ void incdec(int *out, int *a) {
    int i = threadIdx.x;
    int x = a[i];
    int p = x++;
    int q = ++x;
    int r = x--;
    int s = --x;
    --x;
    x++;
    out[i * 5 + 0] = p;
    out[i * 5 + 1] = q;
    out[i * 5 + 2] = r;
    out[i * 5 + 3] = s;
    out[i * 5 + 4] = x;
}
