// 256-bin byte histogram: per-block bins in shared memory (fast shared atomics),
// then one global atomicAdd per bin per block. Grid-stride over the input.
#include <cstdint>

constexpr int NUM_BINS = 256;

extern "C" __global__ void histogram_u8(const uint8_t* __restrict__ data, size_t n,
                                        unsigned int* __restrict__ hist) {
    __shared__ unsigned int bins[NUM_BINS];
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) bins[b] = 0;
    __syncthreads();

    size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&bins[data[i]], 1u);
    __syncthreads();

    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)
        if (bins[b]) atomicAdd(&hist[b], bins[b]);
}

// Four bytes per load: the input is read as uint32_t words (n_words = n / 4).
extern "C" __global__ void histogram_u8x4(const uint32_t* __restrict__ words, size_t n_words,
                                          unsigned int* __restrict__ hist) {
    __shared__ unsigned int bins[NUM_BINS];
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) bins[b] = 0;
    __syncthreads();

    size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n_words; i += stride) {
        uint32_t w = words[i];
#pragma unroll
        for (int k = 0; k < 4; ++k) atomicAdd(&bins[(w >> (8 * k)) & 0xFFu], 1u);
    }
    __syncthreads();

    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)
        if (bins[b]) atomicAdd(&hist[b], bins[b]);
}
