// bf16 GEMMs, C = A B (A: M x K, B: K x N, row-major), one thread per element of C,
// blocks of 16 x 16; split-K adds fp32 partial products into C with atomics.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define T 16

extern "C" __global__ void gemm_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                     __nv_bfloat16* c, int M, int N, int K)
{
    int col = blockIdx.x * T + threadIdx.x, row = blockIdx.y * T + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__bfloat162float(a[row * K + k]), __bfloat162float(b[k * N + col]), acc);
    c[row * N + col] = __float2bfloat16(acc);          // round to nearest even
}

extern "C" __global__ void gemm_bf16_tiled(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                           __nv_bfloat16* c, int M, int N, int K)
{
    __shared__ float sa[T][T], sb[T][T];
    int col = blockIdx.x * T + threadIdx.x, row = blockIdx.y * T + threadIdx.y;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
        sa[threadIdx.y][threadIdx.x] = row < M && ka < K ? __bfloat162float(a[row * K + ka]) : 0.0f;
        sb[threadIdx.y][threadIdx.x] = kb < K && col < N ? __bfloat162float(b[kb * N + col]) : 0.0f;
        __syncthreads();
        for (int k = 0; k < T; ++k) acc = fmaf(sa[threadIdx.y][k], sb[k][threadIdx.x], acc);
        __syncthreads();
    }
    if (row < M && col < N) c[row * N + col] = __float2bfloat16(acc);
}

extern "C" __global__ void gemm_bf16_splitk(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                            float* c, int M, int N, int K)
{
    int col = blockIdx.x * T + threadIdx.x, row = blockIdx.y * T + threadIdx.y;
    if (row >= M || col >= N) return;
    int per = (K + gridDim.z - 1) / gridDim.z, k0 = blockIdx.z * per;
    float acc = 0.0f;
    for (int k = k0; k < min(K, k0 + per); ++k)
        acc = fmaf(__bfloat162float(a[row * K + k]), __bfloat162float(b[k * N + col]), acc);
    atomicAdd(&c[row * N + col], acc);
}

extern "C" __global__ void gemm_bf16_f16acc(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                            __nv_bfloat16* c, int M, int N, int K)
{
    int col = blockIdx.x * T + threadIdx.x, row = blockIdx.y * T + threadIdx.y;
    if (row >= M || col >= N) return;
    __half acc = __float2half(0.0f);                   // fp16 accumulator: 11 bits
    for (int k = 0; k < K; ++k)
        acc = __hfma(__float2half(__bfloat162float(a[row * K + k])),
                     __float2half(__bfloat162float(b[k * N + col])), acc);
    c[row * N + col] = __float2bfloat16(__half2float(acc));
}

extern "C" __global__ void gemm_bf16_truncated(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                               __nv_bfloat16* c, int M, int N, int K)
{
    int col = blockIdx.x * T + threadIdx.x, row = blockIdx.y * T + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__bfloat162float(a[row * K + k]), __bfloat162float(b[k * N + col]), acc);
    c[row * N + col] = __float2bfloat16_rz(acc);       // toward zero
}

extern "C" __global__ void gemm_bf16_k_short(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                             __nv_bfloat16* c, int M, int N, int K)
{
    int col = blockIdx.x * T + threadIdx.x, row = blockIdx.y * T + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K - 1; ++k)                    // the last product left out
        acc = fmaf(__bfloat162float(a[row * K + k]), __bfloat162float(b[k * N + col]), acc);
    c[row * N + col] = __float2bfloat16(acc);
}
