"""The benchmark scripts run and print their tables: each row there with a figure in its
place (what the figures are is not asserted).  A script whose figures need a GPU runs on the
stub driver here (``--fake-driver``: made-up times, the script's own code), or, where it has
no such part, prints its table from fixed rows; "no GPU: skipped" alone passes nothing."""

import contextlib
import io
import os
import re
import subprocess
import sys

import pytest

import cuda_magic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPU = cuda_magic.detect_arch() is not None
NUM = r"\d[\d,]*(?:\.\d+)?"          # a figure as the scripts print it: 4.12, 32,577, 676.7


def _rows(text: str, patterns: dict[str, str]) -> None:
    """Each ``name: pattern`` is one whole line of ``text`` (the name, then its figures)."""
    for name, pattern in patterns.items():
        assert re.search(rf"^{re.escape(name)}{pattern}$", text, re.M), (name, text)


def test_bench_compile_runs():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_compile.py"),
                          "--repeat", "1"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    for row in ("NVRTC cold compile", "NVRTC cache hit", "nvcc compile"):
        assert row in out.stdout


def _run_script(name: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", name), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_bench_cell_quick():
    out = _run_script("bench_cell.py", "--quick", "--repeat", "2")
    assert out.returncode == 0, out.stderr
    for row in ("cold small cell", "cold 2-kernel cell", "re-run small cell",
                "re-run 2-kernel cell", "%load_ext cuda_magic"):
        assert row in out.stdout
    assert "compiler calls during re-runs: 0" in out.stdout


# bench_launch's result table: figure, ours, the baseline, ratio, goal, PASS/MISS
LAUNCH_ROW = (rf"(?P<name> *\S.*?) +(?P<ours>{NUM} (?:µs|GB/s)|torch not installed) +"
              rf"(?P<base>{NUM} (?:µs|GB/s)|-) +(?P<ratio>\d+\.\d{{3}}|-) +"
              rf"(?P<goal>[<>]= \d\.\d\d|-)  (?P<result>PASS|MISS|-)")


def _launch_table(text: str) -> list[dict]:
    lines = text.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["figure", "cuda_magic"])
    assert lines[head].split() == ["figure", "cuda_magic", "baseline", "ratio", "goal", "result"]
    assert set(lines[head + 1]) == {"-"}
    rows = [re.fullmatch(LAUNCH_ROW, ln) for ln in lines[head + 2:] if ln.strip()]
    assert rows and all(rows), lines[head + 2:]
    return [r.groupdict() for r in rows]


def test_bench_launch_quick():
    """Its figures need a GPU and CuPy, and its one CPU part is --fake-driver (the test below):
    without them it says so in one line, and the table it would print is checked on fixed rows."""
    out = _run_script("bench_launch.py", "--quick", "--repeat", "2")
    assert out.returncode == 0, out.stderr
    if out.stdout.strip() not in ("no GPU: skipped", "no CuPy: skipped (it allocates the arrays)"):
        rows = _launch_table(out.stdout)
        assert {"empty, CuPy arrays vs CuPy", "scale, CuPy arrays vs cuda.core"} <= \
            {r["name"] for r in rows}
        assert all(r["result"] in ("PASS", "MISS") for r in rows if r["goal"] != "-")
        return
    import bench_launch
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        bench_launch.table([("empty, CuPy arrays vs CuPy", "3.10 µs", "3.50 µs", 3.1 / 3.5,
                             "<= 1.00", True),
                            ("scale, torch tensors vs cuda.core", "4.00 µs", "3.00 µs", 4 / 3,
                             "<= 1.15", False),
                            ("  via cuLaunchKernel vs CuPy", "3.30 µs", "3.50 µs", 3.3 / 3.5,
                             "-", None),
                            ("scale, torch tensors", "torch not installed", "-", None, "-", None),
                            ("4 GiB copy GB/s vs cuLaunchKernel", "3712 GB/s", "3730 GB/s",
                             3712 / 3730, ">= 0.97", True)])
    rows = _launch_table(printed.getvalue())
    assert [(r["ratio"], r["result"]) for r in rows] == [("0.886", "PASS"), ("1.333", "MISS"),
                                                         ("0.943", "-"), ("-", "-"),
                                                         ("0.995", "PASS")]


