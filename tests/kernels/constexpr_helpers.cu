//| nvcc: [--use_fast_math, --expt-relaxed-constexpr]
// Unannotated constexpr helpers called from device code, as CUTLASS/CuTe and most tiling
// code write them.  nvcc: host functions, callable from device code with
// --expt-relaxed-constexpr (the header above).  NVRTC refuses any unannotated function
// ("host functions are not allowed in JIT mode"); cuda-magic compiles again with
// -default-device appended (shown in the argv, said in the log).
constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
constexpr int round_up(int a, int b) { return ceil_div(a, b) * b; }
template <class T> constexpr T square(T x) { return x * x; }

struct Tile {
  static constexpr int rows = 16, cols = 64;
  static constexpr int size() { return rows * cols; }
};

constexpr int kThreads = 128;
constexpr int kPerThread = ceil_div(Tile::size(), kThreads);   // 8, a constant expression

// out[i] = sum of squares of the tile's elements handled by thread i's slot
__global__ void tile_squares(const float* in, float* out, int n) {
  int base = blockIdx.x * Tile::size();
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    int i = base + k * kThreads + threadIdx.x;
    if (i < n) acc += square(in[i]);
  }
  out[blockIdx.x * kThreads + threadIdx.x] = acc;
}

// padded[i] = i < n ? in[i] : 0, over round_up(n, 32) elements (a runtime call)
__global__ void pad_to_warps(const int* in, int* padded, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < round_up(n, 32)) padded[i] = i < n ? in[i] : 0;
}
