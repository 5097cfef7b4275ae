// TMA im2col on Hopper: the gather of an implicit-GEMM convolution. The tensor map covers an
// NHWC float tensor with an im2col bounding box (the padding); each block is one filter tap
// (r, s) = (blockIdx.y, blockIdx.x): one cp.async.bulk.tensor...im2col load brings PIXELS
// output pixels x CHANNELS channels of the input shifted by the tap (the im2col offsets),
// zeros where the tap falls in the padding, and the block writes them to out[tap].
// Launch: grid (S, R), any block size; the map's box = (PIXELS, CHANNELS).
#include <cuda.h>

constexpr int PIXELS = 32;
constexpr int CHANNELS = 16;

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void wait_parity(unsigned bar, unsigned phase) {
    asm volatile("{\n\t.reg .pred p;\n"
                 "AGAIN:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra AGAIN;\n\t}"
                 :: "r"(bar), "r"(phase) : "memory");
}

// (n0, h0, w0): the input pixel under the first output pixel's filter origin (the bounding
// box's lower corner for the first image: -pad); out: [R * S][PIXELS][CHANNELS]
extern "C" __global__ void im2col_taps(const __grid_constant__ CUtensorMap tmap, float* out,
                                       int n0, int h0, int w0) {
    __shared__ alignas(128) float cols[PIXELS][CHANNELS];
    __shared__ alignas(8) unsigned long long bar;
    const unsigned b = smem_addr(&bar);
    const unsigned short s = blockIdx.x, r = blockIdx.y;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(b), "r"(static_cast<unsigned>(sizeof(cols))) : "memory");
        // coordinates innermost first {c, w, h, n}; im2col offsets innermost first {s, r}
        asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};"
                     :: "r"(smem_addr(cols)), "l"(reinterpret_cast<unsigned long long>(&tmap)),
                        "r"(0), "r"(w0), "r"(h0), "r"(n0), "r"(b), "h"(s), "h"(r)
                     : "memory");
    }
    __syncthreads();
    wait_parity(b, 0);
    float* tap = out + (blockIdx.y * gridDim.x + blockIdx.x) * PIXELS * CHANNELS;
    for (int i = threadIdx.x; i < PIXELS * CHANNELS; i += blockDim.x)
        tap[i] = cols[i / CHANNELS][i % CHANNELS];
}
