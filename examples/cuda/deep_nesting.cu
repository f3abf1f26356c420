// Corpus kernel: five nested levels selected by the thread's index bits, with work at every level.
__global__ void deep_nesting(int *out) {
    int t = threadIdx.x;
    int v = 0;
    if (t & 1) {
        v += 1;
        if (t & 2) {
            v += 10;
            if (t & 4) {
                v += 100;
                if (t & 8) {
                    v += 1000;
                    if (t & 16) {
                        v += 10000;
                    } else {
                        v -= 10000;
                    }
                } else {
                    v -= 1000;
                }
            } else {
                v -= 100;
            }
        } else {
            v -= 10;
            if (t & 16) {
                v *= 3;
            }
        }
    } else {
        v -= 1;
        if ((t & 6) == 6) {
            v = v * 7 + t;
        }
    }
    out[t] = v;
}
