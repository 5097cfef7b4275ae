// Stencils through a shared tile with a halo: 1-D (blocks of 256) and 2-D 3 x 3 (16 x 16).
#define B1 256
#define T2 16

__device__ float at(const float* x, int i, int n) { return (i >= 0 && i < n) ? x[i] : 0.0f; }

extern "C" __global__ void stencil3(const float* x, float* y, int n)
{
    __shared__ float s[B1 + 2];
    int i = blockIdx.x * B1 + threadIdx.x;
    s[threadIdx.x + 1] = at(x, i, n);
    if (threadIdx.x == 0) s[0] = at(x, i - 1, n);
    if (threadIdx.x == B1 - 1) s[B1 + 1] = at(x, i + 1, n);
    __syncthreads();
    if (i < n) y[i] = 0.25f * s[threadIdx.x] + 0.5f * s[threadIdx.x + 1] + 0.25f * s[threadIdx.x + 2];
}

extern "C" __global__ void stencil3_direct(const float* x, float* y, int n)
{
    int i = blockIdx.x * B1 + threadIdx.x;
    if (i < n) y[i] = 0.25f * at(x, i - 1, n) + 0.5f * x[i] + 0.25f * at(x, i + 1, n);
}

// the halo is never loaded: each block treats its own edges as the array's
extern "C" __global__ void stencil3_no_halo(const float* x, float* y, int n)
{
    __shared__ float s[B1 + 2];
    int i = blockIdx.x * B1 + threadIdx.x;
    s[threadIdx.x + 1] = at(x, i, n);
    if (threadIdx.x == 0) { s[0] = 0.0f; s[B1 + 1] = 0.0f; }
    __syncthreads();
    if (i < n) y[i] = 0.25f * s[threadIdx.x] + 0.5f * s[threadIdx.x + 1] + 0.25f * s[threadIdx.x + 2];
}

// the last element repeats itself past the end where the others see zero
extern "C" __global__ void stencil3_clamped_end(const float* x, float* y, int n)
{
    int i = blockIdx.x * B1 + threadIdx.x;
    if (i < n) y[i] = 0.25f * at(x, i - 1, n) + 0.5f * x[i] + 0.25f * x[min(i + 1, n - 1)];
}

template <bool HALO>
__device__ void blur(const float* x, float* y, int h, int w)
{
    __shared__ float s[T2 + 2][T2 + 2];
    int c = blockIdx.x * T2 + threadIdx.x, r = blockIdx.y * T2 + threadIdx.y;
    for (int k = threadIdx.y * T2 + threadIdx.x; k < (T2 + 2) * (T2 + 2); k += T2 * T2) {
        int rr = blockIdx.y * T2 + k / (T2 + 2) - 1, cc = blockIdx.x * T2 + k % (T2 + 2) - 1;
        bool inside = k / (T2 + 2) >= 1 && k / (T2 + 2) <= T2 && k % (T2 + 2) >= 1 && k % (T2 + 2) <= T2;
        bool ok = rr >= 0 && rr < h && cc >= 0 && cc < w && (HALO || inside);
        s[k / (T2 + 2)][k % (T2 + 2)] = ok ? x[rr * w + cc] : 0.0f;
    }
    __syncthreads();
    if (r >= h || c >= w) return;
    float v = 0.0f;
    for (int dr = 0; dr < 3; ++dr)
        for (int dc = 0; dc < 3; ++dc) v += s[threadIdx.y + dr][threadIdx.x + dc];
    y[r * w + c] = v * (1.0f / 9.0f);
}

extern "C" __global__ void blur3x3(const float* x, float* y, int h, int w) { blur<true>(x, y, h, w); }
extern "C" __global__ void blur3x3_no_halo(const float* x, float* y, int h, int w) { blur<false>(x, y, h, w); }
