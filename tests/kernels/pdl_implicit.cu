// Programmatic dependent launch (sm_90+) and what nvcc declares without an #include:
// cudaGridDependencySynchronize / cudaTriggerProgrammaticLaunchCompletion (nvcc's implicit
// cuda_runtime.h), glibc's uint / ushort and int64_t, GNU __extension__ and INT_MAX.
// No #include at all: under NVRTC cuda-magic pre-includes cuda-magic/nvcc_implicit.h.
//
// produce: y[i] = 3 * x[i] (saturated to a ushort), then lets the next kernel start early.
// consume: waits for the previous grid's writes, then out[i] = y[i] + bias (an int64_t).
__extension__ typedef long long wide_t;     // GNU spelling, as glibc's headers write it

__global__ void produce(const uint* x, ushort* y, uint n) {
  uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    uint v = 3u * x[i];
    y[i] = (ushort)(v > 65535u ? 65535u : v);
  }
  cudaTriggerProgrammaticLaunchCompletion();
}

__global__ void consume(const ushort* y, int64_t* out, int64_t bias, uint n) {
  cudaGridDependencySynchronize();   // no-op unless launched with programmatic serialization
  uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    wide_t w = (wide_t)y[i] + bias;
    out[i] = w > INT_MAX ? (int64_t)INT_MAX : (int64_t)w;
  }
}

// The helper nvcc's headers give as well: ulong and u_char are glibc's <sys/types.h> names.
__device__ ulong mix(u_char a, ulong b) { return (b << 8) | a; }

__global__ void pack_bytes(const u_char* bytes, ulong* words, uint n) {
  uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    ulong w = 0;
    for (int k = 3; k >= 0; --k) w = mix(bytes[4 * i + k], w);
    words[i] = w;
  }
}
