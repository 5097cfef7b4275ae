"""Do our timings agree with Nsight Compute's? k.bench vs ncu's gpu__time_duration vs plain events.

    python3 benchmarks/bench_timing.py [--quick] [--repeat N] [--mib M] [--fake-driver]

Three kernels from one cell, each on M MiB of floats (default 256: far beyond the L2), side
by side in one run on one machine:

  copy       y[i] = x[i]
  saxpy      y[i] = a * x[i] + y[i], grid-stride
  reduction  a shared-memory block sum, then one atomicAdd per block

Columns (times in µs, medians):

  bench      k.bench(..., flush=True): the L2 flushed before each timed launch
  events     k.bench(..., flush=False): back-to-back launches between CUDA events only
  ncu        k.profile(...).duration_us: gpu__time_duration.sum of one launch, clocks locked
             to base (ncu's default), caches flushed (ncu's default)
  ncu/free   the same with clock_control="none" (the clocks the GPU picks; left out by --quick)
  bench/ncu  the ratio (goal for the copy kernel: within 10%)

Needs an NVIDIA GPU (otherwise prints "no GPU: skipped" and exits 0); without ncu the ncu
columns say why they are empty.  --fake-driver runs the bench columns on the stub driver of
benchmarks/fake_driver.py, with made-up times and no ncu (it checks the script, not a GPU).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import cuda_magic  # noqa: E402
from common import BIG  # noqa: E402
from cuda_magic.cell import build  # noqa: E402

# copy, plus common.BIG's saxpy and block_sum (called "reduction" in the tables), without its //|
CELL = r'''
extern "C" __global__ void copy(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
''' + "\n".join(line for line in BIG.replace("block_sum", "reduction").splitlines()
                if not line.startswith("//|"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="64 MiB, base clocks only")
    ap.add_argument("--repeat", type=int, default=50, help="timed launches per bench")
    ap.add_argument("--mib", type=int, default=256, help="MiB of floats per array")
    ap.add_argument("--fake-driver", action="store_true",
                    help="no GPU: the stub driver, made-up times, no ncu (checks the script runs)")
    a = ap.parse_args()
    if a.fake_driver:
        import fake_driver
        fake_driver.install_timing()
        print("fake driver (no GPU): the times below are made up")
    arch = "sm_90a" if a.fake_driver else cuda_magic.detect_arch()
    if arch is None:
        print("no GPU: skipped")
        return 0
    from cuda_magic import tools as finder
    from cuda_magic.runtime.measure import peaks
    from cuda_magic.runtime.nsight import run as tools
    try:
        if a.fake_driver:
            raise finder.ToolNotFoundError("the fake driver runs no ncu")
        ncu = finder.find("ncu")
    except finder.ToolNotFoundError as exc:
        ncu, why = None, str(exc)
    mib = 64 if a.quick and a.mib == 256 else a.mib
    n = mib * 2**20 // 4
    m = build(CELL, {"arch": arch})
    x = np.random.rand(n).astype(np.float32)
    y = np.zeros(n, np.float32)
    out = np.zeros(1, np.float32)
    try:
        dev = peaks.device_info()
        sms, name = dev.sms, dev.name
    except Exception:
        sms, name = 132, "?"
    runs = {
        "copy": ((n + 255) // 256, 256, (x, y, n)),
        "saxpy": (sms * 8, 256, (n, 2.0, x, y)),
        "reduction": (sms * 8, 256, (x, out, n)),
    }
    print(f"device  {name} ({arch}), {sms} SMs; python {platform.python_version()}; "
          f"{tools._version(ncu) if ncu else 'no ncu'}")
    print(f"arrays  {mib} MiB of floats each; bench: median of {a.repeat} launches")
    print()
    head = ["kernel", "bench", "events", "ncu", "ncu/free", "bench/ncu", "events/ncu"]
    rows = []
    for name_, (grid, block, args) in runs.items():
        k = m.kernels[name_]
        bench = k.bench(grid, block, *args, flush=True, repeat=a.repeat).median_ms * 1e3
        events = k.bench(grid, block, *args, flush=False, repeat=a.repeat).median_ms * 1e3
        base = free = None
        if ncu:
            base = k.profile(grid, block, *args).duration_us
            if not a.quick:
                free = k.profile(grid, block, *args, clock_control="none").duration_us
        rows.append([name_, f"{bench:.1f}", f"{events:.1f}",
                     f"{base:.1f}" if base else "-", f"{free:.1f}" if free else "-",
                     f"{bench / base:.3f}" if base else "-", f"{events / base:.3f}" if base else "-"])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    print()
    if ncu is None:
        print(f"ncu columns skipped: {why}")
    else:
        print("times in µs; ncu: one launch under Nsight Compute (clocks locked to base, caches "
              "flushed); ncu/free: clock_control='none'")
        print(f"reports in {tools.report_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
