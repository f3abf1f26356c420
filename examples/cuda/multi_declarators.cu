// Corpus kernel: several declarators in one declaration (int a = 1, b, c = a + 2;) and in a for-loop's init.
__global__ void multi_declarators(int *out, int *a) {
    int i = threadIdx.x, x = a[i], y, z = x * 2;
    y = z - i;
    int s = 0;
    for (int j = 0, k = 10; j < k; j++, k--) {
        s += j * k + y;
    }
    out[i] = s + x;
}
