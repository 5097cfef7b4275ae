// The first two warps of a block stage a tile in shared memory; the other six wait for a
// ready flag before they read it.  The bug: the loaders' __syncthreads() (meant to make the
// tile whole before the flag goes up; a named barrier of the 64 loaders, bar.sync 1, 64,
// would be) sits inside their branch on threadIdx.x.  It waits for the whole block, whose
// other warps spin on the flag that is set only after it: every block hangs.  cuda-magic says
// so before the launch (the pipeline view's warnings); it never runs outside isolate(True).
// HANG: warps 0-1 of every block wait at line 23 (__syncthreads)
// HANG: warps 2-7 of every block wait at line 27 (a spin on the ready flag)

#define BLOCK 256
#define LOADERS 64

extern "C" __global__ void __launch_bounds__(BLOCK) divergent_stage(const float* x, float* y, int n) {
    __shared__ float tile[BLOCK];
    __shared__ volatile int ready;
    if (threadIdx.x == 0)
        ready = 0;
    __syncthreads();
    const int base = blockIdx.x * BLOCK;
    if (threadIdx.x < LOADERS) {                    // warps 0-1 load the tile
        for (int k = threadIdx.x; k < BLOCK; k += LOADERS)
            tile[k] = base + k < n ? x[base + k] : 0.f;
        __syncthreads();                            // BUG: the other warps never arrive
        if (threadIdx.x == 0)
            ready = 1;
    } else {
        while (ready == 0) { }                      // warps 2-7 wait for the tile
    }
    if (base + (int)threadIdx.x < n)
        y[base + threadIdx.x] = 2.f * tile[threadIdx.x];
}
