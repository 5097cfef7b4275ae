// A C-style kernel API: scalar typedefs, an alias, a macro for the real type, and 64-bit
// sizes spelt both as cuda::std::int64_t and as <cstdint>'s int64_t.
#include <cstdint>
#include <cuda/std/cstdint>

typedef unsigned int uint;
using idx_t = int;
#define real float

extern "C" {

// y[i * stride] = a * x[i * stride] + y[i * stride], for i < n
__global__ void saxpy_strided(real* y, const real* x, real a, idx_t n, uint stride) {
    idx_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i * stride] = a * x[i * stride] + y[i * stride];
}

// out[i] = in[idx[i]], with a 64-bit element count
__global__ void gather(real* __restrict__ out, const real* __restrict__ in,
                       const int64_t* __restrict__ idx, cuda::std::int64_t n) {
    int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[idx[i]];
}

// count[0] += number of x[i] != 0; counts are 64-bit
__global__ void count_nonzero(const real* x, unsigned long long* count, idx_t n) {
    idx_t i = blockIdx.x * blockDim.x + threadIdx.x;
    bool nz = i < n && x[i] != real(0);
    unsigned int votes = __ballot_sync(0xffffffffu, nz);
    if ((threadIdx.x & 31) == 0 && votes) atomicAdd(count, (unsigned long long)__popc(votes));
}

}  // extern "C"
