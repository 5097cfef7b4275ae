"""What does a sweep cost, and does it scale?  A 64-candidate SGEMM sweep
(tests/kernels/tune/tiled_sgemm.cu: BM x BN x TM x BK = 4 x 4 x 2 x 2 builds) in one run:

    python3 benchmarks/bench_tune.py [--stage compile|gpus|dask|all] [--n 2048] [--repeat 30]

  compile, one by one      the 64 builds with cell.build, sequentially (force: no cache)
  compile, tune            the same builds through tune(compile_only=True, force=True): in
                           parallel (goal: <= 0.4x one by one on 16 cores)
  1 GPU, first sweep       the whole sweep (compile, prune, bench every survivor) on GPU 0: its
                           helper process starts, every candidate compiles (force=True; the
                           compiles overlap the bench)
  1 GPU, next sweep        the same again: the helper kept from the first, builds from the cache
  2 GPUs, ...              the same two on GPUs 0 and 1, one helper each (goal: <= 0.6x 1 GPU)
  Dask, first/next sweep   the next sweep through dask-cuda's LocalCUDACluster, one worker per
                           GPU (goal: next <= 1.2x the 2-GPU local pool's; the cluster's start is
                           not timed, the first sweep starts the workers' helpers)

GPU rows need GPUs (and dask-cuda for the Dask row); they say 'skipped' otherwise.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from cuda_magic import build  # noqa: E402
from cuda_magic.compile.arch import detect_arch, gpu_archs  # noqa: E402
from cuda_magic.variants.space import classify, parse_space, recipe_of  # noqa: E402
from cuda_magic.variants.candidates import points  # noqa: E402
from cuda_magic.variants.tune import tune  # noqa: E402
from cuda_magic.cell import parse_cell  # noqa: E402

SOURCE = pathlib.Path(ROOT, "tests", "kernels", "tune", "tiled_sgemm.cu").read_text()
SPACE = "BM=[32,64,128,256] BN=[32,64,128,256] TM=[8,16] TN=[8] BK=[8,16]"
RUN = "sgemm[(cdiv(N, BN), cdiv(M, BM)), (BM // TM) * (BN // TN)](a, b, c, M, N, K)"


def row(name: str, seconds: float | None, base: float | None = None, goal: str = "") -> None:
    if seconds is None:
        print(f"  {name:<28} skipped {goal}")
        return
    ratio = f"{seconds / base:6.2f}x" if base else "       "
    print(f"  {name:<28} {seconds:8.2f} s  {ratio}  {goal}")


def compile_stage(arch: str, quick: bool) -> None:
    space = parse_space(SPACE if not quick else "BM=[32,64] BN=[32,64] TM=[8] TN=[8] BK=[8]")
    parsed = parse_cell(SOURCE)
    params = classify(space, parsed)
    combos = points(params, None)
    started = time.perf_counter()
    for values in combos:
        r = recipe_of(params, values, parsed)
        build(SOURCE, {"arch": arch}, instantiate=r.instances, force=True, adjust=r.adjust)
    one_by_one = time.perf_counter() - started
    started = time.perf_counter()
    t = tune(SOURCE, space, arch=arch, compile_only=True, force=True)
    parallel = time.perf_counter() - started
    print(f"compile stage: {len(combos)} candidates, {len(t.candidates)} builds "
          f"({t.counts}), {os.cpu_count()} CPUs")
    row("compile, one by one", one_by_one)
    ratio = parallel / one_by_one
    row("compile, tune", parallel, one_by_one,
        f"goal <= 0.4x: {'PASS' if ratio <= 0.4 else 'FAIL'}" if (os.cpu_count() or 1) >= 16
        else "(the goal is for 16 CPUs)")


def arrays(n: int):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    return {"a": a, "b": b, "c": np.zeros((n, n), np.float32), "M": n, "N": n, "K": n}


def sweep(ns, arch: str, repeat: int, force: bool = True, **where) -> tuple[float, object]:
    started = time.perf_counter()
    t = tune(SOURCE, SPACE, RUN, arch=arch, namespace=ns, repeat=repeat, force=force,
             flops=2 * ns["M"] * ns["N"] * ns["K"], **where)
    return time.perf_counter() - started, t


def profiled(ns, arch: str, repeat: int, **where) -> None:
    """BENCH_PROFILE=1: where this process spends a compiled sweep (cProfile, top functions)."""
    import cProfile
    import pstats
    prof = cProfile.Profile()
    prof.enable()
    sweep(ns, arch, repeat, False, **where)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(12)


def describe(t) -> str:
    w = t.winner
    worst = max((c for c in t.candidates if c.time_ms), key=lambda c: c.time_ms, default=None)
    win = f"winner {w.label}: {w.time_ms:.3f} ms, {w.tflops:.1f} TFLOP/s" if w else "no winner"
    slow = f"; slowest {worst.time_ms:.3f} ms ({worst.time_ms / w.time_ms:.2f}x)" if w and worst else ""
    busy: dict = {}
    for c in t.candidates:
        if c.outcome is not None:
            b = busy.setdefault(c.gpu, [0.0, 0.0])
            b[0] += c.outcome.seconds
            b[1] += c.outcome.wall
    gpus = ", ".join(f"{g}: busy {s:.1f} s ({w:.1f} s from here)" for g, (s, w) in sorted(busy.items()))
    return f"{t.counts}; {win}{slow}; compiled by {t.seconds.get('compile', 0):.1f} s; {gpus}"


def gpu_stage(arch: str, n: int, repeat: int, dask: bool) -> None:
    gpus = [i for i, a in enumerate(gpu_archs()) if a == arch]
    if not gpus:
        row("sweep, 1 GPU", None, goal="(no GPU)")
        return
    ns = arrays(n)
    print(f"sweep: {SPACE}, {n} x {n} x {n}, repeat={repeat}, GPUs {gpus}")
    rows: dict = {}
    for chosen in ([gpus[0]], gpus[:2]) if len(gpus) >= 2 else ([gpus[0]],):
        n_gpus = f"{len(chosen)} GPU{'s' * (len(chosen) > 1)}"
        for force, how in ((True, "first sweep"), (False, "next sweep")):
            seconds, t = sweep(ns, arch, repeat, force, gpus=chosen)
            print(f"    {n_gpus}, {how}: {describe(t)}")
            rows[(len(chosen), how)] = seconds
    for how, what in (("first sweep", "helpers start, compiling"), ("next sweep", "compiled, helpers warm")):
        one, two = rows[(1, how)], rows.get((2, how))
        row(f"1 GPU, {how}", one, goal=f"({what})")
        if two is None:
            row(f"2 GPUs, {how}", None, goal="(one GPU here)")
        else:
            row(f"2 GPUs, {how}", two, one, f"goal <= 0.6x: {'PASS' if two / one <= 0.6 else 'FAIL'}")
    two = rows.get((2, "next sweep"))
    if os.environ.get("BENCH_PROFILE"):
        profiled(ns, arch, repeat, gpus=[gpus[0]])
    if not dask:
        return
    try:
        from dask_cuda import LocalCUDACluster
        from distributed import Client
    except ImportError:
        row("sweep, Dask", None, goal="(no dask-cuda)")
        return
    if len(gpus) < 2:
        row("sweep, Dask", None, goal="(one GPU here)")
        return
    with LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(map(str, gpus[:2]))) as cluster, \
            Client(cluster) as client:
        first, _ = sweep(ns, arch, repeat, False, client=client)
        row("Dask, first sweep", first, goal="(the workers' helpers start)")
        d, td = sweep(ns, arch, repeat, False, client=client)
        print(f"    Dask, next sweep: {describe(td)}")
        row("Dask, next sweep", d, two, f"goal <= 1.2x the 2-GPU pool: {'PASS' if d / two <= 1.2 else 'FAIL'}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stage", choices=("compile", "gpus", "dask", "all"), default="all")
    p.add_argument("--n", type=int, default=2048, help="matrix size of the GPU sweeps")
    p.add_argument("--repeat", type=int, default=30, help="timed launches per candidate")
    p.add_argument("--quick", action="store_true", help="a 4-candidate compile stage (tests)")
    args = p.parse_args()
    arch = detect_arch() or "sm_90a"
    print(f"{platform.node()}: {os.cpu_count()} CPUs, GPUs {gpu_archs() or 'none'}, arch {arch}")
    if args.stage in ("compile", "all"):
        compile_stage(arch, args.quick)
    if args.stage in ("gpus", "dask", "all"):
        gpu_stage(arch, args.n, args.repeat, args.stage in ("dask", "all"))


if __name__ == "__main__":
    main()
