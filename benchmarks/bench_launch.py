"""What does launching through ``k[grid, block](...)`` cost next to raw launches?

    python3 benchmarks/bench_launch.py [--repeat N] [--quick] [--launches N] [--copy-gib G]

Needs an NVIDIA GPU and CuPy; without a GPU it prints "no GPU: skipped" and
exits 0.  Measured in one run, on the legacy default stream for everyone:

  1. Launch overhead, host side: a tiny kernel (scale, 1024 floats, grid 4 x
     block 256) launched N times in a loop, then one synchronize; the figure
     is wall time / N in µs.  Contenders, interleaved over --repeat rounds
     (median of the rounds):
       ours       k[4, 256](x, y, 2.0, n) with CuPy arrays and Python numbers
       cuda.core  launch(stream, config, kernel, px, py, np.float32(a), np.int32(n))
                  on the SAME cubin; config and pointers prepared once
       CuPy       f((4,), (256,), (x, y, cp.float32(a), cp.int32(n))) from
                  cp.RawModule(code=src, options=("--use_fast_math",))
     goals: ours / cuda.core <= 1.15, ours / CuPy <= 1.0.
     Also ours with PyTorch tensors, and with NumPy arrays (which copy to the
     GPU and back and synchronize each launch), with no baseline and no goal.
  2. Bandwidth: a grid-stride float4 copy of a 4 GiB buffer into another
     through k[...] vs the same cubin loaded with cuLibraryLoadData and
     launched with cuLaunchKernel (parameters packed by hand with ctypes).
     Each launch is timed with CUDA events, ours and raw interleaved.  GB/s
     counts 4 GiB read + 4 GiB written per launch (1 GB = 1e9 bytes).
     goal: ours / raw >= 0.97.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import cuda_magic  # noqa: E402
from cuda_magic.cell import build, line_config  # noqa: E402
from common import SCALE, version  # noqa: E402

COPY = r'''
extern "C" __global__ void copy(const float4* __restrict__ x, float4* __restrict__ y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = x[i];
}
'''

N, GRID, BLOCK, A = 1024, 4, 256, 2.0


def facts(cp) -> None:
    props = cp.cuda.runtime.getDeviceProperties(0)
    drv = cp.cuda.runtime.driverGetVersion()
    print(f"device  {props['name'].decode()} ({cuda_magic.detect_arch()}), "
          f"{props['multiProcessorCount']} SMs, {props['totalGlobalMem'] / 2**30:.0f} GiB; "
          f"driver CUDA {drv // 1000}.{drv % 1000 // 10}")
    print(f"python  {platform.python_version()}   numpy {np.__version__}   cupy {cp.__version__}   "
          f"cuda.core {version('cuda.core', 'not installed')}   "
          f"cuda.bindings {version('cuda.bindings', 'not installed')}   "
          f"torch {version('torch', 'not installed')}   NVRTC {cuda_magic.get_backend('nvrtc').version()}")
    print()


# --- 1. launch overhead ---------------------------------------------------------------------

def cuda_core_api():
    """cuda.core's launch API (1.x at the top level; 0.x under .experimental)."""
    try:
        import cuda.core as cc
        from cuda.core import Device, LaunchConfig, ObjectCode, launch
    except ImportError:
        import cuda.core.experimental as cc
        from cuda.core.experimental import Device, LaunchConfig, ObjectCode, launch
    return cc, Device, LaunchConfig, ObjectCode, launch


