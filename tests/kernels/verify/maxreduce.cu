// Max reductions: per block of 256 (NaN propagates, as np.max does) and one global maximum.
#define BLOCK 256
#define NEG_INF __int_as_float(0xff800000)

__device__ float nan_max(float a, float b) { return (isnan(a) || a > b) ? a : b; }

extern "C" __global__ void block_max(const float* x, float* partial, int n)
{
    __shared__ float s[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : NEG_INF;
    __syncthreads();
    for (int w = BLOCK / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] = nan_max(s[threadIdx.x + w], s[threadIdx.x]);
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

// fmaxf returns the number when the other operand is NaN: the block's NaN is lost
extern "C" __global__ void block_max_fmaxf(const float* x, float* partial, int n)
{
    __shared__ float s[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : NEG_INF;
    __syncthreads();
    for (int w = BLOCK / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + w]);
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

// starts from 0 instead of -inf: wrong whenever a block holds only negative values
extern "C" __global__ void block_max_from_zero(const float* x, float* partial, int n)
{
    __shared__ float s[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    s[threadIdx.x] = fmaxf(0.0f, i < n ? x[i] : 0.0f);
    __syncthreads();
    for (int w = BLOCK / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + w]);
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

// *best must hold -inf (or a smaller maximum) before the launch; floats ordered as ints
extern "C" __global__ void global_max_atomic(const float* x, float* best, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    if (v >= 0.0f) atomicMax(reinterpret_cast<int*>(best), __float_as_int(v));
    else atomicMin(reinterpret_cast<unsigned int*>(best), __float_as_uint(v));
}
