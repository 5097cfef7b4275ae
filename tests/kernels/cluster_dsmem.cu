// Thread-block clusters and distributed shared memory (sm_90): blocks pair up in clusters of
// two (__cluster_dims__, so a plain launch forms them); each block stages its slice of the
// input in shared memory, and after a cluster barrier reads its partner's slice through
// cluster.map_shared_rank: out gets each block's neighbour slice (blocks 2k and 2k+1 swap).
// Launch: an even number of blocks of 256 threads.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void __cluster_dims__(2, 1, 1)
cluster_swap(const float* in, float* out, int n) {
    __shared__ float tile[256];
    cg::cluster_group cluster = cg::this_cluster();
    unsigned rank = cluster.block_rank();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? in[i] : 0.f;
    cluster.sync();
    float* other = cluster.map_shared_rank(tile, rank ^ 1);
    float v = other[threadIdx.x];
    cluster.sync();
    if (i < n) out[i] = v;
}
