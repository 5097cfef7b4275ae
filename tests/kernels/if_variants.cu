// Preprocessor variants: one kernel written twice under #if, a kernel switched off
// with #if 0, and kernels whose names come from a macro.
#ifndef USE_FAST
#define USE_FAST 1
#endif

#if USE_FAST
// softplus(x) = log(1 + exp(x)), with the fast intrinsics
extern "C" __global__ void softplus(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 20.0f ? x[i] : __logf(1.0f + __expf(x[i]));
}
#else
extern "C" __global__ void softplus(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 20.0f ? x[i] : log1pf(expf(x[i]));
}
#endif

#if 0
// Kept for reference; not compiled.
extern "C" __global__ void softplus_old(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = logf(1.0f + expf(x[i]));
}
#endif

#define DEFINE_SCALE(NAME, T)                                  \
    extern "C" __global__ void NAME(T* x, T a, int n) {        \
        int i = blockIdx.x * blockDim.x + threadIdx.x;         \
        if (i < n) x[i] *= a;                                  \
    }

DEFINE_SCALE(scale_f32, float)
DEFINE_SCALE(scale_f64, double)
