// Corpus kernel: atomicAdd old values used only order-independently: every ticket 0..n-1 is taken once, and the tickets' sum is n(n-1)/2.
__global__ void atomic_ticket(int *counter, int *taken, int *ticket_sum, int *max_seen) {
    int old = atomicAdd(&counter[0], 1);
    atomicAdd(&taken[old], 1);
    atomicAdd(&ticket_sum[0], old);
    if (old == 31) {
        max_seen[0] = 1;
    }
}
