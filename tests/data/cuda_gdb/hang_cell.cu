extern "C" __global__ void parity_hang(int* out, int n) {
    __shared__ __align__(8) unsigned long long bar;
    unsigned addr = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(addr), "r"(1));
    __syncthreads();
    int warp = threadIdx.x / 32;
    if (warp >= 4) {
        unsigned done = 0;
        while (!done) {
            asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                         : "=r"(done) : "r"(addr), "r"(0) : "memory");
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = warp;
}
extern "C" __global__ void divergent_sync(int* out, volatile int* flag) {
    if (threadIdx.x < 64) {
        __syncthreads();
        *flag = 1;
    } else {
        while (*flag == 0) { }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}
extern "C" __global__ void fill(int* y, int v) { y[threadIdx.x] = v; }
