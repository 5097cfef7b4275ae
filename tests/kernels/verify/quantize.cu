// Quantising float32 to fp8 (e4m3, e5m2), fp6 (e2m3) and fp4 (e2m1, two per byte), and back.
#include <cuda_fp8.h>
#include <cuda_fp6.h>
#include <cuda_fp4.h>

// |f| rounded to e4m3's grid by hand: ties away from zero (away) or toward zero (!away)
__device__ float e4m3_grid(float f, bool away)
{
    int e;
    frexpf(fabsf(f), &e);                                  // |f| = m * 2^e, m in [0.5, 1)
    int k = max(e - 1, -6) - 3;                            // 3 mantissa bits, emin = -6
    float steps = fabsf(f) * ldexpf(1.0f, -k);             // exact: a power of two
    float q = ldexpf(away ? floorf(steps + 0.5f) : floorf(steps), k);
    return copysignf(fminf(q, 448.0f), f);
}

extern "C" __global__ void quant_e4m3(const float* x, __nv_fp8_e4m3* y, float scale, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __nv_fp8_e4m3(x[i] * scale);        // nearest even, saturating
}

extern "C" __global__ void quant_e4m3_ties_away(const float* x, __nv_fp8_e4m3* y, float scale, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __nv_fp8_e4m3(e4m3_grid(x[i] * scale, true));
}

extern "C" __global__ void quant_e4m3_truncated(const float* x, __nv_fp8_e4m3* y, float scale, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __nv_fp8_e4m3(e4m3_grid(x[i] * scale, false));
}

extern "C" __global__ void quant_e4m3_nosat(const float* x, __nv_fp8_e4m3* y, float scale, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i].__x = __nv_cvt_float_to_fp8(x[i] * scale, __NV_NOSAT, __NV_E4M3);
}

extern "C" __global__ void quant_e4m3_as_e5m2(const float* x, __nv_fp8_e4m3* y, float scale, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i].__x = __nv_cvt_float_to_fp8(x[i] * scale, __NV_SATFINITE, __NV_E5M2);
}

extern "C" __global__ void quant_e5m2(const float* x, __nv_fp8_e5m2* y, float scale, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __nv_fp8_e5m2(x[i] * scale);
}

extern "C" __global__ void dequant_e4m3(const __nv_fp8_e4m3* q, float* y, float scale, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = float(q[i]) * scale;
}

extern "C" __global__ void quant_e2m3(const float* x, __nv_fp6_e2m3* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i].__x = __nv_cvt_float_to_fp6(x[i], __NV_E2M3, cudaRoundNearest);
}

// pairs: x[2i] in the low nibble of y[i]; pairs = n / 2
extern "C" __global__ void quant_fp4(const float* x, __nv_fp4x2_e2m1* y, int pairs)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < pairs) y[i].__x = __nv_cvt_float2_to_fp4x2(make_float2(x[2 * i], x[2 * i + 1]), __NV_E2M1, cudaRoundNearest);
}

extern "C" __global__ void quant_fp4_truncated(const float* x, __nv_fp4x2_e2m1* y, int pairs)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < pairs) y[i].__x = __nv_cvt_float2_to_fp4x2(make_float2(x[2 * i], x[2 * i + 1]), __NV_E2M1, cudaRoundZero);
}
