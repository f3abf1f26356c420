// Corpus kernel: `unsigned int` spelled out in parameters, locals and casts, with hex literals and u suffixes.
__global__ void unsigned_int_spelled(unsigned int *out, const unsigned int *a, unsigned int mask) {
    int i = threadIdx.x;
    unsigned int x = a[i] & mask;
    unsigned int y = (unsigned int)i * 0x01010101u;
    out[i] = (x ^ y) + 0xFFu;
}
