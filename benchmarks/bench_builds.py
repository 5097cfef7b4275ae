"""A cell's builds: per-kernel configs, and the first cell of a process.

    python3 benchmarks/bench_builds.py [--repeat N] [--kernels K] [--fresh N]

In one run, on the same machine:
  1. a cell of K kernels, each with its own ``//|`` config (K builds), against the same
     kernels under one config (one build): the wall time the user waits (``--force``) and
     the compiler time summed over the builds.  Each build compiles only the kernels bound
     to it; the others' bodies are left out.               goal: K = 8 configs <= 1.5x one build
  2. the first ``cuda_magic.build`` of a fresh process (``--arch`` given; after ``import
     cuda_magic``) against the first bare NVRTC compile of a fresh process (the same source
     and argv: importing ``cuda.bindings.nvrtc``, create, compile, log, CUBIN, destroy),
     each timed inside its process; medians over N processes, with Python's bytecode cached
     as in a user's install (a warm-up process fills a temporary cache first).
                                                           goal: first cell <= bare + 10 ms
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import cuda_magic  # noqa: E402
from common import timed  # noqa: E402

KERNEL = r'''//| nvrtc: [--use_fast_math, --ftz={ftz}, -DKERNEL_{i}]
extern "C" __global__ void k{i}(const float* x, float* y, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.f;
    for (int j = 0; j < 64; ++j)
        acc += sinf(x[(i + j) % n]) * cosf(x[(3 * i + j) % n]) / (1.f + x[j]);
    if (i < n) y[i] = acc;
}}
'''

FIRST = r'''
import sys, time
src = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n'
if sys.argv[1] == "cell":
    import cuda_magic
    line = cuda_magic.line_config(arch="sm_90a")
    start = time.perf_counter()
    m = cuda_magic.build(src, line)
    took = time.perf_counter() - start
    print(took * 1e3, *m.result.argv)
else:
    argv = sys.argv[2:]
    start = time.perf_counter()
    from cuda.bindings import nvrtc       # cuda-magic loads NVRTC at its first compile too
    err, prog = nvrtc.nvrtcCreateProgram(src.encode(), b"cell.cu", 0, [], [])
    opts = [a.encode() for a in argv]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    assert int(err) == 0
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    nvrtc.nvrtcGetProgramLog(prog, bytearray(size))
    _, size = nvrtc.nvrtcGetCUBINSize(prog)
    nvrtc.nvrtcGetCUBIN(prog, bytearray(size))
    nvrtc.nvrtcDestroyProgram(prog)
    print((time.perf_counter() - start) * 1e3)
'''


def configs(kernels: int, repeat: int) -> None:
    cell = "\n".join(KERNEL.format(i=i, ftz="true" if i % 2 else "false") for i in range(kernels))
    one = "\n".join(line for line in cell.splitlines() if not line.startswith("//|")) + "\n"
    line = cuda_magic.line_config(arch="sm_90a")
    rows = {}
    for name, src in ((f"{kernels} kernels, one build", one),
                      (f"{kernels} kernels, {kernels} configs", cell)):
        cuda_magic.build(src, line, force=True)                # warm
        walls, cpu = [], []
        for _ in range(repeat):
            box = {}
            walls.append(timed(lambda: box.setdefault("m", cuda_magic.build(src, line, force=True))))
            cpu.append(sum(r.compile_time for r in box["m"].results) * 1e3)
        rows[name] = (statistics.median(walls), statistics.median(cpu), len(box["m"].results))
    base_wall, base_cpu, _ = next(iter(rows.values()))
    print(f"{'cell':28} {'builds':>6} {'wall':>10} {'ratio':>7} {'compiler':>10} {'ratio':>7}")
    for name, (wall, cpu, n) in rows.items():
        print(f"{name:28} {n:6} {wall:8.0f}ms {wall / base_wall:6.2f}x {cpu:8.0f}ms "
              f"{cpu / base_cpu:6.2f}x")
    print("goal: the per-kernel-config cell's wall <= 1.5x one build")


def first(fresh: int) -> None:
    # As a user's install has it: bytecode compiled (pip writes it; PYTHONDONTWRITEBYTECODE,
    # set on some machines, would make every process compile cuda-magic's modules again),
    # kept in a temporary cache so the checkout is left as it was; one warm-up process fills it.
    cache = tempfile.mkdtemp(prefix="cuda-magic-pyc-")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache

    def run(*args) -> list[str]:
        return subprocess.run([sys.executable, "-c", FIRST, *args], capture_output=True,
                              text=True, check=True, cwd=ROOT, env=env).stdout.split()
    cells, bares = [], []
    argv = run("cell")[1:]
    run("bare", *argv)
    for _ in range(fresh):
        out = run("cell")
        cells.append(float(out[0]))
        argv = out[1:]
        bares.append(float(run("bare", *argv)[0]))
    shutil.rmtree(cache, ignore_errors=True)
    c, b = statistics.median(cells), statistics.median(bares)
    print(f"\n{'first compile of a process':28} {'median':>10}")
    print(f"{'bare NVRTC (same argv)':28} {b:8.1f}ms")
    print(f"{'cuda_magic.build, --arch':28} {c:8.1f}ms   +{c - b:.1f} ms   (goal <= +10 ms)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--kernels", type=int, default=8)
    ap.add_argument("--fresh", type=int, default=7, help="fresh processes for part 2")
    args = ap.parse_args()
    print(f"NVRTC {cuda_magic.get_backend('nvrtc').version()}   CPUs {os.cpu_count()}")
    configs(args.kernels, args.repeat)
    first(args.fresh)


if __name__ == "__main__":
    main()
