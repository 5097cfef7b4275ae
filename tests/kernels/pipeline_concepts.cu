//| nvrtc: [--use_fast_math, -std=c++20]
//| nvcc: [--use_fast_math, -std=c++20]
// <cstdint> before <cuda_pipeline.h>: under NVRTC the toolkit's cuda_pipeline_helpers.h
// typedefs uint64_t as 'unsigned long long' where <cstdint> (glibc, as with nvcc) says
// 'unsigned long'; cuda-magic supplies that helper with <cstdint>'s types.  And C++20
// <concepts> (ThunderKittens-style constraints) on top of libcu++.
#include <cstdint>
#include <cuda_pipeline.h>
#include <concepts>
#include <type_traits>

template <class T>
concept Scalar = std::integral<T> || std::floating_point<T>;

template <Scalar T>
__device__ T twice(T x) { return x + x; }

static_assert(std::is_same_v<uint64_t, unsigned long>, "glibc's uint64_t, as with nvcc");

// Stage a tile through shared memory with cp.async (__pipeline_memcpy_async), then
// out[i] = twice(in[i]).  in/out hold 64-bit words; 256 threads per block, one word each.
__global__ void staged_twice(const uint64_t* in, uint64_t* out, int n) {
  __shared__ alignas(16) uint64_t tile[256];
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) __pipeline_memcpy_async(&tile[threadIdx.x], &in[i], sizeof(uint64_t));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  if (i < n) out[i] = twice(tile[threadIdx.x]);
}

// A constrained template, instantiated explicitly for two types.
template <Scalar T>
__global__ void axpb(const T* x, T* y, T a, T b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}
template __global__ void axpb<float>(const float*, float*, float, float, int);
template __global__ void axpb<int32_t>(const int32_t*, int32_t*, int32_t, int32_t, int);
