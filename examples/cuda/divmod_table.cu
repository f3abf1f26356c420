// Division and remainder by the machine's rules: C truncation, x / 0 = -1 (all ones), x % 0 = x,
// INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0; signed and unsigned; by constants too.
__global__ void divmod_table(int *q, int *r, unsigned *uq, unsigned *ur, int *k, const int *x, const int *y) {
    int i = threadIdx.x;
    int a = x[i];
    int b = y[i];
    q[i] = a / b;
    r[i] = a % b;
    uq[i] = (unsigned)a / (unsigned)b;
    ur[i] = (unsigned)a % (unsigned)b;
    k[3 * i] = a / 8;
    k[3 * i + 1] = a % -8;
    k[3 * i + 2] = a / 10;
}
