// The umbrella header <cub/cub.cuh>, as CUB's own examples include it.  CCCL stops it under
// NVRTC with an #error (its device-wide algorithms launch from the host); cuda-magic supplies
// an NVRTC <cub/cub.cuh> with CUB's block, warp and thread headers.  nvcc takes CCCL's.
#include <cub/cub.cuh>

// Block-wide sum and max of 128 floats per block (BlockReduce), out[2*b] = sum, out[2*b+1] = max.
__global__ void block_sum_max(const float* in, float* out, int n) {
  using BlockReduce = cub::BlockReduce<float, 128>;
  __shared__ typename BlockReduce::TempStorage tmp_sum, tmp_max;
  int i = blockIdx.x * 128 + threadIdx.x;
  float v = i < n ? in[i] : 0.f;
  float s = BlockReduce(tmp_sum).Sum(v);
  float m = BlockReduce(tmp_max).Reduce(i < n ? v : -3.0e38f, ::cuda::maximum<>{});
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = s;
    out[2 * blockIdx.x + 1] = m;
  }
}

// Per-warp inclusive prefix sums (WarpScan) over 32-int segments.
__global__ void warp_prefix(const int* in, int* out, int n) {
  using WarpScan = cub::WarpScan<int>;
  __shared__ typename WarpScan::TempStorage tmp[4];     // 4 warps of a 128-thread block
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0, sum;
  WarpScan(tmp[threadIdx.x / 32]).InclusiveSum(v, sum);
  if (i < n) out[i] = sum;
}

// Loads through CUB's cache-modified iterator (ld.global.cg), out[i] = 2 * in[i].
__global__ void cg_copy_twice(const float* in, float* out, int n) {
  cub::CacheModifiedInputIterator<cub::LOAD_CG, float> it(in);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.f * it[i];
}
