// A Hopper GEMM, C = A * B^T in float from bfloat16 A (M x K) and B (N x K), both K-major:
// TMA brings 64 x 64 tiles of A and B into shared memory (128-byte swizzle) behind an
// mbarrier, one warpgroup multiplies them with wgmma.mma_async m64n64k16 (operands read
// straight from shared memory through matrix descriptors), accumulators in registers.
// sm_90a only (wgmma).  Launch: grid (N / 64, M / 64), block 128; M, N, K multiples of 64;
// tensor maps over A and B with box {64, 64} and CU_TENSOR_MAP_SWIZZLE_128B.
#include <cuda.h>
#include <cuda_bf16.h>

constexpr int BM = 64, BN = 64, BK = 64;

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// The sm_90 shared-memory matrix descriptor: start address, leading and stride byte offsets
// (each >> 4), 128-byte swizzle in bits 62-63.  K-major, 128-byte rows: eight rows (1024 B)
// between core-matrix groups along M/N.
__device__ __forceinline__ unsigned long long descriptor(const void* tile) {
    unsigned long long d = 0;
    d |= (unsigned long long)((smem_u32(tile) & 0x3FFFF) >> 4);
    d |= (unsigned long long)(16 >> 4) << 16;
    d |= (unsigned long long)(1024 >> 4) << 32;
    d |= 1ull << 62;
    return d;
}

__device__ __forceinline__ void wait_phase(unsigned bar, unsigned phase) {
    asm volatile("{\n\t.reg .pred p;\n"
                 "W:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra W;\n\t}" :: "r"(bar), "r"(phase) : "memory");
}

__device__ __forceinline__ void wgmma_64x64x16(float (&d)[32], unsigned long long a,
                                               unsigned long long b) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, 1, 0;\n\t"   // scale-d: accumulate into d
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p, 1, 1, 0, 0;\n\t}"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),
          "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]),
          "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
          "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),
          "+f"(d[31])
        : "l"(a), "l"(b));
}

extern "C" __global__ void __launch_bounds__(128)
tma_wgmma_gemm(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
               float* c, int M, int N, int K) {
    __shared__ alignas(1024) __nv_bfloat16 sa[BM * BK];
    __shared__ alignas(1024) __nv_bfloat16 sb[BN * BK];
    __shared__ alignas(8) unsigned long long bar;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const unsigned b = smem_u32(&bar);
    float acc[32];
    for (int i = 0; i < 32; ++i) acc[i] = 0.f;

    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    unsigned phase = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                         :: "r"(b), "r"((unsigned)(sizeof(sa) + sizeof(sb))) : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3}], [%4];"
                         :: "r"(smem_u32(sa)), "l"((unsigned long long)&tma_a), "r"(k0), "r"(m0),
                            "r"(b) : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3}], [%4];"
                         :: "r"(smem_u32(sb)), "l"((unsigned long long)&tma_b), "r"(k0), "r"(n0),
                            "r"(b) : "memory");
        }
        wait_phase(b, phase);
        phase ^= 1;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        for (int kk = 0; kk < BK; kk += 16)      // 16 bf16 = 32 bytes along the swizzled row
            wgmma_64x64x16(acc, descriptor(sa + kk), descriptor(sb + kk));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        __syncthreads();                          // the tiles are read before the next loads
    }
    // the m64nNk16 accumulator layout: warp w holds rows 16w..16w+15; lane l, register 4i+j
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int i = 0; i < BN / 8; ++i) {
        const int row = m0 + warp * 16 + lane / 4, col = n0 + i * 8 + (lane % 4) * 2;
        c[row * N + col] = acc[4 * i];
        c[row * N + col + 1] = acc[4 * i + 1];
        c[(row + 8) * N + col] = acc[4 * i + 2];
        c[(row + 8) * N + col + 1] = acc[4 * i + 3];
    }
}
