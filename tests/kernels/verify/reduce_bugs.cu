// Block sums that go wrong: a missing barrier, a loop one step short, padding, a wrong operand.
#define BLOCK 256

extern "C" __global__ void block_sum_nosync(const float* x, float* partial, int n)
{
    __shared__ float part[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    part[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int w = BLOCK / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        // no __syncthreads(): the next step reads sums other warps have not written
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = part[0];
}

extern "C" __global__ void block_sum_short(const float* x, float* partial, int n)
{
    __shared__ float part[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    part[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int w = BLOCK / 2; w > 1; w >>= 1) {     // stops before adding part[1]
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = part[0];
}

extern "C" __global__ void block_sum_pad_last(const float* x, float* partial, int n)
{
    __shared__ float part[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    part[threadIdx.x] = x[min(i, n - 1)];         // pads the last block with x[n-1], not 0
    __syncthreads();
    for (int w = BLOCK / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = part[0];
}

extern "C" __global__ void dot_self(const float* x, const float* y, float* partial, int n)
{
    __shared__ float part[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    part[threadIdx.x] = i < n ? x[i] * x[i] : 0.0f;   // x.x, not x.y
    __syncthreads();
    for (int w = BLOCK / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = part[0];
}
