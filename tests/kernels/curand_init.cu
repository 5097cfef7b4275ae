// Per-thread Philox generators: set up once, then draw uniform floats in (0, 1].
// Same seed -> same stream; each thread gets its own subsequence.
#include <curand_kernel.h>

extern "C" __global__ void setup_states(curandStatePhilox4_32_10_t* states,
                                        unsigned long long seed, int n) {
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id < n) curand_init(seed, /*subsequence=*/id, /*offset=*/0, &states[id]);
}

extern "C" __global__ void generate_uniform(curandStatePhilox4_32_10_t* states, float* out,
                                            int per_thread, int n) {
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= n) return;
    curandStatePhilox4_32_10_t local = states[id];   // work on a register copy
    for (int i = 0; i < per_thread; ++i)
        out[static_cast<size_t>(i) * n + id] = curand_uniform(&local);
    states[id] = local;                              // so the next call continues the stream
}

// The classic XORWOW setup with the thread index as subsequence, and a normal draw.
extern "C" __global__ void normal_xorwow(float* out, unsigned long long seed, int n) {
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= n) return;
    curandState state;
    curand_init(seed, id, 0, &state);
    out[id] = curand_normal(&state);
}
