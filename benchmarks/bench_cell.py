"""What does a ``%%cuda`` cell cost on top of the compiler, and what does ``%load_ext`` cost?

    python3 benchmarks/bench_cell.py [--arch sm_90a] [--repeat N] [--quick]

Measured in one run, on the same machine, through a real IPython
``InteractiveShell`` with ``%load_ext cuda_magic``:

  1. cold cell: ``run_cell_magic("cuda", "--arch ARCH --force --quiet", src)``
     (``--force`` skips our cache; NVRTC itself runs with ``--no-cache``) vs
     bare ``cuda.bindings.nvrtc`` on the same source with the argv the cell
     reported (``m.result.argv``): create, compile, log, CUBIN, destroy.
     A and B interleaved after a warm-up; medians and the median of the paired
     differences A_i - B_i.                              goal: overhead <= +15 ms
  2. unchanged re-run: the same cell again without ``--force`` (a cache hit).
     The compiler backend is wrapped to count calls: there must be none.
                                                         goal: <= 2 ms
  3. ``%load_ext cuda_magic`` in a fresh ``python -c`` each time, timed inside
     that process after IPython is imported and the shell exists (the import
     and shell time is printed beside it, not counted). goal: <= 300 ms

Two cells: a small one (one saxpy-like kernel) and a bigger one (a ``//|``
header and two kernels).  No GPU is needed; with one, the cell also binds its
kernels on the GPU (the module load itself happens once, in the warm-up).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import cuda_magic  # noqa: E402
from common import BIG, SCALE as SMALL, bare_nvrtc, interleaved, timed, version  # noqa: E402
import cuda_magic.compile.compiler  # noqa: E402

CELLS = (("small cell", SMALL), ("2-kernel cell", BIG))

# Runs in a fresh interpreter: prints "<import+shell ms> <load_ext ms>".
LOAD_EXT = r'''
import time
t0 = time.perf_counter()
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
t1 = time.perf_counter()
shell.run_line_magic("load_ext", "cuda_magic")
t2 = time.perf_counter()
assert "cuda" in shell.magics_manager.magics["cell"], "%%cuda was not registered"
print(f"{(t1 - t0) * 1e3:.3f} {(t2 - t1) * 1e3:.3f}")
'''


def make_shell():
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "cuda_magic")
    return shell


class counting_compiles:
    """Within ``with``: every backend ``compile`` call is counted in ``.calls``."""

    def __enter__(self):
        self.calls = 0
        self._orig = cuda_magic.compile.compiler.get_backend

        def get_backend(name):
            backend = self._orig(name)
            real = backend.compile

            def compile(*args, **kwargs):
                self.calls += 1
                return real(*args, **kwargs)
            return dataclasses.replace(backend, compile=compile)

        cuda_magic.compile.compiler.get_backend = get_backend
        return self

    def __exit__(self, *exc):
        cuda_magic.compile.compiler.get_backend = self._orig


def bench_cold(shell, label, src, arch, n, warmup):
    """Row: cold cell (--force) vs bare NVRTC of every build the cell made."""
    m = shell.run_cell_magic("cuda", f"--arch {arch} --force", src)   # not --quiet: the Module
    builds = [(r.source, r.argv) for r in m.results]
    line = f"--arch {arch} --force --quiet"

    def ours():
        shell.run_cell_magic("cuda", line, src)

    def bare():
        for source, argv in builds:
            bare_nvrtc(source, argv)

    a, b = interleaved(ours, bare, n, warmup)
    return (f"cold {label}", n, a, b, 15.0, "diff")


def bench_rerun(shell, label, src, arch, n):
    """Row: the unchanged cell again (a cache hit); also checks that nothing compiled."""
    line = f"--arch {arch} --quiet"
    shell.run_cell_magic("cuda", line, src)          # make sure the entry exists
    with counting_compiles() as counter:
        times = [timed(lambda: shell.run_cell_magic("cuda", line, src)) for _ in range(n)]
        m = shell.run_cell_magic("cuda", f"--arch {arch}", src)
    hits = all(r.cache_hit for r in m.results)
    return (f"re-run {label}", n, times, None, 2.0, "abs"), counter.calls, hits


def bench_load_ext(n):
    """Row: %load_ext cuda_magic in a fresh process, n times (import+shell printed apart)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    shell_ms, load_ms = [], []
    for _ in range(n):
        out = subprocess.run([sys.executable, "-c", LOAD_EXT], capture_output=True, text=True,
                             env=env, cwd=ROOT, check=True)
        s, l = out.stdout.split()[-2:]
        shell_ms.append(float(s))
        load_ms.append(float(l))
    return ("%load_ext cuda_magic", n, load_ms, shell_ms, 300.0, "abs")


