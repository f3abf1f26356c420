// Corpus kernel: an else-if chain of eight cases (a switch written with if).
__global__ void else_if_chain(int *out, int *a) {
    int i = threadIdx.x;
    int x = a[i];
    int r;
    if (x == 0) {
        r = 11;
    } else if (x == 1) {
        r = 22;
    } else if (x == 2) {
        r = x * 100;
    } else if (x == 3 || x == 4) {
        r = -x;
    } else if (x < 0) {
        r = x * x * x;
    } else if (x > 10) {
        r = x % 4;
    } else if (x % 2 == 0) {
        r = 1000 + x;
    } else {
        r = 7;
    }
    out[i] = r;
}
