"""What does showing a compiled cell cost, next to compiling it?

    python3 benchmarks/bench_display.py [--arch sm_90a] [--repeat N]

For a small cell and a 2-kernel cell, in one run on one machine (medians, min
in brackets), each beside the cold NVRTC compile of the same cell:

  compile (cold)     build(..., force=True): what a cell costs anyway
  text view          what terminal IPython shows
  HTML (no SASS)     the HTML that travels with the widget
  widget             building the ipywidgets tabs (no frontend attached)
  SASS tab, first    opening the SASS tab: nvdisasm on the module (lazy)
  SASS tab, again    re-opening it (cached on the result)
  PTX tab            NVRTC's PTX from the same run (no extra compile)
  static HTML + SASS the fallback with the start of the SASS (as without ipywidgets)

The widget path (text + HTML + widget) is what every displayed cell pays; the
SASS and PTX rows only when their tab is opened.

Then "open SASS, then Source" on a fresh build of each cell (a spilling kernel, HEAVY, too):
both tabs opened one after the other, on demand (nothing made before), and once the
background start a shown view makes in a Jupyter kernel (cuda_magic.inspect.lines.prefetch)
is done; with the nvdisasm runs it took.  Before one -plr run served both tabs, the SASS tab
ran ``nvdisasm -c -g -gi`` and the Source tab ``nvdisasm -c -plr -lrm count``: two runs.
Measured on the 2-core CPU machine (no GPU; nvdisasm 13.5 from pip, ~770 ms a run there),
medians of 5, SASS then Source:

  cell              before (2 runs)   after, on demand (1 run)   after the background start
  small cell        772 + 859 ms      779 + 72 ms                3 + 8 ms
  spilling kernel   964 + 1165 ms     952 + 315 ms               17 + 13 ms

(the spilling kernel's Source tab still compiles its -lineinfo inspection build, ~250 ms,
on demand; the background start makes that too).

Then a multi-megabyte cell (a real build shown with a 4.5 MB source, as
tests/suites/test_hostile_tools.py checks it): HTML, widget and the first
opening of its Source tab, whose colours are capped (pygments over every line
took 10-30 s before the cap).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import cuda_magic  # noqa: E402
from common import BIG, HEAVY, SCALE, timed  # noqa: E402
from cuda_magic import build, view  # noqa: E402


def row(name: str, times: list[float], compile_ms: float) -> str:
    med = statistics.median(times)
    return (f"{name:<22}{len(times):>4}  {med:9.2f} ({min(times):8.2f})  "
            f"{med / compile_ms:8.3f}")


def bench(label: str, src: str, arch: str, n: int) -> None:
    options = {"arch": arch}
    compile_ms = [timed(lambda: build(src, options, force=True)) for _ in range(n)]
    m = build(src, options)
    rows = [("compile (cold)", compile_ms)]
    rows.append(("text view", [timed(lambda: view(m).text()) for _ in range(n)]))
    rows.append(("HTML (no SASS)", [timed(lambda: view(m).html(sass=False)) for _ in range(n)]))
    rows.append(("widget", [timed(lambda: view(m).widget()) for _ in range(n)]))
    first, again, ptx, static = [], [], [], []
    for _ in range(n):
        m = build(src, options, force=True)          # a fresh result: nothing disassembled yet
        w = view(m).widget()
        first.append(timed(lambda: setattr(w.tab, "selected_index", 3)))
        assert "FMUL" in w.sass.pane.value or "FFMA" in w.sass.pane.value or "FADD" in w.sass.pane.value
        w2 = view(m).widget()
        again.append(timed(lambda: setattr(w2.tab, "selected_index", 3)))
        ptx.append(timed(lambda: setattr(w2.tab, "selected_index", 4)))
        m = build(src, options, force=True)
        static.append(timed(lambda: view(m).html()))
    rows += [("SASS tab, first", first), ("SASS tab, again", again), ("PTX tab", ptx),
             ("static HTML + SASS", static)]
    c = statistics.median(compile_ms)
    print(f"{label}: {', '.join(m.kernels)}")
    print(f"{'figure':<22}{'n':>4}  {'median ms (min)':>20}  {'x compile':>8}")
    for name, times in rows:
        print(row(name, times, c))
    shown = sum(statistics.median(t) for name, t in rows if name in ("text view", "HTML (no SASS)", "widget"))
    print(f"every displayed cell: {shown:.2f} ms = {shown / c:.3f}x its cold compile")
    print()


def bench_tabs(label: str, src: str, options: dict, n: int) -> None:
    """Open SASS, then Source, on a fresh build: on demand, and after the background start."""
    from cuda_magic.inspect import disasm
    try:
        from cuda_magic.inspect.lines import prefetch
    except ImportError:                  # before the background start existed
        prefetch = None
    runs = []
    real = disasm._run

    def counting(tool, *args, **kw):
        runs.append(tool)
        return real(tool, *args, **kw)
    disasm._run = counting
    try:
        rows, counts = [], {}
        for how in ("on demand", "after the background start"):
            if how != "on demand" and prefetch is None:
                continue
            sass, source, both = [], [], []
            for i in range(n):
                m = build(src + f"// {how} {i}\n", options, force=True)
                w = view(m).widget()
                runs.clear()
                if how != "on demand":
                    prefetch([m.result]).join()
                a = timed(lambda: setattr(w.tab, "selected_index", 3))
                b = timed(lambda: setattr(w.tab, "selected_index", 5))
                assert "EXIT" in w.sass.pane.value and "click a line" in w.heat.pane.value
                sass.append(a), source.append(b), both.append(a + b)
                counts[how] = len(runs)
            rows += [(f"SASS tab ({how})", sass), (f"then Source ({how})", source),
                     (f"both ({how})", both)]
    finally:
        disasm._run = real
    print(f"{label}: open SASS, then Source, on a fresh build; nvdisasm runs: "
          + ", ".join(f"{k}: {v}" for k, v in counts.items()))
    print(f"{'figure':<40}{'n':>4}  {'median ms (min)':>20}")
    for name, times in rows:
        print(f"{name:<40}{len(times):>4}  {statistics.median(times):9.2f} ({min(times):8.2f})")
    print()


def big_cell(megabytes: float) -> str:
    """SCALE and device functions after it, to ``megabytes`` of source."""
    body, i = [], 0
    while sum(map(len, body)) < megabytes * 1e6:
        body.append(f"__device__ float f{i}(const float* x) {{\n    float acc = 0.0f;\n"
                    + "    acc = fmaf(acc, x[3], 1.0f) * 0.5f;\n" * 8 + "    return acc;\n}\n")
        i += 1
    return SCALE + "".join(body)


def bench_big(arch: str, n: int, megabytes: float = 4.5) -> None:
    from dataclasses import replace
    big = big_cell(megabytes)
    compile_ms = statistics.median(timed(lambda: build(SCALE, {"arch": arch}, force=True))
                                   for _ in range(n))
    r = replace(cuda_magic.compile_source(SCALE, {"cuda": {"arch": arch}}), source=big)
    rows = [("HTML (no SASS)", [timed(lambda: view(r).html(sass=False)) for _ in range(n)]),
            ("widget", [timed(lambda: view(r).widget()) for _ in range(n)])]
    source = []
    for _ in range(n):
        w = view(r).widget()
        source.append(timed(lambda: setattr(w.tab, "selected_index", 5)))
    rows.append(("Source tab, first", source))
    print(f"a {len(big) / 1e6:.1f} MB cell ({big.count(chr(10))} lines), beside the small cell's cold compile")
    print(f"{'figure':<22}{'n':>4}  {'median ms (min)':>20}  {'x compile':>8}")
    for name, times in rows:
        print(row(name, times, compile_ms))
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    import IPython
    import ipywidgets
    print(f"python {platform.python_version()}  IPython {IPython.__version__}  ipywidgets "
          f"{ipywidgets.__version__}  NVRTC {cuda_magic.get_backend('nvrtc').version()}  "
          f"CPUs {os.cpu_count()}  --arch {args.arch}")
    print(f"nvdisasm: {cuda_magic.tools.find('nvdisasm')}")
    print()
    view(build(SCALE, {"arch": args.arch})).widget()    # imports (ipywidgets, pygments) once
    for label, src in (("small cell", SCALE), ("2-kernel cell", BIG)):
        bench(label, src, args.arch, args.repeat)
    for label, src, options in (("small cell", SCALE, {"arch": args.arch}),
                                ("spilling kernel (--maxrregcount=24)", HEAVY,
                                 {"arch": args.arch, "nvrtc": ["--use_fast_math",
                                                               "--maxrregcount=24"]})):
        bench_tabs(label, src, options, max(1, args.repeat // 2))
    bench_big(args.arch, max(1, args.repeat // 5))
    bench_timeline(max(1, args.repeat // 5))


def bench_timeline(n: int, events: int = 500_000) -> None:
    """A k.timeline of ``events`` ranges (132 SMs x 4 warps) drawn: the first chart (the events
    read into arrays, then the SVG) and a zoomed redraw (the arrays reused); CPU seconds."""
    from cuda_magic.display.timeline import TimelineView
    sys.path.insert(0, os.path.join(ROOT, "tests", "display"))
    from test_timeline_view import many_events      # the timeline the view's test draws
    t = many_events(events)
    first, zoomed = [], []
    for _ in range(n):
        v = TimelineView(t)
        start = time.process_time()
        v.chart()
        first.append((time.process_time() - start) * 1e3)
        start = time.process_time()
        v.chart(window=(10_000, 12_000))
        zoomed.append((time.process_time() - start) * 1e3)
    print(f"a timeline of {events:,} events (CPU time; the test checks the shapes are bounded)")
    print(f"{'figure':<22}{'n':>4}  {'median ms (min)':>20}")
    for name, times in (("first chart", first), ("zoomed redraw", zoomed)):
        print(f"{name:<22}{n:>4}  {statistics.median(times):9.2f} ({min(times):8.2f})")
    print()


if __name__ == "__main__":
    main()
