"""Hopper/Blackwell end to end: what the pipeline table, a tensor map and a launch with
attributes cost, and where the corpus's TMA + WGMMA GEMM stands next to torch.matmul.

    python3 benchmarks/bench_hopper.py [--repeat N] [--quick]

1. Pipeline table (no GPU needed): ms for ``m.pipeline(kernel)`` of each Hopper/Blackwell
   corpus kernel (NVRTC builds), the first call (disassembles the cubin) and a second one.
2. Tensor maps (GPU): µs per ``cuda_magic.tma(x, box=(64, 64), swizzle="128B")`` over a torch
   bf16 tensor, next to a bare ``cuTensorMapEncodeTiled`` call with the same arguments made
   up front (the floor: our checks and the array's layout cost the rest).
3. Launch cost (GPU): µs per launch, wall time of chunks of --calls launches + one
   synchronize, rounds alternating: ``k[grid, block](...)`` (the cached fast path) against
   ``k.launch(..., cluster=(2, 1, 1))`` and ``k.launch(..., pdl=True)`` (cuLaunchKernelEx,
   the config built each call); the kernel does nothing but write one int per block.
4. The corpus GEMM (GPU): tests/kernels/tma_wgmma_gemm.cu (one warpgroup, 64 x 64 tiles,
   no multi-stage pipeline: a teaching kernel) timed with k.bench against torch.matmul on
   the same bf16 tensors (CUDA events, median; torch writes bf16, ours fp32), TFLOP/s and
   the ratio.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

TINY = r"""
extern "C" __global__ void mark(int* out) {
    if (threadIdx.x == 0) out[blockIdx.x] = blockIdx.x;
}
"""


def _ms(f, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def pipeline_figures(repeat: int) -> None:
    import cuda_magic
    from corpus import KERNELS
    print("1. pipeline table (NVRTC builds; first call disassembles, then cached)")
    print(f"  {'kernel':24} {'arch':8} {'first ms':>9} {'again ms':>9}  rows with counts")
    for file, kernel, arch in (("tma_wgmma_gemm.cu", "tma_wgmma_gemm", "sm_90a"),
                               ("warp_specialized.cu", "ws_scale_regs", "sm_90a"),
                               ("cluster_dsmem.cu", "cluster_swap", "sm_90a"),
                               ("tcgen05_mma.cu", "tcgen05_gemm", "sm_100a")):
        m = cuda_magic.build((KERNELS / file).read_text(), cuda_magic.line_config(arch=arch),
                             load=False)
        t = time.perf_counter()
        p = m.pipeline(kernel)
        first = (time.perf_counter() - t) * 1e3
        again = _ms(lambda: m.pipeline(kernel), repeat)
        rows = sum(1 for v in p.counts.values() if v)
        print(f"  {kernel:24} {arch:8} {first:9.2f} {again:9.3f}  {rows}")


def gpu_figures(repeat: int, calls: int) -> None:
    try:
        import torch
        from cuda_magic.compile.arch import detect_arch
        if detect_arch() is None or not torch.cuda.is_available():
            raise ImportError
    except ImportError:
        print("2-4. no GPU (or no PyTorch): skipped")
        return
    import cuda_magic
    from corpus import KERNELS
    from cuda.bindings import driver as drv
    print(f"GPU: {torch.cuda.get_device_name(0)}")

    # 2. tensor maps
    a = torch.randn(4096, 4096, device="cuda").bfloat16()
    T = drv.CUtensorMapDataType, drv.CUtensorMapInterleave, drv.CUtensorMapSwizzle, \
        drv.CUtensorMapL2promotion, drv.CUtensorMapFloatOOBfill
    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    args = (T[0].CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, u32(2), a.data_ptr(), [u64(4096)] * 2,
            [u64(8192)], [u32(64)] * 2, [u32(1)] * 2, T[1].CU_TENSOR_MAP_INTERLEAVE_NONE,
            T[2].CU_TENSOR_MAP_SWIZZLE_128B, T[3].CU_TENSOR_MAP_L2_PROMOTION_NONE,
            T[4].CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    n = 200
    ours = _ms(lambda: [cuda_magic.tma(a, box=(64, 64), swizzle="128B") for _ in range(n)],
               repeat) * 1e3 / n
    bare = _ms(lambda: [drv.cuTensorMapEncodeTiled(*args) for _ in range(n)], repeat) * 1e3 / n
    print("2. tensor maps (4096 x 4096 bf16, box 64 x 64, 128B swizzle)")
    print(f"  tma()                    {ours:8.2f} µs")
    print(f"  cuTensorMapEncodeTiled   {bare:8.2f} µs   (ratio {ours / bare:.1f}x)")

    # 3. launch cost
    m = cuda_magic.build(TINY)
    out = torch.zeros(64, dtype=torch.int32, device="cuda")
    k = m.mark
    forms = {"k[grid, block](...)": lambda: k[64, 32](out),
             "k.launch(cluster=(2,1,1))": lambda: k.launch(64, 32, (out,), cluster=(2, 1, 1)),
             "k.launch(pdl=True)": lambda: k.launch(64, 32, (out,), pdl=True)}
    rounds = {name: [] for name in forms}
    for f in forms.values():
        f()
    torch.cuda.synchronize()
    for r in range(repeat):
        for name, f in forms.items():
            t = time.perf_counter()
            for _ in range(calls):
                f()
            torch.cuda.synchronize()
            rounds[name].append((time.perf_counter() - t) * 1e6 / calls)
    plain = statistics.median(rounds["k[grid, block](...)"])
    print(f"3. launch cost (µs per launch, median of {repeat} rounds of {calls})")
    for name, xs in rounds.items():
        med = statistics.median(xs)
        print(f"  {name:28} {med:8.2f} µs  min {min(xs):7.2f}   {med / plain:5.2f}x")

    # 4. the corpus GEMM next to torch.matmul
    g = cuda_magic.build((KERNELS / "tma_wgmma_gemm.cu").read_text())
    print("4. tests/kernels/tma_wgmma_gemm.cu (fp32 out) against torch.matmul (bf16 out)")
    print(f"  {'M=N=K':>6} {'ours ms':>9} {'TF/s':>7} {'torch ms':>9} {'TF/s':>7} {'ratio':>6}")
    for size in (1024, 4096):
        A = torch.randn(size, size, device="cuda").bfloat16()
        B = torch.randn(size, size, device="cuda").bfloat16()
        C = torch.empty(size, size, device="cuda")
        ta, tb = (cuda_magic.tma(x, box=(64, 64), swizzle="128B") for x in (A, B))
        timing = g.tma_wgmma_gemm.bench((size // 64, size // 64), 128, ta, tb, C, size, size,
                                        size, repeat=max(repeat, 20))
        ours_ms = timing.median_ms
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        Bt = B.T
        for _ in range(max(repeat, 20)):
            start.record()
            torch.matmul(A, Bt)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        torch_ms = statistics.median(times)
        tf = 2 * size ** 3 / 1e9
        print(f"  {size:6} {ours_ms:9.3f} {tf / ours_ms:7.1f} {torch_ms:9.3f} {tf / torch_ms:7.1f} "
              f"{ours_ms / torch_ms:5.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--quick", action="store_true", help="--repeat 3 --calls 200")
    o = ap.parse_args()
    if o.quick:
        o.repeat, o.calls = 3, 200
    import cuda_magic
    print(f"cuda_magic {cuda_magic.__version__}")
    pipeline_figures(o.repeat)
    gpu_figures(o.repeat, o.calls)


if __name__ == "__main__":
    main()
