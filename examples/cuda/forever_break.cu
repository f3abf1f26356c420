// Corpus kernel: for (;;) and while (true) loops left only by break, nested, with per-lane exits.
__global__ void forever_break(int *out, int *a) {
    int i = threadIdx.x;
    int x = a[i];
    int n = 0;
    for (;;) {
        if (x <= 1) {
            break;
        }
        while (true) {
            x -= 7;
            n++;
            if (x % 3 == 0 || x < 10) {
                break;
            }
        }
        x /= 2;
    }
    out[i] = n * 1000 + x;
}
