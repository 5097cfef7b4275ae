// Warp specialisation with unguarded sm_90a inline PTX: a producer warpgroup gives
// registers back (setmaxnreg.dec), the consumer warpgroup takes more (setmaxnreg.inc), as
// ThunderKittens / FlashAttention-3 kernels do.  These instructions exist on sm_90a only:
// nvcc builds the fatbin for compute_90a / sm_90a alone (plain -arch=sm_90a would also
// embed compute_90 PTX, where ptxas rejects them).
//
// Two warpgroups per block (256 threads): the producer stages BLOCK floats in shared memory,
// the consumer writes out[i] = scale * staged[i].
#define BLOCK 128

template <int REGS> __device__ __forceinline__ void regs_down() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS> __device__ __forceinline__ void regs_up() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

__global__ void __launch_bounds__(256, 1)
specialized_scale(const float* in, float* out, float scale, int n) {
  __shared__ float staged[BLOCK];
  int warpgroup = threadIdx.x / 128, lane = threadIdx.x % 128;
  int i = blockIdx.x * BLOCK + lane;
  if (warpgroup == 0) {
    regs_down<40>();
    staged[lane] = i < n ? in[i] : 0.f;
  } else {
    regs_up<232>();
  }
  __syncthreads();
  if (warpgroup == 1 && i < n) out[i] = scale * staged[lane];
}

// A plain kernel beside it, with an sm_90 fence for the async proxy.
__global__ void fenced_copy(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  if (i < n) out[i] = in[i];
}
