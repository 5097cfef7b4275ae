//| tune:
//|   BM: [32, 64, 128]
//|   BN: [32, 64, 128]
//|   TM: [4, 8]
//|   TN: [4]
// A register-tiled SGEMM, C = A * B (row-major; A is M x K, B is K x N), the shape public
// tuning examples use: a BM x BN tile of C per block, TM x TN outputs per thread, BK-deep
// slices of A and B staged in shared memory.  Block: (BM / TM) * (BN / TN) threads.
#ifndef BK
#define BK 8
#endif
#ifndef WRONG            // 1: skip the last K slice (a fast, wrong candidate)
#define WRONG 0
#endif
#ifndef FAULT            // 1: write far outside C (a faulting candidate)
#define FAULT 0
#endif

template <int BM, int BN, int TM, int TN>
__global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B,
                      float* __restrict__ C, int M, int N, int K) {
    constexpr int THREADS = (BM / TM) * (BN / TN);
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {};
    const int last = WRONG ? K - BK : K;
    for (int k0 = 0; k0 < last; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += THREADS) {
            int r = i / BK, c = i % BK;
            As[c][r] = (row0 + r < M && k0 + c < K) ? A[(row0 + r) * K + k0 + c] : 0.0f;
        }
        for (int i = threadIdx.x; i < BK * BN; i += THREADS) {
            int r = i / BN, c = i % BN;
            Bs[r][c] = (k0 + r < K && col0 + c < N) ? B[(k0 + r) * N + col0 + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[k][ty * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    if (FAULT && threadIdx.x == 0) C[(size_t)1 << 40] = 1.0f;
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            int r = row0 + ty * TM + i, c = col0 + tx * TN + j;
            if (r < M && c < N) C[r * N + c] = acc[i][j];
        }
}
