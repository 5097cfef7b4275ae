"""What does an intra-kernel timeline cost?

    python3 benchmarks/bench_timeline.py [--repeat N] [--events N]

1. The builds (no GPU): a marked loop and the marked pipeline of tests/kernels, ordinary and
   instrumented (``-DCUDA_MAGIC_TIMELINE``): registers, static shared memory and SASS
   instructions, side by side; the ordinary build's SASS equals the unmarked source's.
2. On the GPU, each launch timed with CUDA events (median of N, the timeline's state set with a
   fresh nonce before each instrumented launch, as ``k.timeline`` does):
   - ns per event: ``marked_loop`` records E events per warp (``CM_MARK`` in a loop around an
     FMA), instrumented vs ordinary; (instrumented - ordinary) / E, at one warp per SM (the
     latency a warp pays per event) and at 32 warps per SM (what an SM pays, events of many
     warps in flight);
   - the slowdown of a real kernel: the pipeline (``staged_scale``: 4 to 14 events per warp and
     tile), instrumented / ordinary;
   - %globaltimer's resolution on this GPU (``k.timeline``'s probe).
Without a GPU part 2 prints "no GPU: the timing rows are skipped".
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOOP = r'''
#include <cuda_magic/timeline.h>
extern "C" __global__ void marked_loop(float* out, int n) {
    float v = threadIdx.x;
    for (int i = 0; i < n; ++i) {
        CM_MARK("tick");
        v = v * 0.999f + 1.0f;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
'''
ROW = "{:<40} {:>14} {:>14} {:>12} {:>12}"


def _sass_count(result, kernel: str) -> int:
    from cuda_magic import sass
    return len(re.findall(r"/\*[0-9a-f]{4}\*/\s+[^;]*;", sass(result, kernel)))


def builds(arch: str) -> list[tuple]:
    """(kernel, figure, ordinary, instrumented) rows of part 1."""
    from cuda_magic import compile_source
    from cuda_magic.runtime.measure.timeline.build import instrumented
    pipeline = open(os.path.join(ROOT, "tests", "kernels", "timeline_pipeline.cu")).read()
    rows = []
    for src, kernel in ((LOOP, "marked_loop"), (pipeline, "staged_scale")):
        plain = compile_source(src, {"cuda": {"arch": arch}})
        built = instrumented(plain, kernel)
        a, b = plain.resources[kernel], built.resources[kernel]
        rows += [(kernel, "registers", a.registers, b.registers),
                 (kernel, "static shared bytes", a.shared, b.shared),
                 (kernel, "SASS instructions", _sass_count(plain, kernel), _sass_count(built, kernel))]
    return rows


def print_builds(rows) -> None:
    print("1. builds (ordinary vs instrumented)")
    print(ROW.format("figure", "ordinary", "timeline", "added", "ratio"))
    print("-" * 96)
    for kernel, figure, a, b in rows:
        print(ROW.format(f"{kernel}: {figure}", f"{a:,}", f"{b:,}", f"{b - a:+,}",
                         f"{b / a:.2f}x" if a else "-"))


def print_timing(rows, tick) -> None:
    print("2. on the GPU (median of the launches, CUDA events)")
    print(ROW.format("figure", "ordinary", "timeline", "added", "per event"))
    print("-" * 96)
    for name, a, b, events in rows:
        per = f"{(b - a) * 1e3 / events:.1f} ns" if events else f"{b / a:.2f}x"
        print(ROW.format(name, f"{a:.2f} µs", f"{b:.2f} µs", f"{b - a:+.2f} µs", per))
    print(f"%globaltimer resolution: {tick} ns" if tick else "%globaltimer resolution: unknown")


class _Launcher:
    """Launches of one loaded kernel on the legacy stream, each timed with two CUDA events."""

    def __init__(self, kernel):
        from cuda_magic.runtime import driver
        kernel.load()
        self.drv, self.check, self.handle = driver.api(), driver.check, kernel._bound[1]
        self.start = self.check(self.drv.cuEventCreate(0), "cuEventCreate")
        self.end = self.check(self.drv.cuEventCreate(0), "cuEventCreate")

    def time_us(self, grid, block, values, before=None) -> float:
        """One launch with ``values`` (ctypes scalars), in µs; ``before()`` runs first."""
        ptrs = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
        if before:
            before()
        d = self.drv
        self.check(d.cuEventRecord(self.start, 0), "cuEventRecord")
        self.check(d.cuLaunchKernel(self.handle, *grid, *block, 0, 0, ctypes.addressof(ptrs), 0),
                   "cuLaunchKernel")
        self.check(d.cuEventRecord(self.end, 0), "cuEventRecord")
        self.check(d.cuEventSynchronize(self.end), "cuEventSynchronize")
        return self.check(d.cuEventElapsedTime(self.start, self.end), "cuEventElapsedTime") * 1e3


def _pair(plain, built, grid, block, values, repeat, warps, capacity):
    """(ordinary µs, instrumented µs), medians, launches interleaved."""
    from cuda_magic.runtime import Kernel, driver
    from cuda_magic.runtime.measure.timeline import recording
    name = plain.name
    ik = Kernel(name, plain.params, built, plain.symbol, False)
    a, b = _Launcher(plain), _Launcher(ik)
    lib = driver.load(built.key, built.binary, built.format, built.arch)
    where = recording.state_address(lib, name)
    drv = driver.api()
    counts = driver.check(drv.cuMemAlloc(warps * 4), "cuMemAlloc")
    slots = driver.check(drv.cuMemAlloc(warps * capacity * 16), "cuMemAlloc")
    try:
        def arm():
            recording.set_state(where, int(slots), int(counts), capacity)
        ta, tb = [], []
        for i in range(repeat + 3):
            x, y = a.time_us(grid, block, values), b.time_us(grid, block, values, arm)
            if i >= 3:                                    # the first launches warm up
                ta.append(x)
                tb.append(y)
        return statistics.median(ta), statistics.median(tb)
    finally:
        drv.cuMemFree(counts)
        drv.cuMemFree(slots)


def timing(arch: str, repeat: int, events: int):
    import numpy as np
    from cuda_magic import build
    from cuda_magic.runtime import driver
    from cuda_magic.runtime.measure.timeline import recording
    from cuda_magic.runtime.measure.timeline.build import instrumented
    drv = driver.api()
    sms = recording.sm_count() or 1
    rows = []
    m = build(LOOP, {"arch": arch})
    k = m.marked_loop
    built = instrumented(k.result, "marked_loop")
    out = driver.check(drv.cuMemAlloc(sms * 1024 * 4), "cuMemAlloc")
    try:
        for label, block in (("1 warp/SM", 32), ("32 warps/SM", 1024)):
            values = [ctypes.c_uint64(int(out)), ctypes.c_int32(events)]
            a, b = _pair(k, built, (sms, 1, 1), (block, 1, 1), values, repeat, sms * block // 32,
                         events)
            rows.append((f"marked_loop, {events} events, {label}", a, b, events))
    finally:
        drv.cuMemFree(out)
    pipeline = open(os.path.join(ROOT, "tests", "kernels", "timeline_pipeline.cu")).read()
    p = build(pipeline, {"arch": arch}).staged_scale
    blocks, per_block = 4 * sms, 8
    n = blocks * per_block * 1024
    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    px = driver.check(drv.cuMemAlloc(x.nbytes), "cuMemAlloc")
    py = driver.check(drv.cuMemAlloc(x.nbytes), "cuMemAlloc")
    try:
        driver.check(drv.cuMemcpyHtoD(px, x.ctypes.data, x.nbytes), "cuMemcpyHtoD")
        values = [ctypes.c_uint64(int(px)), ctypes.c_uint64(int(py)), ctypes.c_float(0.5),
                  ctypes.c_int32(per_block)]
        a, b = _pair(p, instrumented(p.result, "staged_scale"), (blocks, 1, 1), (128, 1, 1),
                     values, repeat, blocks * 4, 4 * per_block + 2)
        rows.append((f"staged_scale, {blocks} blocks x {per_block} tiles", a, b, 0))
    finally:
        drv.cuMemFree(px)
        drv.cuMemFree(py)
    ik = type(p)(p.name, p.params, instrumented(p.result, "staged_scale"), p.symbol, False)
    tick, _ = recording.resolution(ik, ik.result)
    return rows, tick


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--events", type=int, default=1024, help="events per warp in marked_loop")
    args = ap.parse_args(argv)
    from cuda_magic import detect_arch
    arch = detect_arch()
    print_builds(builds(arch or "sm_90a"))
    print()
    if arch is None:
        print("no GPU: the timing rows are skipped")
        return 0
    rows, tick = timing(arch, args.repeat, args.events)
    print_timing(rows, tick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