def facts(arch: str) -> None:
    gpu = cuda_magic.detect_arch()
    import IPython
    print(f"python  {platform.python_version()} ({sys.executable})")
    print(f"IPython {IPython.__version__}   NVRTC {cuda_magic.get_backend('nvrtc').version()}"
          f"   cuda-bindings {version('cuda.bindings')}")
    print(f"CPUs    {os.cpu_count()}   --arch {arch}   GPU: "
          f"{gpu + ' (cells also bind their kernels)' if gpu else 'none'}   compile cache: "
          f"{cuda_magic.compile.compiler.cache().directory or 'memory only'}")
    print()


def ms(xs) -> str:
    return f"{statistics.median(xs):8.2f} ({min(xs):7.2f})" if xs else f"{'-':>18}"


def table(rows) -> None:
    head = (f"{'figure':<28}{'n':>5}  {'cuda_magic ms':>18}  {'baseline ms':>18}  "
            f"{'diff ms':>8}  {'ratio':>6}  {'goal':>10}  result")
    print(head)
    print("-" * len(head))
    for name, n, ta, tb, goal, kind in rows:
        if kind == "diff":   # overhead = median of paired differences
            fig = statistics.median(x - y for x, y in zip(ta, tb))
            diff = f"{fig:+8.2f}"
            ratio = f"{statistics.median(ta) / statistics.median(tb):6.2f}"
            goal_s = f"<= +{goal:g} ms"
        else:                # the figure is our median itself
            fig = statistics.median(ta)
            diff, ratio, goal_s = f"{'-':>8}", f"{'-':>6}", f"<= {goal:g} ms"
        print(f"{name:<28}{n:>5}  {ms(ta)}  {ms(tb)}  {diff}  {ratio}  {goal_s:>10}  "
              f"{'PASS' if fig <= goal else 'MISS'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", default="sm_90a", help="--arch for the cells (default sm_90a)")
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed runs per side (default: 20 cold, 10x that re-runs, 5 load_ext)")
    ap.add_argument("--quick", action="store_true", help="few iterations, for a smoke test")
    args = ap.parse_args()
    n_cold = args.repeat or (3 if args.quick else 20)
    n_hit = 10 * n_cold
    n_load = args.repeat or (2 if args.quick else 5)
    warmup = 1 if args.quick else 2

    facts(args.arch)
    shell = make_shell()
    rows, calls, hits = [], 0, True
    for label, src in CELLS:
        rows.append(bench_cold(shell, label, src, args.arch, n_cold, warmup))
    for label, src in CELLS:
        row, c, h = bench_rerun(shell, label, src, args.arch, n_hit)
        if c or not h:   # a re-run that compiled is a miss whatever its time
            row = (row[0] + " (compiled!)", *row[1:4], -1.0, row[5])
        rows.append(row)
        calls, hits = calls + c, hits and h
    rows.append(bench_load_ext(n_load))

    print("median (min) in ms; cold: diff = median of paired differences (cell_i - NVRTC_i),")
    print("baseline = bare cuda.bindings.nvrtc with the cell's argv; re-run: no baseline;")
    print("%load_ext: baseline column = importing IPython + creating the shell (not counted)\n")
    table(rows)
    print()
    print(f"compiler calls during re-runs: {calls} (all results cache hits: "
          f"{'yes' if hits else 'NO'})")


if __name__ == "__main__":
    main()
