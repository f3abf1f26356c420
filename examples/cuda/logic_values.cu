// Corpus kernel: &&, || and ! used as values (0 or 1) in arithmetic, and ~ on signed and unsigned.
__global__ void logic_values(int *out, int *a, int *b) {
    int i = threadIdx.x;
    int x = a[i];
    int y = b[i];
    int v = (x && y) + 2 * (x || y) + 4 * !x + 8 * (!x == !y);
    v += 16 * (x > 0 && y < 0 || x < 0 && y > 0);
    v += ~x * 100;
    v += (int)(~(unsigned)y >> 28) * 10000;
    out[i] = v;
}
