// Sums: one partial sum per block of 256 threads, or one total through atomics.
#define BLOCK 256

__device__ float block_reduce(float v, float* part)
{
    part[threadIdx.x] = v;
    __syncthreads();
    for (int w = BLOCK / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    return part[0];
}

extern "C" __global__ void block_sum_tree(const float* x, float* partial, int n)
{
    __shared__ float part[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    float s = block_reduce(i < n ? x[i] : 0.0f, part);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

extern "C" __global__ void block_sum_shfl(const float* x, float* partial, int n)
{
    __shared__ float warp_sums[BLOCK / 32];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < BLOCK / 32 ? warp_sums[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0) partial[blockIdx.x] = v;
    }
}

extern "C" __global__ void block_sum_serial(const float* x, float* partial, int n)
{
    if (threadIdx.x != 0) return;
    float s = 0.0f;
    for (int i = blockIdx.x * BLOCK; i < min(n, (blockIdx.x + 1) * BLOCK); ++i) s += x[i];
    partial[blockIdx.x] = s;
}

// grid-stride accumulation, then one atomicAdd per block into total[0]
extern "C" __global__ void total_sum_atomic(const float* x, float* total, int n)
{
    __shared__ float part[BLOCK];
    float s = 0.0f;
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) s += x[i];
    s = block_reduce(s, part);
    if (threadIdx.x == 0) atomicAdd(total, s);
}

extern "C" __global__ void dot_tree(const float* x, const float* y, float* partial, int n)
{
    __shared__ float part[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    float s = block_reduce(i < n ? x[i] * y[i] : 0.0f, part);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// the same sum over whole blocks only: n / BLOCK rounds the partial last block away
extern "C" __global__ void total_sum_whole_blocks(const float* x, float* total, int n)
{
    __shared__ float part[BLOCK];
    int blocks = n / BLOCK;
    for (int b = blockIdx.x; b < blocks; b += gridDim.x) {
        float s = block_reduce(x[b * BLOCK + threadIdx.x], part);
        if (threadIdx.x == 0) atomicAdd(total, s);
        __syncthreads();
    }
}
