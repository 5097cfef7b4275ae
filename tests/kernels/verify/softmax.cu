//| nvrtc: [--fmad=true]
//| nvcc: [--fmad=true]
// Row softmax, one block of 128 threads per row; precise expf except where __expf is asked for.
#define THREADS 128
#define NEG_INF __int_as_float(0xff800000)

__device__ float block_all(float v, float* s, bool is_max, bool one_warp)
{
    s[threadIdx.x] = v;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w && !(one_warp && w >= 32))
            s[threadIdx.x] = is_max ? fmaxf(s[threadIdx.x], s[threadIdx.x + w])
                                    : s[threadIdx.x] + s[threadIdx.x + w];
        __syncthreads();
    }
    float r = s[0];
    __syncthreads();
    return r;
}

template <bool FAST, bool SUBTRACT_MAX, bool ONE_WARP>
__device__ void softmax(const float* x, float* y, int cols)
{
    __shared__ float s[THREADS];
    const float* row = x + blockIdx.x * cols;
    float m = NEG_INF, sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) m = fmaxf(m, row[c]);
    m = SUBTRACT_MAX ? block_all(m, s, true, false) : 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) sum += FAST ? __expf(row[c] - m) : expf(row[c] - m);
    sum = block_all(sum, s, false, ONE_WARP);      // ONE_WARP: the other warps' sums left out
    for (int c = threadIdx.x; c < cols; c += THREADS)
        y[blockIdx.x * cols + c] = (FAST ? __expf(row[c] - m) : expf(row[c] - m)) / sum;
}

extern "C" __global__ void softmax_rows(const float* x, float* y, int cols) { softmax<false, true, false>(x, y, cols); }
extern "C" __global__ void softmax_rows_fast(const float* x, float* y, int cols) { softmax<true, true, false>(x, y, cols); }
extern "C" __global__ void softmax_rows_no_max(const float* x, float* y, int cols) { softmax<false, false, false>(x, y, cols); }
extern "C" __global__ void softmax_rows_one_warp(const float* x, float* y, int cols) { softmax<false, true, true>(x, y, cols); }