def cupy_function(cp, cubin: bytes):
    """CuPy's RawModule from the source (as the brief says); from our cubin if that fails."""
    try:
        mod = cp.RawModule(code=SCALE, options=("--use_fast_math",))
        return mod.get_function("scale"), "cp.RawModule(code=src)"
    except Exception as exc:  # CuPy's NVRTC missing or too old for this GPU
        path = os.path.join(tempfile.mkdtemp(prefix="bench-launch-"), "scale.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        mod = cp.RawModule(path=path)
        return mod.get_function("scale"), f"cp.RawModule(path=our cubin) ({type(exc).__name__})"


def per_launch_us(loop, n: int, sync) -> float:
    """Wall time of ``loop(n)`` (n launches) plus one synchronize, per launch, in µs."""
    sync()
    start = time.perf_counter()
    loop(n)
    sync()
    return (time.perf_counter() - start) / n * 1e6


def launch_overhead(cp, arch: str, launches: int, repeat: int) -> list[tuple]:
    cc, Device, LaunchConfig, ObjectCode, launch = cuda_core_api()
    m = build(SCALE, line_config(arch=arch))
    k = m.scale.load()
    cubin = m.result.binary
    x = cp.arange(N, dtype=cp.float32)
    y = cp.zeros_like(x)
    n, a = N, A
    sync = cp.cuda.runtime.deviceSynchronize

    # cuda.core: same cubin, legacy default stream, everything prepared once
    dev = Device(0)
    dev.set_current()
    stream = getattr(cc, "LEGACY_DEFAULT_STREAM", None) or dev.default_stream
    cc_kernel = ObjectCode.from_cubin(cubin).get_kernel("scale")
    config = LaunchConfig(grid=GRID, block=BLOCK)
    px, py = x.data.ptr, y.data.ptr

    f, cupy_how = cupy_function(cp, cubin)

    def ours(count):
        for _ in range(count):
            k[GRID, BLOCK](x, y, a, n)

    def core(count):
        for _ in range(count):
            launch(stream, config, cc_kernel, px, py, np.float32(a), np.int32(n))

    def cupy(count):
        for _ in range(count):
            f((GRID,), (BLOCK,), (x, y, cp.float32(a), cp.int32(n)))

    print(f"streams: ours 0 (legacy default), cuda.core {type(stream).__name__} handle "
          f"{int(stream.handle)} ({'LEGACY_DEFAULT_STREAM' if hasattr(cc, 'LEGACY_DEFAULT_STREAM') else 'default_stream'}), "
          f"CuPy current stream {cp.cuda.get_current_stream().ptr} (0 = legacy default)")
    print(f"CuPy kernel: {cupy_how}")

    contenders = {"ours": ours, "cuda.core": core, "CuPy": cupy}
    for name, loop in contenders.items():    # each one right once, then warm
        y.fill(0)
        loop(1)
        sync()
        assert bool(cp.allclose(y, a * x)), f"{name}: wrong result"
        loop(max(launches // 10, 10))
    times = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, loop in contenders.items():
            times[name].append(per_launch_us(loop, launches, sync))
    med = {name: statistics.median(t) for name, t in times.items()}

    rows = [
        ("launch µs, CuPy arrays vs cuda.core", f"{med['ours']:.2f} µs", f"{med['cuda.core']:.2f} µs",
         med["ours"] / med["cuda.core"], "<= 1.15", med["ours"] / med["cuda.core"] <= 1.15),
        ("launch µs, CuPy arrays vs CuPy", f"{med['ours']:.2f} µs", f"{med['CuPy']:.2f} µs",
         med["ours"] / med["CuPy"], "<= 1.00", med["ours"] / med["CuPy"] <= 1.0),
    ]

    # ours with PyTorch tensors (by pointer) and NumPy arrays (copies + sync per launch)
    try:
        import torch
        tx = torch.arange(N, dtype=torch.float32, device="cuda")
        ty = torch.zeros_like(tx)
        print(f"torch current stream {torch.cuda.current_stream().cuda_stream} (0 = legacy default)")

        def torch_loop(count):
            for _ in range(count):
                k[GRID, BLOCK](tx, ty, a, n)
        torch_loop(max(launches // 10, 10))
        us = statistics.median(per_launch_us(torch_loop, launches, sync) for _ in range(repeat))
        assert torch.allclose(ty, a * tx), "torch: wrong result"
        rows.append(("launch µs, torch tensors", f"{us:.2f} µs", "-", None, "-", None))
    except ImportError:
        rows.append(("launch µs, torch tensors", "torch not installed", "-", None, "-", None))

    hx = np.arange(N, dtype=np.float32)
    hy = np.zeros_like(hx)
    n_np = max(launches // 20, 10)

    def numpy_loop(count):
        for _ in range(count):
            k[GRID, BLOCK](hx, hy, a, n)
    numpy_loop(3)
    us = statistics.median(per_launch_us(numpy_loop, n_np, sync) for _ in range(repeat))
    assert np.allclose(hy, a * hx), "numpy: wrong result"
    rows.append(("launch µs, NumPy arrays (copies)", f"{us:.2f} µs", "-", None, "-", None))
    return rows


# --- 2. bandwidth: k[...] vs cuLaunchKernel on the same cubin --------------------------------

def copy_bandwidth(cp, arch: str, gib: float, iters: int) -> list[tuple]:
    from cuda.bindings import driver as cu

    def ok(result):
        assert int(result[0]) == 0, result[0]
        return result[1] if len(result) > 1 else None

    nbytes = int(gib * 2**30) // 16 * 16
    n4 = nbytes // 16
    x = cp.arange(nbytes // 4, dtype=cp.float32)
    y = cp.zeros_like(x)
    dev = cp.cuda.Device()
    grid = dev.attributes["MultiProcessorCount"] * (dev.attributes["MaxThreadsPerMultiProcessor"] // 256)
    block = 256

    m = build(COPY, line_config(arch=arch))
    k = m.copy.load()

    # raw: the same cubin, loaded and launched with the driver API, parameters packed by hand
    lib = ok(cu.cuLibraryLoadData(m.result.binary, None, None, 0, None, None, 0))
    kernel = ok(cu.cuLibraryGetKernel(lib, b"copy"))
    values = (ctypes.c_uint64(x.data.ptr), ctypes.c_uint64(y.data.ptr), ctypes.c_size_t(n4))
    params = (ctypes.c_void_p * 3)(*(ctypes.addressof(v) for v in values))

    def ours():
        k[grid, block](x, y, n4)

    def raw():
        ok(cu.cuLaunchKernel(kernel, grid, 1, 1, block, 1, 1, 0, 0, ctypes.addressof(params), 0))

    for name, fn in (("ours", ours), ("raw", raw)):   # each one right once
        y.fill(0)
        fn()
        cp.cuda.runtime.deviceSynchronize()
        assert bool(cp.array_equal(x, y)), f"copy ({name}): wrong result"
    for _ in range(2):
        ours(), raw()

    events = {"ours": [], "raw": []}
    for _ in range(iters):
        for name, fn in (("ours", ours), ("raw", raw)):
            start, end = ok(cu.cuEventCreate(0)), ok(cu.cuEventCreate(0))
            ok(cu.cuEventRecord(start, 0))
            fn()
            ok(cu.cuEventRecord(end, 0))
            events[name].append((start, end))
    ok(cu.cuCtxSynchronize())
    gbps = {}
    for name, pairs in events.items():
        ms = [ok(cu.cuEventElapsedTime(s, e)) for s, e in pairs]
        for s, e in pairs:
            cu.cuEventDestroy(s), cu.cuEventDestroy(e)
        gbps[name] = 2 * nbytes / (statistics.median(ms) * 1e-3) / 1e9
    cu.cuLibraryUnload(lib)
    x = y = None  # free the 8 GiB before the pool is emptied
    cp.get_default_memory_pool().free_all_blocks()

    print(f"copy: {nbytes / 2**30:g} GiB float4, grid {grid} x block {block}, {iters} launches each")
    ratio = gbps["ours"] / gbps["raw"]
    return [(f"{gib:g} GiB copy GB/s vs cuLaunchKernel", f"{gbps['ours']:.0f} GB/s",
             f"{gbps['raw']:.0f} GB/s", ratio, ">= 0.97", ratio >= 0.97)]


# --- table ----------------------------------------------------------------------------------

def table(rows) -> None:
    head = f"{'figure':<40}{'cuda_magic':>14}{'baseline':>14}{'ratio':>8}{'goal':>10}  result"
    print(head)
    print("-" * len(head))
    for name, ours, base, ratio, goal, met in rows:
        r = f"{ratio:.3f}" if ratio is not None else "-"
        res = "-" if met is None else ("PASS" if met else "MISS")
        print(f"{name:<40}{ours:>14}{base:>14}{r:>8}{goal:>10}  {res}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=None, help="rounds per contender (default 7)")
    ap.add_argument("--quick", action="store_true", help="few iterations, for a smoke test")
    ap.add_argument("--launches", type=int, default=None,
                    help="launches per timed loop (default 2000, --quick 200)")
    ap.add_argument("--copy-gib", type=float, default=4.0, help="copy buffer size (default 4 GiB)")
    args = ap.parse_args()
    repeat = args.repeat or (3 if args.quick else 7)
    launches = args.launches or (200 if args.quick else 2000)
    copy_iters = 3 if args.quick else 10

    arch = cuda_magic.detect_arch()
    if arch is None:
        print("no GPU: skipped")
        return
    try:
        import cupy as cp
    except ImportError:
        print("no CuPy: skipped (it allocates the arrays)")
        return
    facts(cp)
    rows = launch_overhead(cp, arch, launches, repeat)
    rows += copy_bandwidth(cp, arch, args.copy_gib, copy_iters)
    print()
    print(f"launch µs: median over {repeat} rounds of (wall time of {launches} launches + one sync) "
          f"/ {launches}; ratio = ours / baseline")
    print("copy: CUDA events per launch, median; GB/s = (bytes read + bytes written) / time\n")
    table(rows)


if __name__ == "__main__":
    main()