def test_bench_measure_runs():
    """Every row with its figures: on the GPU, or without one on the stub driver (made-up
    times: k.bench, the flush, graphs and the history all run)."""
    out = _run_script("bench_measure.py", "--repeat", "10", "--drift", "3",
                      *(() if GPU else ("--fake-driver",)))
    assert out.returncode == 0, out.stderr
    pct, gap = rf"{NUM}%", r" {2,}"
    _rows(out.stdout, {
        "copy 64 MiB, flush on": rf"{gap}{NUM} µs, {NUM} GB/s{gap}{pct} of {NUM} GB/s",
        "fma chains": rf"{gap}{NUM} TFLOP/s{gap}{pct} of {NUM} TFLOP/s",
        "L2 flush, 16 MB read": rf"{gap}on {NUM} µs / off {NUM} µs{gap}{NUM}x",
        "launch, empty kernel": rf"{gap}events {NUM} µs; graph of 20 {NUM} µs \(flush {NUM} µs\) "
                                rf"per launch{gap}graph/events {NUM}",
        "history drift, 3 calls": rf"{gap}largest change {pct}{gap}\d+ marked \(expect 0\)",
        "history edit, 3x loop": rf"{gap}[+-]{pct}{gap}(?:regression|improvement|not marked)"})
    assert "clocks (last bench): Clocks(" in out.stdout


def test_bench_display_runs():
    out = _run_script("bench_display.py", "--repeat", "1")
    assert out.returncode == 0, out.stderr
    for row in ("compile (cold)", "widget", "SASS tab, first", "SASS tab, again", "every displayed cell"):
        assert row in out.stdout


def test_bench_compare_runs():
    out = _run_script("bench_compare.py", "--repeat", "1", "--n", "4096")
    assert out.returncode == 0, out.stderr
    timed, ratio = rf" +1 +{NUM} \( *{NUM}\)", rf" +{NUM}x"
    _rows(out.stdout, {"compare, cold": timed + ratio, "compare, cached": timed + ratio,
                       "toggle, new config": timed + ratio, "toggle, back": timed + ratio,
                       "  by hand": timed + " *"})
    if GPU:
        _rows(out.stdout, {"run + report (GPU)": timed + ratio})
    else:
        assert "no GPU: the run rows are skipped" in out.stdout


def test_bench_headers_runs():
    out = _run_script("bench_headers.py", "--repeat", "1", "--reruns", "20",
                      "--headers", "utility,cmath")
    assert out.returncode == 0, out.stderr
    assert re.search(r"<utility> .* created/used .*x", out.stdout), out.stdout
    assert re.search(r"<cmath> .* -/- .*x", out.stdout) and "worst edit / bare" in out.stdout
    for row in ("heavy cell, no PCH", "heavy cell, PCH created", "heavy cell, PCH used",
                "re-run, 5 user headers, unchanged", "re-run after editing h4.cuh"):
        assert row in out.stdout


def test_bench_builds_runs():
    out = _run_script("bench_builds.py", "--repeat", "1", "--kernels", "2", "--fresh", "1")
    assert out.returncode == 0, out.stderr
    for row in ("2 kernels, one build", "2 kernels, 2 configs", "bare NVRTC (same argv)",
                "cuda_magic.build, --arch"):
        assert row in out.stdout


def test_bench_insight_runs():
    out = _run_script("bench_insight.py", "--repeat", "1", "--kernels", "6")
    assert out.returncode == 0, out.stderr
    for row in ("nvdisasm -c (plain)", "lines, -lineinfo build", "lines, plain build",
                "goal: lines <= 1.3x one nvdisasm run"):
        assert row in out.stdout


def test_bench_timing_quick():
    """The table's three kernels with their bench and events figures: on the GPU, or without
    one on the stub driver (no ncu there: its columns '-' and the line that says why)."""
    out = _run_script("bench_timing.py", "--quick", "--repeat", "3",
                      *(() if GPU else ("--fake-driver",)))
    assert out.returncode == 0, out.stderr
    assert re.search(r"^kernel +bench +events +ncu +ncu/free +bench/ncu +events/ncu$", out.stdout,
                     re.M), out.stdout
    ncu = rf"(?:{NUM}|-)"
    _rows(out.stdout, {k: rf" +{NUM} +{NUM}" + rf" +{ncu}" * 4 for k in ("copy", "saxpy",
                                                                          "reduction")})
    assert "ncu columns skipped: " in out.stdout or "times in µs; ncu:" in out.stdout
    if not GPU:
        assert "ncu columns skipped: the fake driver runs no ncu" in out.stdout


