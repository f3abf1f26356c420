// Corpus kernel: do-while digit sums in base 10 of signed values (C remainder: negative digits for negative values).
__global__ void digit_sum_do_while(int *out, int *digits, int *a) {
    int i = threadIdx.x;
    int x = a[i];
    int s = 0;
    int n = 0;
    do {
        s += x % 10;
        x /= 10;
        n++;
    } while (x != 0);
    out[i] = s;
    digits[i] = n;
}
