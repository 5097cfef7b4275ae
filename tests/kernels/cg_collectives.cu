// Cooperative-groups collectives as kernels use them: tile reductions with each operator,
// scans, a coalesced group in a divergent branch, a labeled partition, half-precision
// shuffles and a block-wide memcpy_async into shared memory.
#include <cuda_fp16.h>                  // before cooperative groups: their __half collectives
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
#include <cooperative_groups/memcpy_async.h>

namespace cg = cooperative_groups;

// Per warp of 32: sum of x; per tile of 16: min and max of k and xor of their bits.
extern "C" __global__ void tile_reduce(const float* x, const int* k, float* sums, int* mins,
                                       int* maxs, unsigned* xors, int n) {
    cg::thread_block block = cg::this_thread_block();
    auto warp = cg::tiled_partition<32>(block);
    auto tile = cg::tiled_partition<16>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    int kv = i < n ? k[i] : 0;
    float s = cg::reduce(warp, v, cg::plus<float>());
    int lo = cg::reduce(tile, kv, cg::less<int>());
    int hi = cg::reduce(tile, kv, cg::greater<int>());
    unsigned bits = cg::reduce(tile, static_cast<unsigned>(kv), cg::bit_xor<unsigned>());
    int w = i / 32, t = i / 16;
    if (warp.thread_rank() == 0 && w * 32 < n) sums[w] = s;
    if (tile.thread_rank() == 0 && t * 16 < n) { mins[t] = lo; maxs[t] = hi; xors[t] = bits; }
}

// Inclusive and exclusive prefix sums within each warp.
extern "C" __global__ void warp_scan(const int* x, int* inclusive, int* exclusive, int n) {
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? x[i] : 0;
    int inc = cg::inclusive_scan(warp, v);
    int exc = cg::exclusive_scan(warp, v, cg::plus<int>());
    if (i < n) { inclusive[i] = inc; exclusive[i] = exc; }
}

// Threads with an odd key form a coalesced group: each writes its rank and the group's size;
// each warp splits by key % 4 (a labeled partition), which sums the keys of its label.
// n: a multiple of 32 (whole warps).
extern "C" __global__ void groups(const int* key, int* rank, int* size, int* label_sum, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    if (key[i] & 1) {
        cg::coalesced_group odd = cg::coalesced_threads();
        rank[i] = odd.thread_rank();
        size[i] = odd.num_threads();
    } else {
        rank[i] = -1;
        size[i] = 0;
    }
    auto same = cg::labeled_partition(warp, key[i] % 4);
    label_sum[i] = cg::reduce(same, key[i], cg::plus<int>());
}

// y[i] = x[i] + x[i ^ 1] in half precision, the partner's value by a tile shuffle.
extern "C" __global__ void half_pairs(const __half* x, __half* y, int n) {
    auto tile = cg::tiled_partition<32>(cg::this_thread_block());
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __half v = i < n ? x[i] : __float2half(0.0f);
    __half other = tile.shfl_xor(v, 1);
    if (i < n) y[i] = __hadd(v, other);
}

// Each block copies its 256 floats to shared memory with memcpy_async, then writes them
// reversed within the block.
extern "C" __global__ void staged_reverse(const float* x, float* y) {
    __shared__ float stage[256];
    cg::thread_block block = cg::this_thread_block();
    const float* src = x + blockIdx.x * 256;
    cg::memcpy_async(block, stage, src, sizeof(float) * 256);
    cg::wait(block);
    y[blockIdx.x * 256 + threadIdx.x] = stage[255 - threadIdx.x];
}
