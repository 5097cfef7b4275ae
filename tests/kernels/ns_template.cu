// Templated kernels in namespaces, instantiated in the source so both NVRTC and nvcc
// emit them: y = a * x + y over a grid-stride loop, a fill, and a nested-namespace iota.
namespace ops {

namespace detail {
template <typename T>
__device__ __forceinline__ T fma_op(T a, T x, T y) { return a * x + y; }
}  // namespace detail

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) axpy(T a, const T* __restrict__ x, T* __restrict__ y,
                                              int n) {
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK)
        y[i] = detail::fma_op(a, x[i], y[i]);
}

template <typename T>
__global__ void fill(T* __restrict__ out, T value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}

}  // namespace ops

namespace ops::util {
__global__ void iota(int* out, int start, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = start + i;
}
}  // namespace ops::util

template __global__ void ops::axpy<float, 256>(float, const float*, float*, int);
template __global__ void ops::axpy<double, 128>(double, const double*, double*, int);
template __global__ void ops::fill<int>(int*, int, int);