@pytest.mark.slow
def test_bench_hopper_quick():
    """The pipeline table's figures need no GPU: a row per corpus kernel, its times and rows."""
    out = _run_script("bench_hopper.py", "--quick")
    assert out.returncode == 0, out.stderr
    _rows(out.stdout, {f"  {k}": rf" +{arch} +{NUM} +{NUM}  \d+"
                       for k, arch in (("tma_wgmma_gemm", "sm_90a"), ("ws_scale_regs", "sm_90a"),
                                       ("cluster_swap", "sm_90a"), ("tcgen05_gemm", "sm_100a"))})
    assert "2-4. no GPU (or no PyTorch): skipped" in out.stdout or "2. tensor maps" in out.stdout


@pytest.mark.slow
def test_bench_export_quick():
    """Exporting needs no GPU: a row per format with its time, files and bytes."""
    out = _run_script("bench_export.py", "--quick")
    assert out.returncode == 0, out.stderr
    _rows(out.stdout, {"  torch": rf" +{NUM} +\d+ +{NUM}", "  cubin": rf" +{NUM} +\d+ +{NUM}",
                       "  wheel": rf" +{NUM} +\d+ +{NUM}   wheel {NUM} bytes"})
    assert "2. per-call overhead: no GPU: skipped" in out.stdout or "2. per-call overhead (" in \
        out.stdout


def test_bench_launch_fake_driver():
    out = _run_script("bench_launch.py", "--fake-driver", "--repeat", "1", "--launches", "200")
    assert out.returncode == 0, out.stderr
    _rows(out.stdout, {row: r" +\d+\.\d{3}" for row in (
        "empty, CuPy-like arrays", "empty, torch-like arrays", "scale, CuPy-like arrays",
        "scale, torch-like arrays", "the stub's cuLaunchKernel alone", "an empty loop")})


def test_bench_tune_quick():
    out = _run_script("bench_tune.py", "--stage", "compile", "--quick")
    assert out.returncode == 0, out.stderr
    for row in ("compile, one by one", "compile, tune", "4 candidates"):
        assert row in out.stdout


def test_bench_verify_quick():
    out = _run_script("bench_verify.py", "--quick", "--repeat", "1")
    assert out.returncode == 0, out.stderr
    for row in ("verify float32, host", "verify bfloat16, host", "verify e4m3, host",
                "np.isclose", "peak, chunk=", "MiB stated"):
        assert row in out.stdout, out.stdout
    assert "device rows: skipped" in out.stdout or "verify float32, device" in out.stdout


def test_bench_timeline_runs():
    """The builds' rows need no GPU; the timing rows are the GPU's (here: its table printed from
    fixed rows, after the line that says why they are skipped)."""
    out = _run_script("bench_timeline.py", "--repeat", "2", "--events", "64")
    assert out.returncode == 0, out.stderr
    _rows(out.stdout, {f"{k}: {f}": rf" +{NUM} +{NUM} +[+-]{NUM} +(?:{NUM}x|-)"
                       for k in ("marked_loop", "staged_scale")
                       for f in ("registers", "static shared bytes", "SASS instructions")})
    us = rf"{NUM} µs"
    timing = {"marked_loop, 64 events, 1 warp/SM": rf" +{us} +{us} +[+-]{us} +-?{NUM} ns",
              "marked_loop, 64 events, 32 warps/SM": rf" +{us} +{us} +[+-]{us} +-?{NUM} ns"}
    if GPU:
        _rows(out.stdout, timing)
        assert re.search(rf"^staged_scale, \d+ blocks x 8 tiles +{us} +{us} +[+-]{us} +{NUM}x$",
                         out.stdout, re.M), out.stdout
        assert re.search(r"^%globaltimer resolution: \d+ ns$", out.stdout, re.M)
        return
    assert "no GPU: the timing rows are skipped" in out.stdout
    import bench_timeline
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        bench_timeline.print_timing([("marked_loop, 64 events, 1 warp/SM", 3.0, 5.5, 64),
                                     ("marked_loop, 64 events, 32 warps/SM", 4.0, 9.0, 64)], 32)
    _rows(printed.getvalue(), timing)
    assert "%globaltimer resolution: 32 ns" in printed.getvalue()
