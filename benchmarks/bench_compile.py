"""How much time does cuda_magic add on top of the bare compilers?

    python3 benchmarks/bench_compile.py [--repeat N]

Compares, in one run and on the same machine:
  1. a cold NVRTC compile through compile_source(force=True) vs the same argv
     (result.argv) through bare cuda.bindings.nvrtc;
  2. a cache hit of compile_source (identical input, no force);
  3. nvcc through compile_source(force=True) vs a bare subprocess.run of the
     same argv, its temporary paths pointing into a directory of our own.
The two sides of each comparison are interleaved (A, B, A, B, ...) after a
warm-up, so machine noise hits both alike.  No GPU is needed.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cuda_magic  # noqa: E402
from common import bare_nvrtc, interleaved, timed  # noqa: E402

SRC = r'''
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''
NVRTC_CFG = {"cuda": {"arch": "sm_90a"}}
NVCC_CFG = {"cuda": {"arch": "sm_90a", "compiler": "nvcc"}}


def facts() -> None:
    nvcc = cuda_magic.get_backend("nvcc")
    gpu = cuda_magic.detect_arch()
    cache = cuda_magic.compile.compiler.cache().directory or "memory only"
    print(f"python {platform.python_version()} ({sys.executable})")
    print(f"NVRTC  {cuda_magic.get_backend('nvrtc').version()}")
    print(f"nvcc   {nvcc.version()} ({cuda_magic.tools.find('nvcc')})")
    print(f"CPUs   {os.cpu_count()}   GPU: {gpu or 'none (detect_arch() -> None)'}"
          f"   compile cache: {cache}")
    print()


def ms(xs: list[float] | None) -> str:
    return f"{statistics.median(xs):8.2f} ({min(xs):7.2f})" if xs else f"{'-':>18}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed runs per side (default: 20 for NVRTC, 8 for nvcc)")
    args = ap.parse_args()
    n_nvrtc = args.repeat or 20
    n_nvcc = args.repeat or 8
    facts()
    rows = []  # (case, n, A times, B times, goal ms)

    # 1. cold NVRTC: wrapper vs bare, same argv
    argv = cuda_magic.compile_source(SRC, NVRTC_CFG, force=True).argv
    a, b = interleaved(lambda: cuda_magic.compile_source(SRC, NVRTC_CFG, force=True),
                       lambda: bare_nvrtc(SRC, argv), n_nvrtc)
    rows.append(("NVRTC cold compile", n_nvrtc, a, b, 15.0))

    # 2. cache hit (the entry exists from the runs above)
    hit = cuda_magic.compile_source(SRC, NVRTC_CFG)
    assert hit.cache_hit, "expected a cache hit"
    n_hit = 10 * n_nvrtc
    a = [timed(lambda: cuda_magic.compile_source(SRC, NVRTC_CFG)) for _ in range(n_hit)]
    rows.append(("NVRTC cache hit", n_hit, a, None, 1.0))

    # 3. nvcc: wrapper vs bare subprocess.run of the same argv
    argv = cuda_magic.compile_source(SRC, NVCC_CFG, force=True).argv
    with tempfile.TemporaryDirectory(prefix="bench-nvcc-") as tmp:
        with open(os.path.join(tmp, "cell.cu"), "w") as f:
            f.write(SRC)
        # the same argv, with the wrapper's (removed) temporary directory swapped for ours
        old_tmp = os.path.dirname(argv[-1])
        bare_argv = [arg.replace(old_tmp, tmp) for arg in argv]

        def bare_nvcc():
            subprocess.run(bare_argv, capture_output=True, check=True)

        a, b = interleaved(lambda: cuda_magic.compile_source(SRC, NVCC_CFG, force=True),
                           bare_nvcc, n_nvcc, warmup=1)
    rows.append(("nvcc compile", n_nvcc, a, b, 30.0))

    head = (f"{'case':<20}{'n':>5}  {'cuda_magic ms':>18}  {'bare ms':>18}  "
            f"{'overhead ms':>11}  {'ratio':>6}  {'goal ms':>8}  met?")
    print("median (min) in ms; overhead = median of paired differences (A_i - B_i);")
    print("for the cache hit the overhead is the whole call\n")
    print(head)
    print("-" * len(head))
    for case, n, ta, tb, goal in rows:
        if tb:
            over = statistics.median(x - y for x, y in zip(ta, tb))
            ratio = f"{statistics.median(ta) / statistics.median(tb):6.2f}"
        else:
            over, ratio = statistics.median(ta), f"{'-':>6}"
        met = "yes" if over <= goal else "NO"
        print(f"{case:<20}{n:>5}  {ms(ta)}  {ms(tb)}  {over:11.2f}  {ratio}  "
              f"{'<= ' + format(goal, 'g'):>8}  {met}")


if __name__ == "__main__":
    main()
