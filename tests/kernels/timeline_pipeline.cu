// A marked producer/consumer pipeline for k.timeline: warp 0 produces, copying tile t of x into
// shared stage t % STAGES once the consumers have freed it; the other warps consume, scaling
// the stage into y, then free it.  Named barriers hand the stages over (bar.arrive by one side,
// bar.sync by the other, every thread of the block counted): FULL(s) = 1 + s says stage s
// holds a tile, EMPTY(s) = 1 + STAGES + s that it may be refilled.  The marks name each
// role's ranges ("producer/load", "consumer/wait"...) and compile to nothing in an ordinary
// build.  Launch: grid = tiles / tiles_per_block, block = 128 (any multiple of 32 from 64).
#include <cuda_magic/timeline.h>

constexpr int STAGES = 2, TILE = 1024;

__device__ __forceinline__ void bar_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void bar_arrive(int id, int threads) {
    asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(threads) : "memory");
}

extern "C" __global__ void staged_scale(const float* x, float* y, float a, int tiles_per_block) {
    __shared__ float ring[STAGES][TILE];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, threads = blockDim.x;
    const int first = blockIdx.x * tiles_per_block;
    if (warp == 0) {
        for (int t = 0; t < tiles_per_block; ++t) {
            const int s = t % STAGES;
            if (t >= STAGES) {
                CM_RANGE_BEGIN("producer/wait");
                bar_sync(1 + STAGES + s, threads);
                CM_RANGE_END("producer/wait");
            }
            CM_RANGE_BEGIN("producer/load");
            const float* src = x + (size_t)(first + t) * TILE;
            for (int i = lane; i < TILE; i += 32)
                ring[s][i] = src[i];
            CM_RANGE_END("producer/load");
            bar_arrive(1 + s, threads);
        }
    } else {
        for (int t = 0; t < tiles_per_block; ++t) {
            const int s = t % STAGES;
            CM_RANGE_BEGIN("consumer/wait");
            bar_sync(1 + s, threads);
            CM_RANGE_END("consumer/wait");
            CM_RANGE_BEGIN("consumer/math");
            float* dst = y + (size_t)(first + t) * TILE;
            for (int i = threadIdx.x - 32; i < TILE; i += threads - 32)
                dst[i] = a * ring[s][i];
            CM_RANGE_END("consumer/math");
            if (t + STAGES < tiles_per_block)
                bar_arrive(1 + STAGES + s, threads);
        }
    }
    CM_MARK("done");
}
