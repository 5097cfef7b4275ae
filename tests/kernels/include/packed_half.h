// A header a project keeps beside its kernels and reaches with -I (as ggml's and vLLM's
// quantisation kernels do): it uses glibc's `ushort`, which nvcc declares through its implicit
// cuda_runtime.h.  tests/compile/test_implicit.py compiles a cell that includes it.
#pragma once
#include <cuda_fp16.h>

__device__ inline ushort pack_half(float x) {
    return __half_as_ushort(__float2half(x));
}
