// Warp specialisation on Hopper: warpgroup 0 is the producer (one thread issues TMA loads of
// 32 x 32 float tiles into a two-stage ring, "full" mbarriers signal arrival), the other
// warpgroups consume (scale the tile into out, then arrive on the stage's "empty" mbarrier).
// Three builds of one body:
//   ws_scale_regs    setmaxnreg: the producer gives registers back (dec 40), consumers take
//                    them (inc 232): 128 x (40 + 232) = 34,816 of the SM's 65,536
//   ws_scale         the same pipeline with no setmaxnreg (every warpgroup keeps what
//                    ptxas gave the kernel)
//   ws_scale_greedy  three warpgroups, consumers ask for 240: 128 x (40 + 2 x 240) = 66,560,
//                    more than the register file holds
// Launch: grid = number of tiles / tiles per block, block 256 (384 for greedy); a tensor map
// over a (rows, 32) float matrix with box {32, 32}.  The marks (<cuda_magic/timeline.h>) name each
// role's ranges for k.timeline and compile to nothing in these ordinary builds.
#include <cuda.h>
#include <cuda_magic/timeline.h>

constexpr int TILE = 32, STAGES = 2, TILES_PER_BLOCK = 8;

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void wait_phase(unsigned bar, unsigned phase) {
    asm volatile("{\n\t.reg .pred p;\n"
                 "W:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra W;\n\t}" :: "r"(bar), "r"(phase) : "memory");
}

template <int DEC, int INC>
__device__ __forceinline__ void pipeline(const CUtensorMap* tmap, float* out, float alpha,
                                         int consumers) {
    __shared__ alignas(128) float ring[STAGES][TILE * TILE];
    __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];
    const int group = threadIdx.x / 128, lane = threadIdx.x % 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(&full[s])));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;"
                         :: "r"(smem_u32(&empty[s])), "r"(consumers * 128));
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    const int first = blockIdx.x * TILES_PER_BLOCK;
    if (group == 0) {                                  // the producer
        if (DEC) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(DEC));
        if (lane == 0) {
            for (int t = 0; t < TILES_PER_BLOCK; ++t) {
                const int s = t % STAGES;
                if (t >= STAGES) {
                    CM_RANGE_BEGIN("producer/wait");
                    wait_phase(smem_u32(&empty[s]), ((t / STAGES) - 1) & 1);
                    CM_RANGE_END("producer/wait");
                }
                CM_RANGE_BEGIN("producer/issue");
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                             :: "r"(smem_u32(&full[s])), "r"((unsigned)sizeof(ring[0])) : "memory");
                asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                             " [%0], [%1, {%2, %3}], [%4];"
                             :: "r"(smem_u32(ring[s])), "l"((unsigned long long)tmap), "r"(0),
                                "r"((first + t) * TILE), "r"(smem_u32(&full[s])) : "memory");
                CM_RANGE_END("producer/issue");
            }
        }
    } else {                                           // the consumers
        if (INC) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(INC));
        for (int t = 0; t < TILES_PER_BLOCK; ++t) {
            const int s = t % STAGES;
            CM_RANGE_BEGIN("consumer/wait");
            wait_phase(smem_u32(&full[s]), (t / STAGES) & 1);
            CM_RANGE_END("consumer/wait");
            CM_RANGE_BEGIN("consumer/scale");
            float* dst = out + (size_t)(first + t) * TILE * TILE;
            for (int i = (group - 1) * 128 + lane; i < TILE * TILE; i += consumers * 128)
                dst[i] = alpha * ring[s][i];
            CM_RANGE_END("consumer/scale");
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_u32(&empty[s]))
                         : "memory");
        }
    }
}

extern "C" __global__ void __launch_bounds__(256, 1)
ws_scale_regs(const __grid_constant__ CUtensorMap tmap, float* out, float alpha) {
    pipeline<40, 232>(&tmap, out, alpha, 1);
}

extern "C" __global__ void __launch_bounds__(256, 1)
ws_scale(const __grid_constant__ CUtensorMap tmap, float* out, float alpha) {
    pipeline<0, 0>(&tmap, out, alpha, 1);
}

extern "C" __global__ void __launch_bounds__(384, 1)
ws_scale_greedy(const __grid_constant__ CUtensorMap tmap, float* out, float alpha) {
    pipeline<40, 240>(&tmap, out, alpha, 2);
}
