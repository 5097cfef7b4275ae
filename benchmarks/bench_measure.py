"""What do k.bench's options do on this GPU?  The figures docs/measure.md quotes, in one run.

    python3 benchmarks/bench_measure.py [--repeat N] [--drift N] [--no-ncu] [--fake-driver]

Needs an NVIDIA GPU (otherwise prints "no GPU: skipped" and exits 0); --fake-driver runs every
row on the stub driver of benchmarks/fake_driver.py, with made-up times (it checks the script,
not a GPU).  Rows, each with the figure and the ratio or fraction it is read against:

  copy 64 MiB       float4 grid-stride copy, flush on: GB/s and its fraction of the peak
                    (the peak from the driver's attributes, cuda_magic.runtime.measure.peaks)
  fma chains        8 independent fmaf chains per thread: TFLOP/s, fraction of the FP32 peak
  L2 flush          a 16 MB read (fits in the L2), flush on vs off: the ratio (expect > 1)
  launch            an empty kernel: events around each launch, queued ahead (expect a few
                    µs, not Python's ~9 µs launch time); a graph of 20 launches, per launch,
                    flush off and on (expect the graph well under the events figure)
  timers            an empty kernel, a 2 µs and a 1 ms busy wait (SM cycles): CUDA events,
                    CUPTI, a graph of 20 (events) and Nsight Compute's gpu__time_duration
                    (clock control off), and CUPTI / ncu (goal: within 5% from 2 µs on)
  A/B               the same 20 µs wait in two builds (expect: no difference), and a wait 5%
                    longer (expect: ~5% slower), each cuda_magic.ab's words
  check=            a kernel that works on its first launch only: bench alone, then with
                    check= (expect: OUTPUTS WRONG)
  history drift     one kernel benched --drift times, a comment edit between calls: the
                    largest change between consecutive calls and how many of them the
                    history marks (expect 0: an unchanged kernel is never a regression)
  history edit      the same kernel with 3x its loop: the change and its mark (regression)

The GPU tests check what a Timing holds; how fast things are is measured here, never asserted.
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

# The kernels tests/runtime/test_bench.py's GPU tests launch too.
KERNELS = r'''
extern "C" __global__ void empty() {}

extern "C" __global__ void copy(const float4* __restrict__ x, float4* __restrict__ y, int n4) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x)
        y[i] = x[i];
}

extern "C" __global__ void read_sum(const float4* __restrict__ x, float* out, int n4) {
    float s = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
        float4 v = x[i];
        s += v.x + v.y + v.z + v.w;
    }
    if (s == -1.f) out[0] = s;      // keeps the loads
}

// 8 independent FMA chains a thread: 2 * 8 * iters FLOP a thread
extern "C" __global__ void fma_chains(float* out, float a, float b, int iters) {
    float r[8];
    #pragma unroll
    for (int k = 0; k < 8; ++k) r[k] = threadIdx.x + k;
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int k = 0; k < 8; ++k) r[k] = fmaf(r[k], a, b);
    }
    float s = 0.f;
    #pragma unroll
    for (int k = 0; k < 8; ++k) s += r[k];
    if (s == -1.f) out[0] = s;
}
'''

# A busy wait of `cycles` SM cycles (EXTRA percent more), and a kernel that works only once.
WAIT = r'''
extern "C" __global__ void wait_cycles(float* out, long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles + cycles * EXTRA / 100) { }
    if (cycles < 0) out[0] = 1.f;
}
__device__ int lazy_calls;
extern "C" __global__ void lazy_scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (lazy_calls > 0) return;
    if (i < n) y[i] = a * x[i];
    __syncthreads();
    if (i == 0) lazy_calls = 1;
}
'''

# A loop whose length the edit changes (ITERS is #defined in front).
SPIN = r'''
extern "C" __global__ void spin(float* out, int n) {
    float r = threadIdx.x;
    for (int i = 0; i < n * ITERS; ++i) r = r * 0.999f + 0.5f;
    if (r == -1.f) out[0] = r;
}
'''


def us(t) -> str:
    return f"{t.median_ms * 1e3:.2f} µs"


def timer_rows(a, m, dev, cfg, rows) -> None:
    """Events, CUPTI, graph and ncu side by side; A/B verdicts; check= on a lazy kernel."""
    from cuda_magic.runtime.measure import cupti
    have_cupti = cupti.missing() is None and not a.fake_driver
    w = cuda_magic.build(f"#define EXTRA 0\n{WAIT}", cfg)
    cycles = {"2 µs wait": int(2e-6 * dev.sm_clock_khz * 1e3),
              "1 ms wait": int(1e-3 * dev.sm_clock_khz * 1e3)}
    cases = [("empty", m["empty"], ())] + [(name, w["wait_cycles"], (None, c))
                                           for name, c in cycles.items()]
    for name, k, args in cases:
        r = a.repeat if "1 ms" not in name else max(a.repeat // 5, 10)
        ev = k.bench(1, 32, *args, repeat=r, flush=False, timer="events")
        gr = k.bench(1, 32, *args, repeat=max(r // 10, 3), flush=False, graph=True, timer="events")
        figures = [f"events {us(ev)}", f"graph {us(gr)}"]
        ratio = ""
        if have_cupti:
            cu = k.bench(1, 32, *args, repeat=r, flush=False, timer="cupti")
            figures.insert(1, f"CUPTI {us(cu)}" if cu.timer == "cupti" else
                           f"CUPTI not used ({cu.notes[-1]})")
        if not a.fake_driver and not a.no_ncu:
            try:
                p = k.profile(1, 32, *args, clock_control="none")
                figures.append(f"ncu {p.duration_us:.2f} µs")
                if have_cupti and cu.timer == "cupti":
                    ratio = f"CUPTI/ncu {cu.median_ms * 1e3 / p.duration_us:.3f}"
            except Exception as exc:          # ncu missing or refused: said, the row goes on
                figures.append(f"ncu failed: {str(exc).splitlines()[0][:60]}")
        rows.append((f"timers, {name}", "; ".join(figures), ratio))

    twenty = int(20e-6 * dev.sm_clock_khz * 1e3)
    same = cuda_magic.build(f"#define EXTRA 0\n{WAIT}\n// another build", cfg)["wait_cycles"]
    five = cuda_magic.build(f"#define EXTRA 5\n{WAIT}", cfg)["wait_cycles"]
    for label, other, expect in (("A/B, same 20 µs wait", same, "expect no difference"),
                                 ("A/B, wait 5% longer", five, "expect ~5% slower")):
        res = cuda_magic.ab(w["wait_cycles"], other, 1, 32, None, twenty, flush=False)
        rows.append((label, res.words, expect))

    x = np.arange(4096, dtype=np.float32)
    y = np.zeros_like(x)
    lazy = w["lazy_scale"]
    alone = lazy.bench(16, 256, x, y, 2.0, 4096, repeat=20)
    checked = lazy.bench(16, 256, x, y, 2.0, 4096, repeat=20, check=lambda x, y, a, n: a * x)
    rows.append(("check=, lazy kernel", f"alone {us(alone)}, no complaint",
                 "with check=: " + ("OUTPUTS WRONG" if checked.wrong else "passed (!)")))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=100, help="timed launches per bench")
    ap.add_argument("--drift", type=int, default=10, help="bench calls of the unchanged kernel")
    ap.add_argument("--fake-driver", action="store_true",
                    help="no GPU: the stub driver, made-up times (checks the script runs)")
    ap.add_argument("--no-ncu", action="store_true", help="leave Nsight Compute's column out")
    a = ap.parse_args()
    if a.fake_driver:
        import fake_driver
        fake_driver.install_timing()
        print("fake driver (no GPU): the times below are made up")
    arch = "sm_90a" if a.fake_driver else cuda_magic.detect_arch()
    if arch is None:
        print("no GPU: skipped")
        return 0
    from cuda_magic.runtime.measure import peaks
    dev = peaks.device_info()
    cfg = {"arch": arch}
    m = cuda_magic.build(KERNELS, cfg)
    r = a.repeat
    print(f"device  {dev}; python {platform.python_version()}; median of {r} launches per bench")
    rows = []

    n4 = 1 << 22                                   # 64 MiB in, 64 MiB out
    x, y = np.ones(4 * n4, np.float32), np.empty(4 * n4, np.float32)
    t = m["copy"].bench(dev.sms * 4, 512, x, y, n4, repeat=r, nbytes=2 * 16 * n4)
    rows.append(("copy 64 MiB, flush on", f"{us(t)}, {t.gbps:.0f} GB/s",
                 f"{t.gbps_of_peak:.1%} of {dev.peak_gbps:.0f} GB/s"))

    iters, threads = 4096, dev.sms * 4 * 256
    t = m["fma_chains"].bench(dev.sms * 4, 256, None, 1.0001, 0.5, iters, repeat=max(r // 5, 5),
                              flops=2 * 8 * iters * threads)
    rows.append(("fma chains", f"{t.tflops:.1f} TFLOP/s",
                 f"{t.tflops_of_peak:.1%} of {dev.peak_tflops('float32'):.1f} TFLOP/s"))

    n4 = (16 << 20) // 16                          # 16 MB: fits in the L2 of an H100/H200
    x16, out = np.ones(4 * n4, np.float32), np.zeros(1, np.float32)
    args = (dev.sms * 4, 512, x16, out, n4)
    cold = m["read_sum"].bench(*args, repeat=r, flush=True, nbytes=16 << 20)
    warm = m["read_sum"].bench(*args, repeat=r, flush=False, nbytes=16 << 20)
    rows.append(("L2 flush, 16 MB read", f"on {us(cold)} / off {us(warm)}",
                 f"{cold.median_ms / warm.median_ms:.2f}x"))

    plain = m["empty"].bench(1, 32, repeat=2 * r, flush=False, timer="events")
    graphed = m["empty"].bench(1, 32, repeat=r, flush=False, graph=True, timer="events")
    flushed = m["empty"].bench(1, 32, repeat=r, graph=True, timer="events")
    rows.append(("launch, empty kernel", f"events {us(plain)}; graph of 20 {us(graphed)} "
                 f"(flush {us(flushed)}) per launch",
                 f"graph/events {graphed.median_ms / plain.median_ms:.2f}"))

    timer_rows(a, m, dev, cfg, rows)

    out = np.zeros(1, np.float32)
    cuda_magic.clear_history()
    for i in range(a.drift):
        k = cuda_magic.build(f"#define ITERS 1000\n{SPIN}\n// edit {i}\n", cfg)["spin"]
        k.bench(dev.sms, 128, out, 4, repeat=r // 2)
    h = cuda_magic.history("spin")
    changes = [mk.change for mk in h.marks[1:]]
    marked = [i for i, mk in enumerate(h.marks) if mk.kind]
    rows.append((f"history drift, {a.drift} calls", f"largest change {max(map(abs, changes)):.1%}",
                 f"{len(marked)} marked (expect 0)"))
    k = cuda_magic.build(f"#define ITERS 3000\n{SPIN}", cfg)["spin"]
    k.bench(dev.sms, 128, out, 4, repeat=r // 2)
    mk = cuda_magic.history("spin").marks[-1]
    rows.append(("history edit, 3x loop", f"{mk.change:+.1%}", mk.kind or "not marked"))

    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    print()
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    print(f"\nclocks (last bench): {cuda_magic.history('spin').latest.clocks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
