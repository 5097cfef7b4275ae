// Debugging aids: device printf from a few threads, and assert on a kernel's input contract.
#include <cstdio>
#include <cassert>

// Prints one line per block (thread 0) and the block's first value.
extern "C" __global__ void print_blocks(const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0 && i < n)
        printf("block %d of %d: x[%d] = %.2f\n", blockIdx.x, gridDim.x, i, x[i]);
}

// y[i] = sqrt(x[i]); the input must be non-negative (checked when NDEBUG is not defined).
extern "C" __global__ void checked_sqrt(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    assert(x[i] >= 0.0f && "checked_sqrt: negative input");
    y[i] = sqrtf(x[i]);
}

// A warp-level summary: lane 0 of each warp prints how many of its lanes saw a negative value.
extern "C" __global__ void print_negatives(const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned mask = __ballot_sync(0xffffffffu, i < n && x[i] < 0.0f);
    if ((threadIdx.x & 31) == 0 && i < n)
        printf("warp %d: %d negative\n", i / 32, __popc(mask));
}
