"""What the benchmark scripts share: two cells, the bare NVRTC baseline, interleaved A/B timing."""

from __future__ import annotations

import time

from cuda.bindings import nvrtc

# The kernel the cell and launch benchmarks both time.
SCALE = r'''
extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
'''

# The spilling kernel of the display benchmark and the tests, 48 live accumulators: spills under --maxrregcount=24 (the sm_90 minimum).
HEAVY = r'''
extern "C" __global__ void heavy(const float* x, float* y, int n) {
    float acc[48];
    #pragma unroll
    for (int k = 0; k < 48; ++k) acc[k] = x[threadIdx.x + k * n];
    #pragma unroll
    for (int r = 0; r < 8; ++r) {
        #pragma unroll
        for (int k = 0; k < 48; ++k) acc[k] = acc[k] * acc[(k + r + 1) % 48] + 1.0f;
    }
    float s = 0.f;
    #pragma unroll
    for (int k = 0; k < 48; ++k) s += acc[k] * (k + 1);
    y[threadIdx.x] = s;
}
'''

# A bigger cell: a //| header and two kernels.
BIG = r'''//| nvrtc: [--use_fast_math, --ftz=false]
//| ptxas: [-v]
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}

extern "C" __global__ void block_sum(const float* __restrict__ x, float* __restrict__ out, int n)
{
    __shared__ float part[256];
    float s = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        s += x[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, part[0]);
}
'''


def bare_nvrtc(src: str, argv: tuple[str, ...]) -> bytes:
    """The minimum a hand-written NVRTC call does: create, compile, log, CUBIN, destroy."""
    err, prog = nvrtc.nvrtcCreateProgram(src.encode(), b"cell.cu", 0, [], [])
    assert int(err) == 0, err
    try:
        opts = [a.encode() for a in argv]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(size)
        nvrtc.nvrtcGetProgramLog(prog, log)
        assert int(err) == 0, bytes(log).decode()
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = bytearray(size)
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        return bytes(cubin)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def version(module: str, missing: str = "?") -> str:
    """A module's ``__version__``, or ``missing``."""
    try:
        return __import__(module, fromlist=["__version__"]).__version__
    except Exception:
        return missing


def timed(fn) -> float:
    """Milliseconds ``fn()`` takes."""
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def interleaved(a, b, repeat: int, warmup: int = 2) -> tuple[list[float], list[float]]:
    """Time ``a`` and ``b`` alternately, so drift hits both alike."""
    for _ in range(warmup):
        a(), b()
    ta, tb = [], []
    for _ in range(repeat):
        ta.append(timed(a))
        tb.append(timed(b))
    return ta, tb
