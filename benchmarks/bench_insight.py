"""What does insight cost? The per-line table next to one plain nvdisasm run, and an arch matrix
next to the same compiles one after another.

    python3 benchmarks/bench_insight.py [--kernels 40] [--repeat 5]

In one run on one machine (medians, min in brackets):

  nvdisasm -c (plain)        one disassembly of the cell's cubin: the baseline
  lines, -lineinfo build     the per-line table of every kernel: one nvdisasm -plr run, the line
                             table read from the cubin, the rows (goal: <= 1.3x the baseline)
  lines, plain build         the same for a build without line info: the inspection compile
                             (-lineinfo added) and the byte comparison come on top
  arch matrix (4 archs)      %%cuda --arch sm_80,sm_90a,sm_100a,sm_120: the builds in parallel
  4 compiles, one by one     the same four compiles sequentially (goal: matrix <= 0.6x)
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import cuda_magic  # noqa: E402
from common import timed  # noqa: E402
from cuda_magic import build, compile_source, line_config  # noqa: E402
from cuda_magic.inspect.disasm import _run  # noqa: E402
from cuda_magic.inspect.lines import lines  # noqa: E402

ARCHS = ("sm_80", "sm_90a", "sm_100a", "sm_120")


def cell(n: int) -> str:
    """``n`` kernels of a few shapes: a loop with an accumulator array, a reduction, math."""
    out = []
    for i in range(n):
        shape = i % 3
        if shape == 0:
            out.append(f'''
extern "C" __global__ void poly{i}(const float* x, float* y, int n) {{
    float acc[{8 + i % 16}];
    #pragma unroll
    for (int k = 0; k < {8 + i % 16}; ++k) acc[k] = x[threadIdx.x + k * n];
    float s = 0.f;
    #pragma unroll
    for (int k = 0; k < {8 + i % 16}; ++k) s += acc[k] * acc[({8 + i % 16} - 1 - k)] + {i}.0f;
    y[threadIdx.x] = s;
}}''')
        elif shape == 1:
            out.append(f'''
extern "C" __global__ void reduce{i}(const float* x, float* out, int n) {{
    __shared__ float part[256];
    float s = 0.f;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x)
        s += x[j] * {i + 1}.0f;
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {{
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }}
    if (threadIdx.x == 0) atomicAdd(out, part[0]);
}}''')
        else:
            out.append(f'''
extern "C" __global__ void math{i}(const float* x, float* y, int n) {{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) y[j] = sinf(x[j]) * expf(x[j] / {i + 2}.0f) + sqrtf(fabsf(x[j]));
}}''')
    return "\n".join(out)


def stats(times: list[float]) -> str:
    return f"{statistics.median(times):9.1f} ({min(times):8.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"python {platform.python_version()}  NVRTC {cuda_magic.get_backend('nvrtc').version()}  "
          f"CPUs {os.cpu_count()}  {args.kernels} kernels")
    src = cell(args.kernels)
    lined = compile_source(src, {"cuda": {"arch": "sm_90a", "nvrtc": ["--use_fast_math", "-lineinfo"]}})
    plain = compile_source(src, {"cuda": {"arch": "sm_90a"}})
    plain_runs, lined_runs, cold_runs = [], [], []
    for _ in range(args.repeat):
        plain_runs.append(timed(lambda: _run("nvdisasm", ["-c"], lined.binary, ".cubin")))
        lined.derived.pop("lines", None)
        lined_runs.append(timed(lambda: lines(lined)))
        plain.derived.pop("lines", None)
        cuda_magic.clear_cache()            # the inspection build is compiled again, not cached
        cold_runs.append(timed(lambda: lines(plain)))
    table = lines(lined)
    assert len(table) == args.kernels and all(kl.same_code for kl in table.values())
    base = statistics.median(plain_runs)
    print(f"{'figure':<28}{'median ms (min)':>20}  {'ratio':>6}")
    for name, times in (("nvdisasm -c (plain)", plain_runs), ("lines, -lineinfo build", lined_runs),
                        ("lines, plain build", cold_runs)):
        print(f"{name:<28}{stats(times)}  {statistics.median(times) / base:6.2f}x")
    print(f"goal: lines <= 1.3x one nvdisasm run: "
          f"{'PASS' if statistics.median(lined_runs) <= 1.3 * base else 'FAIL'} "
          f"({statistics.median(lined_runs) / base:.2f}x)")
    print()
    matrix = getattr(cuda_magic.Module, "arch_matrix", None)
    if matrix is None:
        print("arch matrix: not available in this build")
        return
    one_cell = cell(8)
    opts = line_config(arch=",".join(ARCHS))
    par, seq = [], []
    for _ in range(args.repeat):
        par.append(timed(lambda: build(one_cell, opts, force=True)))
        seq.append(timed(lambda: [build(one_cell, line_config(arch=a), force=True) for a in ARCHS]))
    ratio = statistics.median(par) / statistics.median(seq)
    print(f"{'arch matrix (4 archs)':<28}{stats(par)}")
    print(f"{'4 compiles, one by one':<28}{stats(seq)}")
    print(f"goal: matrix <= 0.6x sequential: {'PASS' if ratio <= 0.6 else 'FAIL'} ({ratio:.2f}x, "
          f"{os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
