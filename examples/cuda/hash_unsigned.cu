// Corpus kernel: a multiplicative hash mixed with xor-shifts on unsigned values (wrap-around products).
__device__ unsigned mix(unsigned h) {
    h ^= h >> 16;
    h *= 2246822507u;
    h ^= h >> 13;
    h *= 3266489909u;
    h ^= h >> 16;
    return h;
}

__global__ void hash_unsigned(unsigned *out, unsigned *seed) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned h = seed[i];
    for (int r = 0; r < 4; r++) {
        h = mix(h + (unsigned)r * 2654435761u);
    }
    out[i] = h;
}
