//| nvrtc: [--fmad=true]
//| nvcc: [--fmad=true]
// Without --use_fast_math: expf within 2 ULP, IEEE division, subnormals kept.
extern "C" __global__ void exp_accurate(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = expf(x[i]);
}

extern "C" __global__ void exp_fast(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __expf(x[i]);                 // ex2.approx of x * log2(e)
}

extern "C" __global__ void neg_recip(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.0f / -x[i];
}

// 0 - x is +0 for x = +0, where -x is -0: 1 / (0 - x) is +Inf where -Inf belongs
extern "C" __global__ void neg_recip_signed_zero(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.0f / (0.0f - x[i]);
}

#define BLOCK 1024
extern "C" __global__ void reverse_blocks(const float* x, float* y, int n)
{
    __shared__ float s[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    s[threadIdx.x] = x[i];
    __syncthreads();
    y[i] = s[BLOCK - 1 - threadIdx.x];
}

// the barrier left out: a thread reads the slot of a warp that may not have written it yet
extern "C" __global__ void reverse_blocks_racy(const float* x, float* y, int n)
{
    __shared__ float s[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    s[threadIdx.x] = x[i];
    y[i] = s[BLOCK - 1 - threadIdx.x];
}
