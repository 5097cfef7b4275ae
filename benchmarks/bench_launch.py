"""What does launching through ``k[grid, block](...)`` cost next to raw launches?

    python3 benchmarks/bench_launch.py [--repeat N] [--quick] [--launches N] [--copy-gib G]
                                       [--skip-copy] [--skip-forms]
    python3 benchmarks/bench_launch.py --fake-driver [--profile]

Needs an NVIDIA GPU and CuPy; without a GPU it prints "no GPU: skipped" and
exits 0 (``--fake-driver`` runs anywhere).  Measured in one run, on the legacy
default stream for everyone:

  1. Launch overhead, host side: a kernel launched N times in a loop, then one
     synchronize; the figure is wall time / N in µs.  Two kernels, each on
     CuPy arrays and on PyTorch tensors:
       empty   empty(float* x) {}                  k[1, 256](x)
       scale   scale(const float* x, float* y, float a, int n), y = a*x (the
               4-argument "saxpy" of the issue)    k[4, 256](x, y, 2.0, 1024)
     Contenders, interleaved over --repeat rounds (median of the rounds):
       ours       k[grid, block](...) with the arrays and Python numbers
       cuda.core  launch(stream, config, kernel, ptrs..., np.float32(a), np.int32(n))
                  on the SAME cubin; config and pointers prepared once
       CuPy       f((grid,), (block,), (arrays..., cp.float32(a), cp.int32(n)))
                  from cp.RawModule(code=src); for torch tensors CuPy gets the
                  tensors themselves (CuPy reads __cuda_array_interface__)
     goals, each case: ours / CuPy <= 1.0, ours / cuda.core <= 1.15.
     Also ours with NumPy arrays (copies to the GPU and back, a synchronize
     per launch), with no baseline and no goal.
  2. Call forms (--skip-forms leaves it out): the bare driver call behind a
     launch, the empty kernel, per launch: cuda.bindings' cuLaunchKernel with a
     CUkernel or a CUfunction, the stream as int 0 or a CUstream, kernelParams
     as an int address or as a (values, types) tuple; cuLaunchKernelEx with a config
     built once; cuda.core's launch on a Kernel made from our CUkernel
     (Kernel.from_handle), the pointer as an int; CuPy's cupy.cuda.driver.launchKernel,
     every argument an int (what the launch plan calls when CuPy is loaded);
     libcuda's cuLaunchKernel through ctypes.  No goal: it says which form the
     runtime should use.
  3. Bandwidth: a grid-stride float4 copy of a 4 GiB buffer into another
     through k[...] vs the same cubin loaded with cuLibraryLoadData and
     launched with cuLaunchKernel (parameters packed by hand with ctypes).
     Each launch is timed with CUDA events, ours and raw interleaved.  GB/s
     counts 4 GiB read + 4 GiB written per launch (1 GB = 1e9 bytes).
     goal: ours / raw >= 0.97.

--fake-driver: no GPU needed.  driver.api() is replaced by a stub whose
cuLaunchKernel does nothing (benchmarks/fake_driver.py), CuPy's launchKernel
(which the plan calls where CuPy is loaded, as in the GPU run) by a stub too,
and the arrays by objects that read like CuPy's and PyTorch's; it prints µs
per launch of our Python path (the launch path's own cost, the stub's call
included) for the same four cases.  --profile adds a cProfile of 20000
launches of each.
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

EMPTY = r'''
extern "C" __global__ void empty(float* x) {}
'''

COPY = r'''
extern "C" __global__ void copy(const float4* __restrict__ x, float4* __restrict__ y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = x[i];
}
'''

N, GRID, BLOCK, A = 1024, 4, 256, 2.0
CASES = (("empty", EMPTY, 1, BLOCK), ("scale", SCALE, GRID, BLOCK))


def facts(cp) -> None:
    props = cp.cuda.runtime.getDeviceProperties(0)
    drv = cp.cuda.runtime.driverGetVersion()
    print(f"device  {props['name'].decode()} ({cuda_magic.detect_arch()}), "
          f"{props['multiProcessorCount']} SMs, {props['totalGlobalMem'] / 2**30:.0f} GiB; "
          f"driver CUDA {drv // 1000}.{drv % 1000 // 10}; {os.cpu_count()} CPUs")
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


def cupy_function(cp, src: str, name: str, cubin: bytes):
    """CuPy's RawModule from the source; from our cubin if that fails."""
    try:
        mod = cp.RawModule(code=src, options=("--use_fast_math",))
        return mod.get_function(name), "cp.RawModule(code=src)"
    except Exception as exc:  # CuPy's NVRTC missing or too old for this GPU
        path = os.path.join(tempfile.mkdtemp(prefix="bench-launch-"), f"{name}.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        mod = cp.RawModule(path=path)
        return mod.get_function(name), f"cp.RawModule(path=our cubin) ({type(exc).__name__})"


def per_launch_us(loop, n: int, sync) -> float:
    """Wall time of ``loop(n)`` (n launches) plus one synchronize, per launch, in µs."""
    sync()
    start = time.perf_counter()
    loop(n)
    sync()
    return (time.perf_counter() - start) / n * 1e6


def _arrays(cp, torch, kind: str):
    """x (arange) and y (zeros), float32, of N elements: CuPy arrays or torch tensors."""
    if kind == "CuPy":
        x = cp.arange(N, dtype=cp.float32)
        return x, cp.zeros_like(x)
    x = torch.arange(N, dtype=torch.float32, device="cuda")
    return x, torch.zeros_like(x)


def _ptr(a) -> int:
    return a.data.ptr if hasattr(a, "data") and hasattr(a.data, "ptr") else a.data_ptr()


def launch_overhead(cp, arch: str, launches: int, repeat: int) -> list[tuple]:
    cc, Device, LaunchConfig, ObjectCode, launch = cuda_core_api()
    try:
        import torch
    except ImportError:
        torch = None
    sync = cp.cuda.runtime.deviceSynchronize
    dev = Device(0)
    dev.set_current()
    stream = getattr(cc, "LEGACY_DEFAULT_STREAM", None) or dev.default_stream
    print(f"streams: ours 0 (legacy default), cuda.core {type(stream).__name__} handle "
          f"{int(stream.handle)}, CuPy current stream {cp.cuda.get_current_stream().ptr} "
          f"(0 = legacy default)")
    from cuda_magic.runtime import Kernel
    from cuda_magic.runtime.launch import kernel as kmod
    rows = []
    for name, src, grid, block in CASES:
        m = build(src, line_config(arch=arch))
        k = m[name].load()
        # the same kernel again, its plan ending in cuda.bindings' cuLaunchKernel, as in a
        # process without CuPy (ours ends in CuPy's launchKernel, CuPy being loaded here)
        proto = m[name]
        kb = Kernel(proto.name, proto.params, proto.result, proto.symbol, False).load()
        with cuda_magic.settings.override(plan_launch="bindings"):
            kb[grid, block]                 # its plan is written now
        cubin = m.result.binary
        cc_kernel = ObjectCode.from_cubin(cubin).get_kernel(name)
        config = LaunchConfig(grid=grid, block=block)
        f, cupy_how = cupy_function(cp, src, name, cubin)
        print(f"{name}: CuPy kernel {cupy_how}")
        for kind in ("CuPy", "torch"):
            if kind == "torch" and torch is None:
                rows.append((f"{name}, torch tensors", "torch not installed", "-", None, "-", None))
                continue
            x, y = _arrays(cp, torch, kind)
            px, py = _ptr(x), _ptr(y)
            a, n = A, N
            cx, cy, how = x, y, ""
            if kind == "torch":           # CuPy takes __cuda_array_interface__ objects; else views
                try:
                    f((1,), (1,), (x,) if name == "empty" else (x, y, cp.float32(a), cp.int32(0)))
                except Exception:
                    cx, cy, how = cp.asarray(x), cp.asarray(y), " (CuPy on cp.asarray views)"
            if name == "empty":
                def ours(count, k=k, x=x):
                    for _ in range(count):
                        k[1, BLOCK](x)

                def ours_b(count, k=kb, x=x):
                    for _ in range(count):
                        k[1, BLOCK](x)

                def core(count, px=px):
                    for _ in range(count):
                        launch(stream, config, cc_kernel, px)

                def cupy(count, x=cx):
                    for _ in range(count):
                        f((1,), (BLOCK,), (x,))
                check = None
            else:
                def ours(count, k=k, x=x, y=y):
                    for _ in range(count):
                        k[GRID, BLOCK](x, y, a, n)

                def ours_b(count, k=kb, x=x, y=y):
                    for _ in range(count):
                        k[GRID, BLOCK](x, y, a, n)

                def core(count, px=px, py=py):
                    for _ in range(count):
                        launch(stream, config, cc_kernel, px, py, np.float32(a), np.int32(n))

                def cupy(count, x=cx, y=cy):
                    for _ in range(count):
                        f((GRID,), (BLOCK,), (x, y, cp.float32(a), cp.int32(n)))

                def check(y=y, x=x):
                    return bool((y == a * x).all())
            contenders = {"ours": ours, "ours, cuLaunchKernel": ours_b, "cuda.core": core, "CuPy": cupy}
            for who, loop in contenders.items():    # each one right once, then warm
                y.fill_(0) if kind == "torch" else y.fill(0)
                loop(1)
                sync()
                assert check is None or check(), f"{name} {kind} {who}: wrong result"
                loop(max(launches // 10, 10))
            times = {who: [] for who in contenders}
            for _ in range(repeat):
                for who, loop in contenders.items():
                    times[who].append(per_launch_us(loop, launches, sync))
            med = {who: statistics.median(t) for who, t in times.items()}
            label = f"{name}, {kind} {'arrays' if kind == 'CuPy' else 'tensors'}"
            if how:
                print(f"{label}:{how}")
            print(f"{label}: our plan ends in {k._bound[2].via!r} (the second, "
                  f"{kb._bound[2].via!r})")
            rows.append((f"{label} vs CuPy", f"{med['ours']:.2f} µs", f"{med['CuPy']:.2f} µs",
                         med["ours"] / med["CuPy"], "<= 1.00", med["ours"] / med["CuPy"] <= 1.0))
            rows.append((f"{label} vs cuda.core", f"{med['ours']:.2f} µs",
                         f"{med['cuda.core']:.2f} µs", med["ours"] / med["cuda.core"], "<= 1.15",
                         med["ours"] / med["cuda.core"] <= 1.15))
            ob = med["ours, cuLaunchKernel"]
            for base in ("CuPy", "cuda.core"):   # no goal: what a process without CuPy gets
                rows.append((f"  via cuLaunchKernel vs {base}", f"{ob:.2f} µs",
                             f"{med[base]:.2f} µs", ob / med[base], "-", None))

    # ours with NumPy arrays (copies + a synchronize per launch): no baseline
    k = build(SCALE, line_config(arch=arch))["scale"]
    hx = np.arange(N, dtype=np.float32)
    hy = np.zeros_like(hx)
    n_np = max(launches // 20, 10)

    def numpy_loop(count):
        for _ in range(count):
            k[GRID, BLOCK](hx, hy, A, N)
    numpy_loop(3)
    us = statistics.median(per_launch_us(numpy_loop, n_np, sync) for _ in range(repeat))
    assert np.allclose(hy, A * hx), "numpy: wrong result"
    rows.append(("scale, NumPy arrays (copies)", f"{us:.2f} µs", "-", None, "-", None))
    return rows


# --- 2. the bare driver call, in its forms ---------------------------------------------------

def call_forms(cp, arch: str, launches: int, repeat: int) -> None:
    from cuda.bindings import driver as cu

    def ok(result):
        assert int(result[0]) == 0, result[0]
        return result[1]

    x = cp.zeros(N, dtype=cp.float32)          # CuPy makes the primary context current
    m = build(EMPTY, line_config(arch=arch))
    lib = ok(cu.cuLibraryLoadData(m.result.binary, None, None, 0, None, None, 0))
    kernel = ok(cu.cuLibraryGetKernel(lib, b"empty"))
    func = ok(cu.cuKernelGetFunction(kernel))
    value = ctypes.c_uint64(x.data.ptr)
    params = (ctypes.c_void_p * 1)(ctypes.addressof(value))
    addr = ctypes.addressof(params)
    s0 = cu.CUstream(0)
    launch = cu.cuLaunchKernel
    libcuda = ctypes.CDLL("libcuda.so.1")
    typed = ctypes.CDLL("libcuda.so.1").cuLaunchKernel     # a function object of its own
    typed.restype = ctypes.c_int
    typed.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    raw = libcuda.cuLaunchKernel
    raw.restype = ctypes.c_int
    hk, hf, hp = ctypes.c_void_p(int(kernel)), ctypes.c_void_p(int(func)), ctypes.c_void_p(addr)
    pre_k = (kernel, 1, 1, 1, BLOCK, 1, 1, 0, s0, addr, 0)
    cfg = cu.CUlaunchConfig()                  # cuLaunchKernelEx's config, built once
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = 1, 1, 1
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = BLOCK, 1, 1
    cfg.sharedMemBytes, cfg.hStream, cfg.numAttrs = 0, s0, 0
    launch_ex = cu.cuLaunchKernelEx
    cc, _, LaunchConfig, _, cc_launch = cuda_core_api()   # cuda.core over our CUkernel, as the plan
    cc_kernel = cc.Kernel.from_handle(int(kernel))
    cc_stream, cc_config, ptr = cc.Stream.from_handle(0), LaunchConfig(grid=1, block=BLOCK), x.data.ptr
    cupy_launch, ifunc = cp.cuda.driver.launchKernel, int(func)    # what the plan calls with CuPy

    def loop_of(call):
        def loop(count):
            for _ in range(count):
                call()
        return loop
    forms = {
        "bindings: CUkernel, stream 0, params int": lambda: launch(kernel, 1, 1, 1, BLOCK, 1, 1, 0, 0, addr, 0),
        "bindings: CUkernel, CUstream, params int": lambda: launch(kernel, 1, 1, 1, BLOCK, 1, 1, 0, s0, addr, 0),
        "bindings: as above, one prebuilt *tuple": lambda: launch(*pre_k),
        "bindings: CUfunction, CUstream, params int": lambda: launch(func, 1, 1, 1, BLOCK, 1, 1, 0, s0, addr, 0),
        "bindings: cuLaunchKernelEx, CUfunction": lambda: launch_ex(cfg, func, addr, 0),
        "cuda.core launch: our CUkernel, stream 0": lambda: cc_launch(cc_stream, cc_config, cc_kernel, ptr),
        "CuPy launchKernel: CUfunction, all ints": lambda: cupy_launch(ifunc, 1, 1, 1, BLOCK, 1, 1, 0, 0, addr, 0),
        "bindings: CUkernel, params (values, types)": lambda: launch(
            kernel, 1, 1, 1, BLOCK, 1, 1, 0, s0, ((x.data.ptr,), (ctypes.c_void_p,)), 0),
        "ctypes, argtypes set: CUkernel": lambda: typed(int(kernel), 1, 1, 1, BLOCK, 1, 1, 0, 0, addr, None),
        "ctypes, c_void_p handles: CUkernel": lambda: raw(hk, 1, 1, 1, BLOCK, 1, 1, 0, None, hp, None),
        "ctypes, c_void_p handles: CUfunction": lambda: raw(hf, 1, 1, 1, BLOCK, 1, 1, 0, None, hp, None),
    }
    sync = cp.cuda.runtime.deviceSynchronize
    for call in forms.values():
        r = call()
        assert r is None or int(r[0] if isinstance(r, tuple) else r) == 0, r   # None: raises instead
        loop_of(call)(max(launches // 10, 10))
    times = {name: [] for name in forms}
    for _ in range(repeat):
        for name, call in forms.items():
            times[name].append(per_launch_us(loop_of(call), launches, sync))
    print(f"{'bare driver call, empty kernel':<48}{'µs/launch':>10}")
    for name, t in times.items():
        print(f"{name:<48}{statistics.median(t):>10.2f}")
    print()
    cu.cuLibraryUnload(lib)


# --- 3. bandwidth: k[...] vs cuLaunchKernel on the same cubin --------------------------------

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


# --- --fake-driver: the Python path alone, no GPU ---------------------------------------------

def fake_driver(launches: int, repeat: int, profile: bool) -> None:
    import fake_driver as fd
    from cuda_magic import settings
    ints = settings.plan_launch == "auto"   # as on a GPU with CuPy loaded: CuPy's launchKernel
    via = "CuPy's launchKernel" if ints else "cuda.bindings' cuLaunchKernel"
    fake = fd.install(ints=ints)
    try:
        loops = {}
        for name, src, grid, block in CASES:
            k = build(src, line_config(arch="sm_90"))[name]
            fake.register(k)
            for kind, make in (("CuPy", fd.FakeCupy), ("torch", fd.FakeTorch)):
                x, y = make(0x7F0000000000), make(0x7F0000001000)
                if name == "empty":
                    def loop(count, k=k, x=x):
                        for _ in range(count):
                            k[1, BLOCK](x)
                else:
                    def loop(count, k=k, x=x, y=y):
                        for _ in range(count):
                            k[GRID, BLOCK](x, y, A, N)
                loops[f"{name}, {kind}-like arrays"] = loop
        stub = fake.cuLaunchKernel

        def bare(count):
            for _ in range(count):
                stub(0x4000, 1, 1, 1, BLOCK, 1, 1, 0, 0, 0x1000, 0)

        def nothing(count):
            for _ in range(count):
                pass
        loops["the stub's cuLaunchKernel alone"] = bare
        loops["an empty loop"] = nothing
        for loop in loops.values():
            loop(launches // 10 + 1)
        times = {name: [] for name in loops}
        for _ in range(repeat):
            for name, loop in loops.items():
                start = time.perf_counter()
                loop(launches)
                times[name].append((time.perf_counter() - start) / launches * 1e6)
        print(f"fake driver (no GPU): {platform.python_version()}, {os.cpu_count()} CPUs; "
              f"median of {repeat} rounds of {launches} launches; the plan ends in a stub of "
              f"{via}\n")
        print(f"{'k[grid, block](...), Python path':<44}{'µs/launch':>10}")
        print("-" * 54)
        for name, t in times.items():
            print(f"{name:<44}{statistics.median(t):>10.3f}")
        if profile:
            import cProfile
            import pstats
            for name in list(loops)[:4]:
                print(f"\ncProfile, 20000 launches: {name}")
                pr = cProfile.Profile()
                pr.enable()
                loops[name](20000)
                pr.disable()
                pstats.Stats(pr).sort_stats("tottime").print_stats(8)
    finally:
        fd.uninstall(fake)


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
    ap.add_argument("--skip-copy", action="store_true", help="leave out the bandwidth figure")
    ap.add_argument("--skip-forms", action="store_true", help="leave out the driver call forms")
    ap.add_argument("--fake-driver", action="store_true",
                    help="no GPU: time our Python launch path against a stub driver")
    ap.add_argument("--profile", action="store_true", help="with --fake-driver: a cProfile too")
    args = ap.parse_args()
    repeat = args.repeat or (3 if args.quick else 7)
    launches = args.launches or (200 if args.quick else 2000)
    copy_iters = 3 if args.quick else 10

    if args.fake_driver:
        fake_driver(launches * 10 if not args.launches else launches, repeat, args.profile)
        return
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
    if not args.skip_forms:
        call_forms(cp, arch, launches, repeat)
    rows = launch_overhead(cp, arch, launches, repeat)
    if not args.skip_copy:
        rows += copy_bandwidth(cp, arch, args.copy_gib, copy_iters)
    print()
    print(f"launch µs: median over {repeat} rounds of (wall time of {launches} launches + one sync) "
          f"/ {launches}; ratio = ours / baseline")
    if not args.skip_copy:
        print("copy: CUDA events per launch, median; GB/s = (bytes read + bytes written) / time")
    print()
    table(rows)


if __name__ == "__main__":
    main()
