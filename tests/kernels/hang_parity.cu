// A warp-specialised producer/consumer: one shared-memory stage, a "full" mbarrier (the tile
// has landed: the producer's expect_tx and bulk copy) and an "empty" one (the 128 consumers
// are done with it).  The bug: the whole block waits for tile 0 in the prologue, so its
// author started the consumers' phase at 1, but tile t is phase t of "full" (parity t & 1).
// The consumers wait for phase 1, which the producer completes only after they free the
// stage: every block hangs, deterministically.  It never runs outside isolate(True).
// HANG: warps 4-7 of every block wait at line 45 (mbarrier try_wait, parity 1)
// HANG: warp 0 of every block waits at line 38 (mbarrier try_wait, parity 0)
#include <cstdint>

#define TILE 128            // floats per tile: one per consumer thread
#define TILES 4             // tiles per block

__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void load_tile(float* tile, const float* src, uint64_t* full) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem(full)), "r"(TILE * 4) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(smem(tile)), "l"(src), "r"(TILE * 4), "r"(smem(full)) : "memory");
}

extern "C" __global__ void __launch_bounds__(256) parity_pipeline(const float* x, float* y, float scale) {
    __shared__ alignas(128) float tile[TILE];
    __shared__ alignas(8) uint64_t full, empty;
    const size_t base = (size_t)blockIdx.x * TILE * TILES;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem(&full)) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem(&empty)), "r"(TILE) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        load_tile(tile, x + base, &full);                     // prologue: tile 0, phase 0 of full
    }
    __syncthreads();
    unsigned landed = 0;                                      // the whole block waits for tile 0
    while (!landed) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }" : "=r"(landed) : "r"(smem(&full)) : "memory");
    if (threadIdx.x == 0) {                                   // producer: tiles 1.. once the stage is free
        for (int t = 1; t < TILES; ++t) {
            unsigned freed = 0, parity = (t - 1) & 1;
            while (!freed) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(freed) : "r"(smem(&empty)), "r"(parity) : "memory");
            load_tile(tile, x + base + t * TILE, &full);
        }
    } else if (threadIdx.x >= 128) {                          // consumers: warps 4-7
        const int i = threadIdx.x - 128;
        for (int t = 0; t < TILES; ++t) {
            unsigned ready = 0, parity = (t & 1) ^ 1;         // BUG: tile t is phase t: t & 1
            while (!ready) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(ready) : "r"(smem(&full)), "r"(parity) : "memory");
            y[base + t * TILE + i] = scale * tile[i];
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem(&empty)) : "memory");
        }
    }
}
