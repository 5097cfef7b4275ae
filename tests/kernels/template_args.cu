// Template parameters of every kind, instantiated in the source as users write them:
// unsigned and size_t values (the binary says 256u, 512ul), a cell enum (unscoped and scoped),
// and defaulted parameters (k<> takes them all). The Python names are the text written here.
enum Mode { MODE_SUM, MODE_MAX };
enum class Scale : int { One = 1, Half = 2 };

template <typename T, unsigned BLOCK, bool NEGATE>
__global__ void reduce7(const T* in, T* out, unsigned n) {
    unsigned i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) atomicAdd(out, NEGATE ? -in[i] : in[i]);
}

template <typename T, size_t WARPS, size_t TILE>
__global__ void multi_warp_cg_reduce(const T* in, T* out, size_t n) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;     // out has WARPS slots, one per TILE
    if (i < n) atomicAdd(out + (i / TILE) % WARPS, in[i]);
}

template <int B, Mode M, Scale S = Scale::One>
__global__ void combine(const float* in, float* out, int n) {
    int i = blockIdx.x * B + threadIdx.x;
    if (i >= n) return;
    float v = in[i] / static_cast<int>(S);
    out[i] = M == MODE_MAX ? fmaxf(out[i], v) : out[i] + v;
}

template <bool CLAMP = true, bool SQUARE = false>
__global__ void shape(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = SQUARE ? x[i] * x[i] : x[i];
    x[i] = CLAMP ? fminf(fmaxf(v, 0.0f), 1.0f) : v;
}

template __global__ void reduce7<int, 256, true>(const int*, int*, unsigned);
template __global__ void multi_warp_cg_reduce<int, 512, 64>(const int*, int*, size_t);
template __global__ void combine<128, MODE_MAX>(const float*, float*, int);
template __global__ void combine<64, MODE_SUM, Scale::Half>(const float*, float*, int);
template __global__ void shape<>(float*, int);
