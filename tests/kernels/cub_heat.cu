// CUB calls in kernels with a few lines of their own, for the per-line heat map: the cost of
// the library code inlined at a call line is that line's (tests/inspect/test_lines_inlined.py).
// sum_squares: each block's sum of x[i]^2; max_abs: each block's largest |x[i]|, through a
// cell helper and a cell functor that CUB calls back.
#include <cub/block/block_reduce.cuh>

constexpr int BLOCK = 256;

extern "C" __global__ void __launch_bounds__(BLOCK)
sum_squares(const float* __restrict__ x, float* __restrict__ partial, int n) {
    using BlockReduce = cub::BlockReduce<float, BLOCK>;
    __shared__ BlockReduce::TempStorage temp;
    int i = blockIdx.x * BLOCK + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    v = v * v;
    float total = BlockReduce(temp).Sum(v);
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

struct Max {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

__device__ __forceinline__ float block_max(float v) {
    using BlockReduce = cub::BlockReduce<float, BLOCK>;
    __shared__ BlockReduce::TempStorage temp;
    return BlockReduce(temp).Reduce(v, Max());
}

extern "C" __global__ void __launch_bounds__(BLOCK)
max_abs(const float* __restrict__ x, float* __restrict__ partial, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    float v = i < n ? fabsf(x[i]) : 0.0f;
    float m = block_max(v);
    if (threadIdx.x == 0) partial[blockIdx.x] = m;
}
