// A Blackwell (sm_100a) tile GEMM with the fifth-generation tensor core: TMA brings 128 x 64
// bfloat16 tiles of A and B into shared memory, one thread issues tcgen05.mma (operands from
// shared memory, the 128 x 128 float accumulator in tensor memory, allocated with
// tcgen05.alloc), tcgen05.commit signals an mbarrier, and each thread reads its accumulator
// row back with tcgen05.ld.  tcgen05 exists on sm_100a/sm_100f only.  The GPU machine of this
// project is an H200, so this kernel is compiled and inspected, not run.
#include <cuda.h>
#include <cuda_bf16.h>

constexpr int BM = 128, BN = 128, BK = 64;

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// The sm_100 shared-memory descriptor: as sm_90's, plus the version (1) in bits 46-47.
__device__ __forceinline__ unsigned long long descriptor(const void* tile) {
    unsigned long long d = (unsigned long long)((smem_u32(tile) & 0x3FFFF) >> 4);
    d |= (unsigned long long)(16 >> 4) << 16;
    d |= (unsigned long long)(1024 >> 4) << 32;
    d |= 1ull << 46;
    d |= 2ull << 61;                       // 128-byte swizzle (sm_100 encoding)
    return d;
}

// kind::f16 instruction descriptor: f32 accumulate, bf16 A and B, both K-major, N and M.
constexpr unsigned IDESC = (1u << 4) | (1u << 7) | (1u << 10) | ((BN >> 3) << 17) | ((BM >> 4) << 24);

__device__ __forceinline__ void wait_phase(unsigned bar, unsigned phase) {
    asm volatile("{\n\t.reg .pred p;\n"
                 "W:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra W;\n\t}" :: "r"(bar), "r"(phase) : "memory");
}

extern "C" __global__ void __launch_bounds__(128)
tcgen05_gemm(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
             float* c, int M, int N, int K) {
    __shared__ alignas(1024) __nv_bfloat16 sa[BM * BK];
    __shared__ alignas(1024) __nv_bfloat16 sb[BN * BK];
    __shared__ alignas(8) unsigned long long loaded, multiplied;
    __shared__ unsigned tmem;
    const unsigned lb = smem_u32(&loaded), mb = smem_u32(&multiplied);
    const int warp = threadIdx.x / 32, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    if (warp == 0) {                       // one warp allocates BN columns of tensor memory
        asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;"
                     :: "r"(smem_u32(&tmem)), "r"(BN) : "memory");
        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
    }
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(lb) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(mb) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
    const unsigned d_tmem = tmem;
    unsigned phase = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                         :: "r"(lb), "r"((unsigned)(sizeof(sa) + sizeof(sb))) : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3}], [%4];"
                         :: "r"(smem_u32(sa)), "l"((unsigned long long)&tma_a), "r"(k0), "r"(m0),
                            "r"(lb) : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3}], [%4];"
                         :: "r"(smem_u32(sb)), "l"((unsigned long long)&tma_b), "r"(k0), "r"(n0),
                            "r"(lb) : "memory");
        }
        wait_phase(lb, phase);
        if (threadIdx.x == 0) {
            for (int kk = 0; kk < BK; kk += 16) {
                const unsigned accumulate = (k0 | kk) != 0;
                asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %4, 0;\n\t"
                             "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n\t}"
                             :: "r"(d_tmem), "l"(descriptor(sa + kk)), "l"(descriptor(sb + kk)),
                                "r"(IDESC), "r"(accumulate) : "memory");
            }
            asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];"
                         :: "r"(mb) : "memory");
        }
        wait_phase(mb, phase);
        phase ^= 1;
    }
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
    // each warp reads its 32 lanes (rows) of the accumulator, 8 columns at a time
    const int row = m0 + threadIdx.x;
    for (int col = 0; col < BN; col += 8) {
        unsigned v[8];
        asm volatile("tcgen05.ld.sync.aligned.32x32b.x8.b32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8];"
                     : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]), "=r"(v[4]), "=r"(v[5]),
                       "=r"(v[6]), "=r"(v[7])
                     : "r"(d_tmem + ((unsigned)(warp * 32) << 16) + col));
        asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
        for (int j = 0; j < 8; ++j) c[row * N + n0 + col + j] = __uint_as_float(v[j]);
    }
    __syncthreads();
    if (warp == 0)
        asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(d_tmem), "r"(BN)
                     : "memory");
}
