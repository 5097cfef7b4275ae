"""Heavy headers and user headers: what NVRTC precompiled headers save, what re-runs cost.

    python3 benchmarks/bench_headers.py [--repeat N]

In one run, on the same machine:
  1. a CUB + cooperative_groups cell (``%%cuda --force``) without a PCH
     (``CUDA_MAGIC_PCH=0``), creating its PCH, and using it — side by side;
  2. an unchanged re-run of a cell that includes 5 user headers from disk
     (each re-run hashes them; no compiler call), and the same after one
     header was edited (a compile).
Goals (issue "Real CUDA code"): PCH used <= 0.25x no PCH; re-run <= 2 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cuda_magic  # noqa: E402
from cuda_magic.compile import pch  # noqa: E402
from common import timed  # noqa: E402

HEAVY = r'''#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

template <int BLOCK> __global__ void reduce_scan(const float* x, float* sums, float* scan, int n) {
    using Reduce = cub::BlockReduce<float, BLOCK>;
    using Scan = cub::BlockScan<float, BLOCK>;
    __shared__ union { typename Reduce::TempStorage r; typename Scan::TempStorage s; } tmp;
    int i = blockIdx.x * BLOCK + threadIdx.x;
    float v = i < n ? x[i] : 0.f;
    float total = Reduce(tmp.r).Sum(v);
    cg::this_thread_block().sync();
    float out;
    Scan(tmp.s).InclusiveSum(v, out);
    if (i < n) scan[i] = out;
    if (threadIdx.x == 0) sums[blockIdx.x] = total;
}
template __global__ void reduce_scan<256>(const float*, float*, float*, int);
'''

USER = '#include "h0.cuh"\n' + r'''
extern "C" __global__ void scaled(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = H4(x[i]);
}
'''


def ms(xs) -> str:
    return f"{statistics.median(xs):9.2f} ms (min {min(xs):8.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per row (PCH rows)")
    ap.add_argument("--reruns", type=int, default=200, help="timed unchanged re-runs")
    ap.add_argument("--arch", default=cuda_magic.detect_arch() or "sm_90a")
    args = ap.parse_args()
    print(f"NVRTC {cuda_magic.get_backend('nvrtc').version()}   arch {args.arch}   "
          f"CPUs {os.cpu_count()}")
    line = cuda_magic.line_config(arch=args.arch)

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CUDA_MAGIC_PCH_DIR"] = os.path.join(tmp, "pch")

        def heavy():
            return cuda_magic.build(HEAVY, line, force=True).result

        os.environ["CUDA_MAGIC_PCH"] = "0"
        plain = [timed(heavy) for _ in range(args.repeat)]
        os.environ["CUDA_MAGIC_PCH"] = "1"
        created = []
        for _ in range(args.repeat):
            pch.clear()
            created.append(timed(lambda: assert_pch(heavy(), "created")))
        used = [timed(lambda: assert_pch(heavy(), "used")) for _ in range(args.repeat)]
        base = statistics.median(plain)
        print(f"{'heavy cell, no PCH':34} {ms(plain)}   1.00x")
        print(f"{'heavy cell, PCH created':34} {ms(created)}   {statistics.median(created) / base:.2f}x")
        print(f"{'heavy cell, PCH used':34} {ms(used)}   {statistics.median(used) / base:.2f}x"
              f"   (goal <= 0.25x)")
        n, size = pch.usage()
        print(f"PCH files: {n}, {size / 2**20:.0f} MiB")

        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            for i in range(5):   # h0 includes h1 ... includes h4
                nxt = f'#include "h{i + 1}.cuh"\n' if i < 4 else ""
                with open(f"h{i}.cuh", "w") as f:
                    f.write(f"#pragma once\n{nxt}#define H{i}(v) ((v) * {i + 2}.0f)\n")
            cuda_magic.build(USER, line)                        # compile once
            reruns = [timed(lambda: assert_hit(cuda_magic.build(USER, line)))
                      for _ in range(args.reruns)]
            with open("h4.cuh", "a") as f:
                f.write("// edited\n")
            edited = timed(lambda: assert_miss(cuda_magic.build(USER, line)))
        finally:
            os.chdir(cwd)
        print(f"{'re-run, 5 user headers, unchanged':34} {ms(reruns)}   (goal <= 2 ms)")
        print(f"{'re-run after editing h4.cuh':34} {edited:9.2f} ms (a compile: cache miss)")


def assert_pch(result, state):
    assert result.pch == state, (result.pch, state)


def assert_hit(module):
    assert module.result.cache_hit


def assert_miss(module):
    assert not module.result.cache_hit and module.result.cache_note == "h4.cuh changed", \
        module.result.cache_note


if __name__ == "__main__":
    main()
