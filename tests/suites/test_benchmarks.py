"""The benchmark scripts run and print their tables (figures are not asserted)."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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


def test_bench_launch_quick():
    out = _run_script("bench_launch.py", "--quick", "--repeat", "2")
    assert out.returncode == 0, out.stderr
    assert ("no GPU: skipped" in out.stdout or "no CuPy: skipped" in out.stdout
            or "GB/s vs cuLaunchKernel" in out.stdout), out.stdout


def test_bench_measure_runs():
    out = _run_script("bench_measure.py", "--repeat", "10", "--drift", "3")
    assert out.returncode == 0, out.stderr
    if "no GPU: skipped" not in out.stdout:
        for row in ("copy 64 MiB", "fma chains", "L2 flush", "launch, empty kernel",
                    "history drift, 3 calls", "history edit, 3x loop"):
            assert row in out.stdout, out.stdout


def test_bench_display_runs():
    out = _run_script("bench_display.py", "--repeat", "1")
    assert out.returncode == 0, out.stderr
    for row in ("compile (cold)", "widget", "SASS tab, first", "SASS tab, again", "every displayed cell"):
        assert row in out.stdout


def test_bench_compare_runs():
    out = _run_script("bench_compare.py", "--repeat", "1", "--n", "4096")
    assert out.returncode == 0, out.stderr
    for row in ("compare, cold", "compare, cached", "toggle, new config", "toggle, back"):
        assert row in out.stdout
    assert "no GPU: the run rows are skipped" in out.stdout or "run + report (GPU)" in out.stdout


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
    out = _run_script("bench_timing.py", "--quick", "--repeat", "3")
    assert out.returncode == 0, out.stderr
    assert "no GPU: skipped" in out.stdout or "bench/ncu" in out.stdout, out.stdout


def test_bench_launch_fake_driver():
    out = _run_script("bench_launch.py", "--fake-driver", "--repeat", "1", "--launches", "200")
    assert out.returncode == 0, out.stderr
    for row in ("empty, CuPy-like arrays", "scale, torch-like arrays", "the stub's cuLaunchKernel alone"):
        assert row in out.stdout


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
