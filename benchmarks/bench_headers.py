"""Headers and the edit loop: what each include costs a recompile after an edit, what NVRTC
precompiled headers save, what re-runs cost.

    python3 benchmarks/bench_headers.py [--repeat N] [--matrix-only] [--headers cmath,cstdio]

In one run, on the same machine:
  1. the matrix (issue "Real code, second pass"): a one-line kernel that starts with one
     ``#include`` from the table, built with ``cuda_magic.build`` — its first compile (which
     may create a PCH, once: "PCH created (one-off)") and, after an edit of the kernel's
     body, the compile the user waits for each time; beside it the same with cuda-magic's
     PCH off (``CUDA_MAGIC_PCH=0``) and the bare kernel.         goal: edit <= 2x bare
     The last 7 rows are CUB, cooperative groups and libcu++ (issue "Real code III"); where
     their time goes is in docs/performance.md.
  2. a CUB + cooperative_groups cell (``--force``) without a PCH, creating its PCH, and
     using it — side by side;                                    goal: used <= 0.25x none
     and the same cell as the first of a new Python process, with the PCH off and with the
     PCH this process made (issue "Real code III", item 2);   goal: <= 0.3x
  3. an unchanged re-run of a cell that includes 5 user headers from disk (each re-run
     hashes them; no compiler call), and the same after one header was edited (a compile).
                                                                 goal: re-run <= 2 ms
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cuda_magic  # noqa: E402
from cuda_magic.compile import pch, pch_heap, toolkit_headers  # noqa: E402
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


# The table: the headers real files start with.
MATRIX = ("cmath", "math.h", "cstdlib", "limits", "utility", "algorithm", "array", "tuple",
          "functional", "numeric", "type_traits", "cuda/std/cmath", "cuda/std/limits",
          "cuda/std/type_traits", "cstdio", "cstdint", "cassert", "cfloat", "climits", "cstring",
          "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "mma.h",
          # issue "Real code III", item 1: the library headers real files include next
          "cooperative_groups.h", "cooperative_groups/reduce.h", "cuda/barrier",
          "cub/block/block_reduce.cuh", "cub/warp/warp_reduce.cuh", "cuda/std/atomic",
          "cuda/ptx")
KERNEL = 'extern "C" __global__ void k(float* x) {{ x[threadIdx.x] = {}.0f; }}\n'


def matrix(line, repeat: int, names=MATRIX) -> None:
    """One row per header: first compile, compile after an edit (PCH on / off), ratio to bare.
    The bare kernel is timed beside every row (interleaved), and the ratios use the median of
    all those samples, so a slow moment of a shared machine does not skew one baseline."""
    counter = iter(range(1, 1 << 30))

    def edit(head: str):
        m = cuda_magic.build(head + KERNEL.format(next(counter)), line)
        assert not m.result.cache_hit
        return m.result

    def after_edits(head: str) -> tuple[list[float], str]:
        times, states = [], set()
        for _ in range(repeat):
            start = time.perf_counter()
            states.add(edit(head).pch)
            times.append((time.perf_counter() - start) * 1e3)
        return times, "/".join(sorted(s for s in states if s)) or "-"

    edit("")                                                  # NVRTC loaded, caches warm
    bare = after_edits("")[0]
    rows = []
    for name in names:
        head = f"#include <{name}>\n"
        start = time.perf_counter()
        try:
            state = edit(head).pch or "-"
        except cuda_magic.CompileError as exc:     # a header this install lacks (mma.h: crt)
            rows.append((name, f"not compiled: {str(exc).splitlines()[0][:60]}"))
            continue
        first = (time.perf_counter() - start) * 1e3
        used, used_state = after_edits(head)
        os.environ["CUDA_MAGIC_PCH"] = "0"
        try:
            plain = after_edits(head)[0]
        finally:
            os.environ["CUDA_MAGIC_PCH"] = "1"
        bare += after_edits("")[0]
        rows.append((name, first, f"{state}/{used_state}", statistics.median(used),
                     statistics.median(plain)))
    base = statistics.median(bare)
    print(f"\n{'cell starts with':24} {'first':>8} {'PCH':>13} {'edit':>8} {'vs bare':>8} "
          f"{'no PCH':>8} {'vs bare':>8}")
    print(f"{'nothing':24} {'':8} {'':13} {base:6.0f}ms {1:7.2f}x   "
          f"(median of {len(bare)}, {min(bare):.0f}-{max(bare):.0f} ms)")
    worst = 0.0
    for name, *row in rows:
        if len(row) == 1:
            print(f"{'<' + name + '>':24} {row[0]}")
            continue
        first, state, used, plain = row
        worst = max(worst, used / base)
        print(f"{'<' + name + '>':24} {first:6.0f}ms {state:>13} {used:6.0f}ms "
              f"{used / base:7.2f}x {plain:6.0f}ms {plain / base:7.2f}x")
    print(f"worst edit / bare: {worst:.2f}x   (goal <= 2x)")


def ms(xs) -> str:
    return f"{statistics.median(xs):9.2f} ms (min {min(xs):8.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per row (PCH rows)")
    ap.add_argument("--reruns", type=int, default=200, help="timed unchanged re-runs")
    ap.add_argument("--arch", default=cuda_magic.detect_arch() or "sm_90a")
    ap.add_argument("--matrix-only", action="store_true", help="part 1 only")
    ap.add_argument("--headers", help="part 1 for these headers only (comma-separated)")
    args = ap.parse_args()
    print(f"NVRTC {cuda_magic.get_backend('nvrtc').version()}   arch {args.arch}   "
          f"CPUs {os.cpu_count()}\n{toolkit_headers.families_note()}")
    line = cuda_magic.line_config(arch=args.arch)

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CUDA_MAGIC_PCH_DIR"] = os.path.join(tmp, "pch")
        matrix(line, max(args.repeat, 3),
               args.headers.split(",") if args.headers else MATRIX)
        if args.matrix_only:
            return

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
        off = [fresh(args.arch, "0") for _ in range(args.repeat)]
        on = [fresh(args.arch, "1") for _ in range(args.repeat)]     # the PCH made above
        print(f"{'new process: heavy cell, no PCH':34} {ms(off)}   1.00x")
        print(f"{'new process: PCH of an earlier one':34} {ms(on)}   "
              f"{statistics.median(on) / statistics.median(off):.2f}x   (goal <= 0.3x)")

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


FRESH = """
import sys, time
sys.path.insert(0, {root!r})
import cuda_magic
line = cuda_magic.line_config(arch={arch!r})
t = time.perf_counter()
r = cuda_magic.build({cell!r}, line, force=True).result
print((time.perf_counter() - t) * 1e3, r.pch)
from cuda_magic.compile import pch_heap; print(pch_heap.token(), file=sys.stderr)
"""


def fresh(arch: str, on: str) -> float:
    """ms of the first heavy cell of a new Python process (PCH ``on``: "1" or "0"); asserts it
    used the PCH an earlier process made when on."""
    code = FRESH.format(root=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        arch=arch, cell=HEAVY)
    run = subprocess.run([sys.executable, "-c", code], env={**os.environ, "CUDA_MAGIC_PCH": on},
                         capture_output=True, text=True, check=True)
    out = run.stdout.split()
    assert out[1:] == (["used"] if on == "1" else []), (out, run.stderr[-3000:])
    return float(out[0])


def assert_pch(result, state):
    assert result.pch == state, (result.pch, state)


def assert_hit(module):
    assert module.result.cache_hit


def assert_miss(module):
    assert not module.result.cache_hit and module.result.cache_note == "h4.cuh changed", \
        module.result.cache_note


if __name__ == "__main__":
    main()
