//| nvcc: [--use_fast_math, --expt-relaxed-constexpr]
// (nvcc needs --expt-relaxed-constexpr for std::min/max and numeric_limits in device code;
// NVRTC has no such flag.)
// Device code that leans on the C and C++ standard headers: numeric limits, min/max,
// INFINITY and FLT_MAX, INT_MAX, std::pair, and type traits checked at compile time.
#include <cmath>
#include <climits>
#include <cfloat>
#include <limits>
#include <type_traits>
#include <utility>
#include <algorithm>

template <typename T>
struct MinMax {
    static_assert(std::is_floating_point<T>::value, "MinMax needs a floating-point type");
    T lo = std::numeric_limits<T>::infinity();
    T hi = -std::numeric_limits<T>::infinity();
};

// Per-block (min, max) of x, ignoring NaN; a block with no numbers reports (+inf, -inf).
extern "C" __global__ void block_minmax(const float* __restrict__ x, int n, float* __restrict__ out) {
    __shared__ float lo[256], hi[256];
    MinMax<float> m;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && !isnan(x[i])) m.lo = m.hi = x[i];
    lo[threadIdx.x] = m.lo;
    hi[threadIdx.x] = m.hi;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {   // blockDim.x: a power of two, at most 256
        if (threadIdx.x < s) {
            lo[threadIdx.x] = std::min(lo[threadIdx.x], lo[threadIdx.x + s]);
            hi[threadIdx.x] = std::max(hi[threadIdx.x], hi[threadIdx.x + s]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[2 * blockIdx.x] = lo[0];
        out[2 * blockIdx.x + 1] = hi[0];
    }
}

// Saturating float -> int conversion: NaN -> 0, out of range -> INT_MIN / INT_MAX.
extern "C" __global__ void saturate_to_int(const float* __restrict__ x, int* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    using Limits = std::numeric_limits<int>;
    static_assert(Limits::max() == INT_MAX && Limits::min() == INT_MIN, "int is 32-bit");
    if (std::isnan(v)) y[i] = 0;
    else if (v >= static_cast<float>(INT_MAX)) y[i] = INT_MAX;
    else if (v <= static_cast<float>(INT_MIN)) y[i] = INT_MIN;
    else y[i] = static_cast<int>(v);
}

// Like numpy.nan_to_num: NaN -> 0, +inf -> FLT_MAX, -inf -> -FLT_MAX.
extern "C" __global__ void nan_to_num(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    if (isnan(v)) x[i] = 0.0f;
    else if (v == INFINITY) x[i] = FLT_MAX;
    else if (v == -INFINITY) x[i] = -FLT_MAX;
}

// Per-row argmax (first maximum wins, NaN skipped), one thread per row, with std::pair.
extern "C" __global__ void row_argmax(const float* __restrict__ x, int* __restrict__ idx,
                                      int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    std::pair<float, int> best = std::make_pair(-INFINITY, 0);
    for (int c = 0; c < cols; ++c) {
        float v = x[static_cast<long>(r) * cols + c];
        if (v > best.first) best.first = v, best.second = c;
    }
    idx[r] = best.second;
}
