// Block-level primitives from CUB, templated on the block size.
// block_sum<BLOCK>: each block reduces its BLOCK elements to one partial sum.
// block_scan_tile: each block scans a tile of 256 x 4 ints (inclusive prefix sum per tile).
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

template <int BLOCK_THREADS>
__global__ void __launch_bounds__(BLOCK_THREADS)
block_sum(const float* __restrict__ in, float* __restrict__ partial, int n) {
    using BlockReduce = cub::BlockReduce<float, BLOCK_THREADS>;
    __shared__ typename BlockReduce::TempStorage temp;
    int i = blockIdx.x * BLOCK_THREADS + threadIdx.x;
    float x = i < n ? in[i] : 0.0f;
    float sum = BlockReduce(temp).Sum(x);
    if (threadIdx.x == 0) partial[blockIdx.x] = sum;   // only thread 0 holds the result
}

template __global__ void block_sum<128>(const float*, float*, int);
template __global__ void block_sum<256>(const float*, float*, int);

template <int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ void scan_tile(const int* in, int* out, int n) {
    using BlockScan = cub::BlockScan<int, BLOCK_THREADS, cub::BLOCK_SCAN_RAKING>;
    __shared__ typename BlockScan::TempStorage temp;
    constexpr int TILE = BLOCK_THREADS * ITEMS_PER_THREAD;
    int base = blockIdx.x * TILE + threadIdx.x * ITEMS_PER_THREAD;   // blocked arrangement
    int items[ITEMS_PER_THREAD];
#pragma unroll
    for (int j = 0; j < ITEMS_PER_THREAD; ++j) items[j] = base + j < n ? in[base + j] : 0;
    BlockScan(temp).InclusiveSum(items, items);
#pragma unroll
    for (int j = 0; j < ITEMS_PER_THREAD; ++j)
        if (base + j < n) out[base + j] = items[j];
}

extern "C" __global__ void __launch_bounds__(256) block_scan_tile(const int* in, int* out, int n) {
    scan_tile<256, 4>(in, out, n);
}
