// Integer kernels: a 256-bin histogram (added into bins) and an inclusive scan per block.
#define BLOCK 256

extern "C" __global__ void histogram256(const unsigned char* data, unsigned int* bins, int n)
{
    __shared__ unsigned int s[256];
    s[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK)
        atomicAdd(&s[data[i]], 1u);
    __syncthreads();
    atomicAdd(&bins[threadIdx.x], s[threadIdx.x]);
}

extern "C" __global__ void histogram256_racy(const unsigned char* data, unsigned int* bins, int n)
{
    __shared__ unsigned int s[256];
    s[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK)
        s[data[i]] += 1;                       // read-modify-write without an atomic
    __syncthreads();
    atomicAdd(&bins[threadIdx.x], s[threadIdx.x]);
}

extern "C" __global__ void int_sum_atomic(const int* x, int* total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? x[i] : 0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(total, v);
}

template <bool INCLUSIVE>
__device__ void block_scan(const int* x, int* y, int n)
{
    __shared__ int buf[2][BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x, t = threadIdx.x, cur = 0;
    buf[0][t] = i < n ? x[i] : 0;
    __syncthreads();
    for (int d = 1; d < BLOCK; d <<= 1) {
        buf[1 - cur][t] = t >= d ? buf[cur][t] + buf[cur][t - d] : buf[cur][t];
        cur = 1 - cur;
        __syncthreads();
    }
    if (i < n) y[i] = INCLUSIVE ? buf[cur][t] : buf[cur][t] - x[i];
}

extern "C" __global__ void block_scan_inclusive(const int* x, int* y, int n) { block_scan<true>(x, y, n); }
// exclusive where the caller wants inclusive
extern "C" __global__ void block_scan_exclusive(const int* x, int* y, int n) { block_scan<false>(x, y, n); }
