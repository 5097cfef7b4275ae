// TMA on Hopper: a host-encoded CUtensorMap passed by value as a __grid_constant__
// parameter; each block pulls one BM x BN box of a (rows, cols) float matrix into
// shared memory with cp.async.bulk.tensor, waits on an mbarrier, and writes alpha * box.
// Launch: grid (ceil(cols / BN), ceil(rows / BM)), any block size; box = {BN, BM}.
#include <cuda.h>

constexpr int BM = 16;
constexpr int BN = 32;

__device__ __forceinline__ unsigned smem_ptr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ bool mbarrier_try_wait(unsigned bar, unsigned phase) {
    unsigned done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(bar), "r"(phase) : "memory");
    return done != 0;
}

extern "C" __global__ void tma_scale_tile(const __grid_constant__ CUtensorMap tmap, float* out,
                                          int rows, int cols, float alpha) {
    __shared__ alignas(128) float tile[BM][BN];
    __shared__ alignas(8) unsigned long long bar;
    const int x0 = blockIdx.x * BN, y0 = blockIdx.y * BM;   // x: the innermost (column) index
    const unsigned b = smem_ptr(&bar);

    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // visible to the TMA unit
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(b), "r"(static_cast<unsigned>(sizeof(tile))) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(smem_ptr(tile)), "l"(reinterpret_cast<unsigned long long>(&tmap)),
                        "r"(x0), "r"(y0), "r"(b)
                     : "memory");
    }
    while (!mbarrier_try_wait(b, 0)) {
    }

    // Out-of-bounds parts of the box arrive as zeros; only the in-bounds part is written.
    for (int i = threadIdx.x; i < BM * BN; i += blockDim.x) {
        int r = y0 + i / BN, c = x0 + i % BN;
        if (r < rows && c < cols) out[static_cast<long long>(r) * cols + c] = alpha * tile[i / BN][i % BN];
    }
}
