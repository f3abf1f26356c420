// Corpus kernel: three levels of if/else on the value's residues: every lane takes its own path.
__global__ void nested_divergence(int *out, int *a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = a[i];
    int r;
    if (x % 2 == 0) {
        if (x % 3 == 0) {
            if (x < 0) {
                r = 1;
            } else {
                r = 2;
            }
        } else {
            r = 3 + x / 4;
        }
    } else {
        if (x > 10) {
            if (x % 5 == 1) {
                r = 100;
            } else {
                r = 200 + x;
            }
        } else if (x < -10) {
            r = -x;
        } else {
            r = x * x;
        }
    }
    out[i] = r;
}
