//| nvrtc: [--use_fast_math, -std=c++17]
// Row-wise LayerNorm over a (N, C) row-major matrix, two ways:
// one warp per row (cg::reduce) and one block per row (tile shuffles + shared memory).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cstdint>

namespace cg = cooperative_groups;

extern "C" __global__ void layernorm_warp(float* __restrict__ out, float* __restrict__ mean,
                                          float* __restrict__ rstd, const float* __restrict__ inp,
                                          const float* __restrict__ weight,
                                          const float* __restrict__ bias, int N, int C) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (row >= N) return;
    const float* x = inp + static_cast<int64_t>(row) * C;

    float sum = 0.0f;
    for (int i = warp.thread_rank(); i < C; i += warp.size()) sum += x[i];
    float m = cg::reduce(warp, sum, cg::plus<float>{}) / C;

    float var = 0.0f;
    for (int i = warp.thread_rank(); i < C; i += warp.size()) {
        float d = x[i] - m;
        var += d * d;
    }
    float s = rsqrtf(cg::reduce(warp, var, cg::plus<float>{}) / C + 1e-5f);

    float* o = out + static_cast<int64_t>(row) * C;
    for (int i = warp.thread_rank(); i < C; i += warp.size())
        o[i] = (x[i] - m) * s * weight[i] + bias[i];
    if (warp.thread_rank() == 0) {
        mean[row] = m;
        rstd[row] = s;
    }
}

// Block-wide sum: shuffle down within each warp, warp sums through shared memory.
__device__ float block_sum(cg::thread_block block, float v) {
    __shared__ float partial[32];
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    for (int off = warp.size() / 2; off > 0; off /= 2) v += warp.shfl_down(v, off);
    if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = v;
    block.sync();
    v = warp.thread_rank() < warp.meta_group_size() ? partial[warp.thread_rank()] : 0.0f;
    for (int off = warp.size() / 2; off > 0; off /= 2) v += warp.shfl_down(v, off);
    v = warp.shfl(v, 0);
    block.sync();  // partial[] is reused by the next call
    return v;
}

extern "C" __global__ void layernorm_block(float* __restrict__ out, const float* __restrict__ inp,
                                           const float* __restrict__ weight,
                                           const float* __restrict__ bias, int C, float eps) {
    cg::thread_block block = cg::this_thread_block();
    const float* x = inp + static_cast<int64_t>(blockIdx.x) * C;
    float* o = out + static_cast<int64_t>(blockIdx.x) * C;
    float sum = 0.0f;
    for (int i = block.thread_rank(); i < C; i += block.size()) sum += x[i];
    float m = block_sum(block, sum) / C;
    float var = 0.0f;
    for (int i = block.thread_rank(); i < C; i += block.size()) var += (x[i] - m) * (x[i] - m);
    float s = rsqrtf(block_sum(block, var) / C + eps);
    for (int i = block.thread_rank(); i < C; i += block.size())
        o[i] = (x[i] - m) * s * weight[i] + bias[i];
}
