"""The benchmark scripts run and print their tables (figures are not asserted)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_bench_compile_runs():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_compile.py"),
                          "--repeat", "1"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    for row in ("NVRTC cold compile", "NVRTC cache hit", "nvcc compile"):
        assert row in out.stdout
