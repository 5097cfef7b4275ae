//| nvrtc: [-std=c++17, -default-device]
//| nvcc: [-std=c++17]
// (NVRTC: -default-device makes CUTLASS's unannotated constexpr helpers device code.)
// Tiled copies with CuTe: each block moves one BM x BN tile of an M x N row-major matrix
// through registers; 256 threads laid out 8 x 32 (row-major), so each thread copies a
// (BM/8) x (BN/32) sub-tile. M and N must be multiples of the tile.
#include <cute/tensor.hpp>

using namespace cute;

using TileShape = Shape<_32, _128>;                    // BM x BN
using ThreadLayout = Layout<Shape<_8, _32>, Stride<_32, _1>>;

template <class SrcLayout, class DstLayout>
__device__ void copy_tile(const float* src, float* dst, SrcLayout src_layout, DstLayout dst_layout) {
    Tensor mS = make_tensor(make_gmem_ptr(src), src_layout);        // (M, N)
    Tensor mD = make_tensor(make_gmem_ptr(dst), dst_layout);        // (M, N)
    Tensor gS = local_tile(mS, TileShape{}, make_coord(blockIdx.x, blockIdx.y));  // (BM, BN)
    Tensor gD = local_tile(mD, TileShape{}, make_coord(blockIdx.x, blockIdx.y));
    Tensor tS = local_partition(gS, ThreadLayout{}, threadIdx.x);   // (BM/8, BN/32)
    Tensor tD = local_partition(gD, ThreadLayout{}, threadIdx.x);
    Tensor frag = make_tensor_like(tS);                             // registers
    copy(tS, frag);
    copy(frag, tD);
}

// dst = src, both row-major: stride (N, 1).
extern "C" __global__ void __launch_bounds__(256) cute_tile_copy(const float* src, float* dst,
                                                                  int M, int N) {
    auto layout = make_layout(make_shape(M, N), make_stride(N, Int<1>{}));
    copy_tile(src, dst, layout, layout);
}

// dst = src^T (N x M row-major): the same (M, N) index space, with dst viewed column-major.
extern "C" __global__ void __launch_bounds__(256) cute_tile_transpose(const float* src, float* dst,
                                                                       int M, int N) {
    auto src_layout = make_layout(make_shape(M, N), make_stride(N, Int<1>{}));
    auto dst_layout = make_layout(make_shape(M, N), make_stride(Int<1>{}, M));
    copy_tile(src, dst, src_layout, dst_layout);
}
