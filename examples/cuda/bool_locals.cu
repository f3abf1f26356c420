// Corpus kernel: bool locals from comparisons combined with !, &&, ||, ==, and converted to int.
__global__ void bool_locals(int *out, int *a) {
    int i = threadIdx.x;
    int x = a[i];
    bool pos = x > 0;
    bool even = (x & 1) == 0;
    bool small = x > -5 && x < 5;
    bool pick = (pos && !even) || (small && even);
    bool same = pos == even;
    int v = pick;
    v = v * 2 + same;
    v = v * 2 + (small ? 1 : 0);
    v = v * 2 + !pos;
    out[i] = v;
}
