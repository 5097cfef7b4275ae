"""How fast is cuda_magic.verify, how much memory does it take, and what does k.verify catch?

    python3 benchmarks/bench_verify.py [--quick] [--repeat N] [--n ELEMENTS (2**23)] [--no-corpus]

In one run on one machine (medians of --repeat, min in brackets):

  verify <dtype>, host     verify(out, ref) on n elements of NumPy arrays one ULP apart here
                           and there (bf16/fp8/fp4 as their bit patterns), next to
    np.isclose             np.isclose(out, ref).all() on the decoded values: the least a
                           by-hand check does (no ULPs, no worst element, no categories)
  verify <dtype>, device   the same on CuPy arrays (rows left out without CuPy or a GPU)

  peak, chunk=C            one float32 check of n elements, C = n/64, n/8, n: the extra memory
                           measured (tracemalloc on the host; CuPy's pool on the device)
                           next to the Verdict's own estimate (peak_bytes)

  corpus (GPU)             every case of tests/kernels/verify/cases.py through k.verify:
                           correct kernels that pass, wrong kernels that fail, wrong kernels
                           in the category the manifest expects, seconds per case

Figures only: nothing is asserted (tests/suites/test_benchmarks.py runs it with --quick).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import sys
import time
import tracemalloc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import cuda_magic  # noqa: E402
from common import timed  # noqa: E402
from cuda_magic.correctness import from_bits, to_bits, verify  # noqa: E402

DTYPES = ("float64", "float32", "float16", "bfloat16", "e4m3", "e2m1", "int32")
NATIVE = ("float64", "float32", "float16")


def pair(n: int, dtype: str, seed: int = 0):
    """(out, ref, dtype= for verify): ref random, out one ULP off at every 97th element."""
    r = np.random.default_rng(seed)
    if dtype == "int32":
        ref = r.integers(-1000, 1000, n, dtype=np.int32)
        out = ref.copy()
        out[::97] += 1
        return out, ref, None
    values = r.standard_normal(n)
    if dtype in NATIVE:
        ref = values.astype(dtype)
        out = ref.copy()
        out[::97] = np.nextafter(out[::97], np.inf, dtype=ref.dtype)
        return out, ref, None
    ref = to_bits(values, dtype, saturate=True)
    out = ref.copy()
    out[::97] ^= 1                                            # the last mantissa bit: one ULP
    nan = np.isnan(from_bits(out, dtype))
    out[nan] = ref[nan]
    return out, ref, dtype


def row(name: str, times: list[float], n: int, base: list[float] | None = None) -> str:
    med = statistics.median(times)
    rate = n / (med / 1e3) / 1e6
    ratio = f"{med / statistics.median(base):8.2f}x" if base else ""
    return f"{name:<26}{med:10.1f} ({min(times):8.1f}) {rate:10.0f}  {ratio}"


def host_rows(n: int, repeat: int) -> list[str]:
    out = []
    for d in DTYPES:
        o, r, dt = pair(n, d)
        verify(o, r, dt)                                       # warm
        tv = [timed(lambda: verify(o, r, dt)) for _ in range(repeat)]
        if dt is None:
            ov, rv = o, r
        else:
            ov, rv = from_bits(o, dt), from_bits(r, dt)
        tb = [timed(lambda: np.isclose(ov, rv).all()) for _ in range(repeat)]
        out += [row(f"verify {d}, host", tv, n, tb), row("  np.isclose", tb, n)]
    return out


def device_rows(n: int, repeat: int) -> list[str]:
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return [f"device rows: skipped ({type(exc).__name__}: no CuPy or no GPU)"]
    out = []
    for d in DTYPES:
        o, r, dt = pair(n, d)
        do, dr = cupy.asarray(o), cupy.asarray(r)
        verify(do, dr, dt)

        def run():
            verify(do, dr, dt)
            cupy.cuda.Device().synchronize()
        tv = [timed(run) for _ in range(repeat)]
        dov = do if dt is None else cupy.asarray(from_bits(o, dt))
        drv = dr if dt is None else cupy.asarray(from_bits(r, dt))
        tb = [timed(lambda: bool(cupy.isclose(dov, drv).all())) for _ in range(repeat)]
        out += [row(f"verify {d}, device", tv, n, tb), row("  cupy.isclose", tb, n)]
    return out


def peak_rows(n: int) -> list[str]:
    o, r, _ = pair(n, "float32")
    out = []
    for chunk in (max(n // 64, 1), max(n // 8, 1), n):
        tracemalloc.start()
        v = verify(o, r, chunk=chunk)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out.append(f"peak, chunk={chunk:<10}{peak / 2**20:10.1f} MiB measured, "
                   f"{v.peak_bytes / 2**20:8.1f} MiB stated ({v.where}), "
                   f"{peak / min(n, chunk):6.0f} B/element of the chunk")
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return out
    pool = cupy.get_default_memory_pool()
    do, dr = cupy.asarray(o), cupy.asarray(r)
    for chunk in (max(n // 64, 1), n):
        pool.free_all_blocks()
        before = pool.total_bytes()
        v = verify(do, dr, chunk=chunk)
        out.append(f"peak, chunk={chunk:<10}{(pool.total_bytes() - before) / 2**20:10.1f} MiB "
                   f"in CuPy's pool, {v.peak_bytes / 2**20:8.1f} MiB stated ({v.where})")
    return out


def corpus_rows() -> list[str]:
    if cuda_magic.detect_arch() is None:
        return ["corpus: no GPU: skipped"]
    folder = os.path.join(ROOT, "tests", "kernels", "verify")
    spec = importlib.util.spec_from_file_location("verify_cases", os.path.join(folder, "cases.py"))
    cases = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = cases
    spec.loader.exec_module(cases)
    built, per = {}, []
    passed = failed = right = nc = nw = 0
    for c in cases.CASES:
        if c.file not in built:
            built[c.file] = cuda_magic.build(c.text, cuda_magic.line_config(), load=True)
        grid, block, args = c.launch()
        start = time.perf_counter()
        with np.errstate(all="ignore"):
            v = built[c.file][c.kernel].verify(grid, block, *args, reference=c.reference, **c.rule)
        per.append(time.perf_counter() - start)
        got = next((o.category for o in v.outputs if not o.passed), "pass")
        if c.correct:
            nc += 1
            passed += got == "pass"
        else:
            nw += 1
            failed += got != "pass"
            right += got in c.expected
    return [f"corpus: correct kernels passing   {passed} of {nc}",
            f"corpus: wrong kernels failing     {failed} of {nw} ({100 * failed / max(nw, 1):.0f}%)",
            f"corpus: wrong, category expected  {right} of {nw} ({100 * right / max(nw, 1):.0f}%)",
            f"corpus: seconds per case          median {statistics.median(per):.3f}, "
            f"max {max(per):.3f}"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2**18 elements, the corpus left out")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n", type=int, default=1 << 23, help="elements per array")
    ap.add_argument("--no-corpus", action="store_true", help="leave the GPU corpus out")
    a = ap.parse_args()
    n = 1 << 18 if a.quick else a.n
    print(f"python {platform.python_version()}  NumPy {np.__version__}  CPUs {os.cpu_count()}  "
          f"GPU {cuda_magic.detect_arch() or 'none'}  n = {n}")
    print(f"{'figure':<26}{'median ms':>10} {'(min)':>10} {'M elem/s':>10}  {'ratio':>9}")
    for line in host_rows(n, a.repeat) + device_rows(n, a.repeat):
        print(line)
    for line in peak_rows(n):
        print(line)
    if a.quick or a.no_corpus:
        print("corpus: left out (--quick / --no-corpus)")
    else:
        for line in corpus_rows():
            print(line)


if __name__ == "__main__":
    main()
