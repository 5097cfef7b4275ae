"""What does %%cuda_compare cost, next to doing the same by hand?

    python3 benchmarks/bench_compare.py [--arch sm_90a] [--repeat N] [--n ELEMENTS]

In one run on one machine (medians, min in brackets), each row beside its by-hand baseline:

  compare, cold         two variants compiled (force) and disassembled (in parallel)
    by hand             two %%cuda builds and nvdisasm on each, one after the other
  compare, cached       the same cell again: compile cache and SASS answer
  toggle, new config    a widget toggle: one variant rebuilt, disassembled, view refreshed
    by hand             one cold build and nvdisasm
  toggle, back          toggling back: the cached build, view refreshed
  run + report (GPU)    --run on both variants (NumPy, copies) and the per-array report
    by hand             copying the arrays, launching each variant's kernel, np.array_equal
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import cuda_magic  # noqa: E402
from common import SCALE, timed  # noqa: E402
from cuda_magic import build, compare, inspect  # noqa: E402
from cuda_magic.display.compare import CompareView  # noqa: E402

FLAGS = (["--use_fast_math", "--ftz=false"], ["--use_fast_math", "--ftz=true"])


def row(name: str, times: list[float], base: list[float] | None = None) -> str:
    med = statistics.median(times)
    ratio = f"{med / statistics.median(base):8.2f}x" if base else ""
    return f"{name:<22}{len(times):>4}  {med:9.2f} ({min(times):8.2f})  {ratio}"


def by_hand_builds(arch: str) -> None:
    for flags in FLAGS:
        m = build(SCALE, {"arch": arch, "nvrtc": flags}, force=True)
        inspect.sass(m.result)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", default=None, help="default: the GPU's, else sm_90a")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--n", type=int, default=1 << 20, help="elements per array for the GPU rows")
    args = ap.parse_args()
    gpu = cuda_magic.detect_arch()
    arch = args.arch or gpu or "sm_90a"
    n = args.repeat
    print(f"python {platform.python_version()}  NVRTC {cuda_magic.get_backend('nvrtc').version()}  "
          f"CPUs {os.cpu_count()}  --arch {arch}  GPU {gpu or 'none'}")
    compare(SCALE, arch=arch)                                  # imports and tools warm

    rows = []
    cold, hand = [], []
    for _ in range(n):
        cold.append(timed(lambda: compare(SCALE, arch=arch, force=True)))
        hand.append(timed(lambda: by_hand_builds(arch)))
    rows += [("compare, cold", cold, hand), ("  by hand", hand, None)]
    rows.append(("compare, cached", [timed(lambda: compare(SCALE, arch=arch)) for _ in range(n)], cold))

    forced = CompareView(compare(SCALE, arch=arch, force=True)).widget()
    new, one = [], []
    for i in range(n):
        box = forced.toggles["fmad"]
        new.append(timed(lambda: setattr(box, "value", not box.value)))
        one.append(timed(lambda: inspect.sass(build(SCALE, {"arch": arch}, force=True).result)))
    rows += [("toggle, new config", new, one), ("  by hand", one, None)]
    cached = CompareView(compare(SCALE, arch=arch)).widget()
    cached.toggles["fmad"].value = False                       # into the cache once
    cached.toggles["fmad"].value = True
    back = []
    for _ in range(n):
        box = cached.toggles["fmad"]
        back.append(timed(lambda: setattr(box, "value", not box.value)))
    rows.append(("toggle, back", back, one))

    if gpu is None:
        print("no GPU: the run rows are skipped")
    else:
        x = cuda_magic.denormals(args.n)
        y = np.zeros_like(x)
        grid = (args.n + 255) // 256
        expr = f"scale[{grid}, 256](x, y, 0.5, {args.n})"
        ms = [build(SCALE, {"arch": arch, "nvrtc": f}) for f in FLAGS]

        def hand_run():
            outs = []
            for m in ms:
                xx, yy = x.copy(), y.copy()
                m.scale[grid, 256](xx, yy, 0.5, args.n)
                outs.append(yy)
            np.array_equal(outs[0], outs[1])
        hand_run()
        runs = [timed(lambda: compare(SCALE, arch=arch, run=expr, namespace={"x": x, "y": y}))
                for _ in range(n)]
        hands = [timed(hand_run) for _ in range(n)]
        rows += [("run + report (GPU)", runs, hands), ("  by hand", hands, None)]
        print(f"run rows: {args.n} float32 elements per array, NumPy (copied to the GPU and back)")

    print(f"{'figure':<22}{'n':>4}  {'median ms (min)':>20}  {'ratio':>9}")
    for name, times, base in rows:
        print(row(name, times, base))


if __name__ == "__main__":
    main()
