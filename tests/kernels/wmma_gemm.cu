// Tensor-core GEMM with WMMA: C = alpha * A * B + beta * C.
// A is M x K row-major, B is K x N column-major (both half), C is M x N row-major float.
// Each warp computes one 16 x 16 tile of C; M, N and K must be multiples of 16.
#include <mma.h>
#include <cuda_fp16.h>

using namespace nvcuda;

constexpr int WMMA_M = 16;
constexpr int WMMA_N = 16;
constexpr int WMMA_K = 16;

extern "C" __global__ void wmma_gemm(const half* __restrict__ a, const half* __restrict__ b,
                                     float* __restrict__ c, int M, int N, int K,
                                     float alpha, float beta) {
    // blockDim = (32 * warps_x, warps_y): warp (x, y) owns tile row warpM, tile column warpN.
    int warpM = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    int warpN = blockIdx.y * blockDim.y + threadIdx.y;
    int row = warpM * WMMA_M;
    int col = warpN * WMMA_N;
    if (row >= M || col >= N) return;

    wmma::fragment<wmma::matrix_a, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, WMMA_M, WMMA_N, WMMA_K, half, wmma::col_major> b_frag;
    wmma::fragment<wmma::accumulator, WMMA_M, WMMA_N, WMMA_K, float> acc_frag;
    wmma::fragment<wmma::accumulator, WMMA_M, WMMA_N, WMMA_K, float> c_frag;
    wmma::fill_fragment(acc_frag, 0.0f);

    for (int k = 0; k < K; k += WMMA_K) {
        wmma::load_matrix_sync(a_frag, a + row * K + k, K);   // lda = K (row-major)
        wmma::load_matrix_sync(b_frag, b + col * K + k, K);   // ldb = K (column-major)
        wmma::mma_sync(acc_frag, a_frag, b_frag, acc_frag);
    }

    wmma::load_matrix_sync(c_frag, c + row * N + col, N, wmma::mem_row_major);
    for (int i = 0; i < c_frag.num_elements; i++)
        c_frag.x[i] = alpha * acc_frag.x[i] + beta * c_frag.x[i];
    wmma::store_matrix_sync(c + row * N + col, c_frag, N, wmma::mem_row_major);
}
