"""What does a polled wait cost next to the driver's blocking one?

    python3 benchmarks/bench_wait.py [--repeat N]

Every wait cuda-magic does polls (runtime/hang/waiting.py) so that Ctrl-C works and a hang
becomes KernelHangError.  This measures what that costs on short waits: a kernel that spins
for a given time (``%globaltimer``), launched and then waited for, N times, interleaved:

  driver   cuLaunchKernel, then cuStreamSynchronize (blocks in the driver)
  polled   cuLaunchKernel, then waiting.stream (cuStreamQuery polls, then the same call)

The figure is wall time per launch + wait, median of N; the cost is polled - driver in µs
and the ratio polled / driver (goal, each kernel time: at most 2 µs added, or a ratio of at
most 1.05: a Python call to cuda.bindings costs about 1 µs, so that is one or two queries).  Needs an NVIDIA GPU;
without one it prints "no GPU: skipped" and exits 0.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time

SRC = r'''
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
'''
TIMES_US = (0, 10, 100, 1000, 10000)
GOAL, GOAL_US = 1.05, 2.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args(argv)
    from cuda_magic import build, detect_arch
    arch = detect_arch()
    if arch is None:
        print("no GPU: skipped")
        return 0
    from cuda_magic.runtime import driver
    from cuda_magic.runtime.hang import waiting
    k = build(SRC, {"arch": arch}).kernels["spin"]
    k.load()
    drv = driver.api()
    handle = k._bound[1]
    value = ctypes.c_ulonglong(0)
    ptrs = (ctypes.c_void_p * 1)(ctypes.addressof(value))
    params = ctypes.addressof(ptrs)

    def launch():
        driver.check(drv.cuLaunchKernel(handle, 1, 1, 1, 32, 1, 1, 0, 0, params, 0), "launch")

    def blocking():
        launch()
        driver.check(drv.cuStreamSynchronize(0), "cuStreamSynchronize")

    def polled():
        launch()
        waiting.stream(0)

    rows = []
    print(f"{'kernel time':>12} {'driver':>12} {'polled':>12} {'added':>10} {'polled/driver':>14}"
          f" {'goal':>6}")
    for us in TIMES_US:
        value.value = us * 1000
        for _ in range(5):
            blocking()
            polled()
        a, b = [], []
        n = max(10, min(args.repeat, int(2e6 / max(us, 1))))
        for _ in range(n):
            t = time.perf_counter()
            blocking()
            a.append(time.perf_counter() - t)
            t = time.perf_counter()
            polled()
            b.append(time.perf_counter() - t)
        da, db = statistics.median(a) * 1e6, statistics.median(b) * 1e6
        ratio = db / da
        ok = ratio <= GOAL or db - da <= GOAL_US
        rows.append(ok)
        print(f"{us:>9} us {da:>9.1f} us {db:>9.1f} us {db - da:>7.1f} us {ratio:>14.3f} "
              f"{'PASS' if ok else 'MISS':>6}")
    print(f"{sum(rows)} of {len(rows)} kernel times within the goal (<= {GOAL_US:g} us added or "
          f"<= {GOAL}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
