// Corpus kernel: primality by trial division in a __device__ function with early returns in and after the loop.
__device__ bool is_prime(int n) {
    if (n < 2) {
        return false;
    }
    if (n % 2 == 0) {
        return n == 2;
    }
    for (int d = 3; d * d <= n; d += 2) {
        if (n % d == 0) {
            return false;
        }
    }
    return true;
}

__global__ void primes_trial(int *out, int *a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = is_prime(a[i]) ? 1 : 0;
}
