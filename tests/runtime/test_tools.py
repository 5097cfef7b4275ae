"""k.profile (Nsight Compute) and k.check (compute-sanitizer) in a helper process.

CPU: finding the tools, the launch spec (the child loads exactly the same bytes), parsing
the tools' output captured on the H200 (tests/data/tools/, see its README), the whole
orchestration against stand-in tools, and the errors without a GPU or a tool.
GPU (``-m gpu``): the real tools on real kernels.
"""

import hashlib
import json
import os
import stat
import subprocess
import sys

import numpy as np
import pytest

from cuda_magic import view
from cuda_magic.cell import build
from cuda_magic.compile.backends import ToolNotFoundError
from cuda_magic.runtime import CudaError, NoGPUError
from cuda_magic.runtime.nsight import reports, run as tools
from cuda_magic import tools as finder
from cuda_magic.errors import ArgumentError
from cuda_magic.runtime.nsight.child import CHILD_ENV, read_spec

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "tools")
ARCH = "sm_90a"

COPY = r'''
extern "C" __global__ void copy(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
'''
OOB = r'''
extern "C" __global__ void oob(float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n)
        y[i] = 1.0f;
}
'''
RACE = r'''
extern "C" __global__ void rsum(const float* x, float* out)
{
    __shared__ float part[256];
    part[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            part[threadIdx.x] += part[threadIdx.x + w];
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}
'''
LINEINFO = {"nvrtc+": ["-lineinfo"]}


def fixture(name: str) -> str:
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return f.read()


def kernel(src: str, name: str, options=None, arch: str | None = ARCH):
    opts = dict(options or {})
    if arch:
        opts["arch"] = arch
    return build(src, opts).kernels[name]


def _exe(path: str, text: str = "#!/bin/sh\nexit 0\n") -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


# finding ncu and compute-sanitizer: tests/test_tool_finder.py (cuda_magic.tools.find)


# ------------------------------------------------------------------------- the launch spec

class FakeDeviceArray:
    """A device array stand-in: ``__cuda_array_interface__`` and Numba's ``copy_to_host``."""

    def __init__(self, host):
        self.host = host
        self.__cuda_array_interface__ = {"shape": host.shape, "typestr": host.dtype.str,
                                         "data": (1234, False), "version": 3}

    def copy_to_host(self):
        return self.host.copy()


def test_spec_round_trip_same_bytes(tmp_path):
    k = kernel(COPY, "copy")
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros(1000, np.float32)
    notes = tools.write_spec(k, (4, 1, 1, 256, 1, 1), 0, (x, FakeDeviceArray(y), 1000), str(tmp_path))
    assert len(notes) == 1 and "'y'" in notes[0] and "copied to the host" in notes[0]
    loaded = read_spec(str(tmp_path))
    assert hashlib.sha256(loaded.binary).hexdigest() == hashlib.sha256(k.result.binary).hexdigest()
    assert loaded.symbol == "copy" and loaded.dims == (4, 1, 1, 256, 1, 1)
    np.testing.assert_array_equal(loaded.args[0], x)
    np.testing.assert_array_equal(loaded.args[1], y)
    assert loaded.args[2] == 1000 and loaded.params == k.params

    # The child process itself, stopped before CUDA: it read the very same bytes.
    argv, env = tools._child(str(tmp_path))
    out = subprocess.run(argv + ["--dry-run"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    said = json.loads(out.stdout)
    assert said["sha256"] == hashlib.sha256(k.result.binary).hexdigest()
    assert said["size"] == len(k.result.binary)
    assert said["args"][0]["sha256"] == hashlib.sha256(x.tobytes()).hexdigest()
    assert said["args"][2] == {"value": 1000}


def test_spec_refuses_other_bytes(tmp_path):
    k = kernel(COPY, "copy")
    tools.write_spec(k, (1, 1, 1, 32, 1, 1), 0, (None, None, 0), str(tmp_path))
    with open(tmp_path / "module.cubin", "r+b") as f:
        f.seek(100)
        f.write(b"\xff")
    argv, env = tools._child(str(tmp_path))
    out = subprocess.run(argv + ["--dry-run"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 3 and "sha256" in out.stderr


def test_spec_scalars_bytes_and_none(tmp_path):
    src = ('struct P { int a; float b; };\n'
           'extern "C" __global__ void k(P p, float* y, double d, bool f) {}\n')
    k = kernel(src, "k")
    tools.write_spec(k, (1, 1, 1, 1, 1, 1), 0, (b"\x01\0\0\0\0\0\x80?", None, np.float64(0.5), True),
                     str(tmp_path))
    args = read_spec(str(tmp_path)).args
    assert args == [b"\x01\0\0\0\0\0\x80?", None, 0.5, True]


def test_spec_rejects_what_cannot_cross(tmp_path):
    k = kernel(COPY, "copy")
    with pytest.raises(ArgumentError, match="'x'.*takes NumPy arrays"):
        tools.write_spec(k, (1, 1, 1, 1, 1, 1), 0, (object(), None, 1), str(tmp_path))
    with pytest.raises(ArgumentError, match="takes 3 arguments"):
        tools.write_spec(k, (1, 1, 1, 1, 1, 1), 0, (None,), str(tmp_path))


# ------------------------------------------------------------------------- ncu's output

COPY_ROWS = [(0, "cell.cu", 2), (16, "cell.cu", 4), (80, "cell.cu", 5), (240, "cell.cu", 6)]


def copy_profile():
    p = reports.parse_profile(fixture("ncu_copy_raw.csv"), fixture("ncu_copy_source_sass.csv"),
                              fixture("ncu_copy_details.csv"), kernel="copy", symbol="copy",
                              report="/tmp/r/copy-1.ncu-rep", dims=(262144, 1, 1, 256, 1, 1))
    return reports.assign_lines(p, COPY_ROWS, COPY, "cell lines from the binary's line info")


def test_parse_ncu_metrics():
    p = copy_profile()
    assert p.duration_us == pytest.approx(219.552)
    assert p.duration_ms == pytest.approx(0.219552)
    assert p.sm_pct == pytest.approx(48.278681)
    assert p.memory_pct == pytest.approx(49.005972)
    assert p.occupancy_pct == pytest.approx(71.766828)
    assert p.theoretical_occupancy_pct == 100.0
    assert (p.l1_pct, p.l2_pct, p.dram_pct) == pytest.approx((22.429639, 60.70304, 49.005972))
    assert p.dram_gbps == pytest.approx(2357.902)          # Tbyte/s in the report
    assert p.sm_ghz == pytest.approx(1.499648)
    assert p.registers == 16
    assert p["launch__occupancy_limit_registers"] == 16.0
    assert p["Kernel Name"] == "copy"
    with pytest.raises(KeyError, match="ask for it"):
        p["no__such_metric"]


def test_parse_ncu_stalls_and_advice():
    p = copy_profile()
    assert p.stalls[0][0] == "long_scoreboard" and p.stalls[0][1] == pytest.approx(45.496438)
    assert "selected" not in dict(p.stalls)
    assert p.cycles_per_issue == pytest.approx(57.549864)
    rules = [a.rule for a in p.advice]
    assert "CPIStall" in rules and "SOLBottleneck" in rules
    assert p.advice[0].type in ("WRN", "OPT")


def test_parse_ncu_per_line_metrics():
    p = copy_profile()
    assert sorted(p.lines) == [2, 4, 5, 6]
    line5 = p.lines[5]
    # the load and the store: the store waits for the load (long scoreboard)
    assert line5["sass"] == 10
    assert line5["samples"] == max(m["samples"] for m in p.lines.values())
    assert line5["stall_long_sb"] >= 16868
    assert line5["l2_sectors"] == 16777216      # 256 MiB read + 256 MiB written, in 32 B sectors
    assert sum(m["samples_pct"] for m in p.lines.values()) == pytest.approx(100.0)
    assert p.hottest(1)[0][0] == 5
    stg = next(i for i in p.instructions if i.sass.startswith("STG"))
    assert (stg.offset, stg.line) == (0xE0, 5)


def test_parse_ncu_noclock_duration():
    p = reports.parse_profile(fixture("ncu_copy_noclock_raw.csv"), kernel="copy", symbol="copy")
    assert p.duration_us == pytest.approx(202.336)


def test_units():
    m = reports.Metric
    assert reports.scaled(m(1500.0, "ns"), "us") == pytest.approx(1.5)
    assert reports.scaled(m(2.0, "ms"), "us") == pytest.approx(2000)
    assert reports.scaled(m(3.0, "usecond"), "us") == pytest.approx(3)
    assert reports.scaled(m(2.5, "Tbyte/s"), "GB/s") == pytest.approx(2500)
    assert reports.scaled(m(900.0, "Mbyte/s"), "GB/s") == pytest.approx(0.9)
    assert reports.scaled(m(1.98, "Ghz"), "GHz") == pytest.approx(1.98)
    assert reports.scaled(m(1.98, "cycle/nsecond"), "GHz") == pytest.approx(1.98)
    assert reports.number("65,536") == 65536 and reports.number("n/a") is None


def test_the_two_reports_have_a_module_each():
    """``runtime/nsight/ncu_report.py`` (Profile) and ``runtime/nsight/sanitizer_report.py`` (Check);
    ``runtime.reports`` is both, one import, as before the split."""
    from cuda_magic.runtime.nsight import ncu_report, sanitizer_report
    assert reports.Profile is ncu_report.Profile and reports.Check is sanitizer_report.Check
    assert set(reports.__all__) == {*ncu_report.__all__, *sanitizer_report.__all__, "short_dim"}
    assert all(getattr(reports, name) is not None for name in reports.__all__)
    assert not set(ncu_report.__all__) & set(sanitizer_report.__all__)
    assert reports.short_dim((8, 8, 1)) == "(8, 8)" and reports.short_dim((256, 1, 1)) == "256"


def test_profile_text_and_html():
    p = copy_profile()
    text = view(p).text()
    for part in ("copy[grid=262144, block=256]", "219.55 µs", "compute (SM) 48.3 %",
                 "memory 49.0 %", "71.8 % achieved", "DRAM 49.0 % (2,358 GB/s)",
                 "long_scoreboard 45.5", "/tmp/r/copy-1.ncu-rep", "if (i < n) y[i] = x[i];"):
        assert part in text, part
    table = view(p).lines()
    assert table.count("\n") == 5 and "87.7%" in table
    page = view(p).html()
    assert "&lt;" in page and "if (i &lt; n)" in page and "<table" in page
    assert repr(p).startswith("<Profile copy 219.6 µs")


# ------------------------------------------------------------------------- compute-sanitizer's output

def test_parse_memcheck_with_lineinfo():
    c = reports.parse_check(fixture("memcheck_oob_lineinfo.txt"), tool="memcheck", kernel="oob",
                            symbol="oob", dims=(4, 1, 1, 256, 1, 1))
    c = reports.assign_check_lines(c, None, OOB)
    errors = [f for f in c.findings if f.kind == "error"]
    assert len(errors) == 1
    f = errors[0]
    assert f.title == "Invalid __global__ write of size 4 bytes"
    assert (f.line, f.block, f.thread) == (6, (3, 0, 0), (232, 0, 0))
    assert f.sites[0].text.strip() == "y[i] = 1.0f;" and not f.sites[0].mapped
    assert any("out of bounds" in d for d in f.details)
    assert c.errors == 4 and not c.ok
    assert [f.kind for f in c.findings].count("api") == 3
    text = view(c).text()
    assert "at cell line 6, block (3,0,0), thread (232,0,0)" in text and "y[i] = 1.0f;" in text


def test_parse_memcheck_without_lineinfo_maps_through_inspection_build():
    k = kernel(OOB, "oob")
    c = reports.parse_check(fixture("memcheck_oob_plain.txt"), tool="memcheck", kernel="oob",
                            symbol="oob", dims=(4, 1, 1, 256, 1, 1))
    site = next(f for f in c.findings if f.kind == "error").sites[0]
    assert (site.symbol, site.offset, site.line) == ("oob", 0xC0, None)
    rows, note = tools.line_rows(k.result, "oob")
    assert "inspection build" in note and "same" in note
    reports.assign_check_lines(c, rows, k.result.source, note)
    assert (site.line, site.mapped) == (6, True)
    assert "(mapped by cuda-magic)" in view(c).text()


def test_parse_memcheck_clean():
    c = reports.parse_check(fixture("memcheck_clean.txt"), tool="memcheck")
    assert [f.kind for f in c.findings] == ["api"]
    assert c.errors == 1


def test_parse_racecheck_analysis():
    c = reports.parse_check(fixture("racecheck_race.txt"), tool="racecheck", kernel="rsum",
                            symbol="rsum")
    reports.assign_check_lines(c, None, RACE)
    (f,) = c.findings
    assert f.title == "Race reported between these accesses"
    assert [(s.access, s.line) for s in f.sites] == [("Read", 8), ("Write", 5), ("Write", 8)]
    assert f.sites[1].hazards == 2432
    assert c.errors == 1 and not c.ok
    assert "part[threadIdx.x] += part[threadIdx.x + w];" in view(c).text()


def test_parse_racecheck_hazards_block_and_threads():
    c = reports.parse_check(fixture("racecheck_hazard.txt"), tool="racecheck", symbol="rsum")
    assert len(c.findings) == 4 and c.errors == 3968
    f = c.findings[0]
    assert f.block == (2, 0, 0)
    assert [(s.access, s.thread, s.line) for s in f.sites] == [("Write", (128, 0, 0), 5),
                                                                ("Read", (0, 0, 0), 8)]


def test_lines_need_lineinfo_or_same_code():
    k = kernel(COPY, "copy", LINEINFO)
    rows, note = tools.line_rows(k.result, "copy")
    assert rows == COPY_ROWS and "line info (-lineinfo)" in note


# ------------------------------------------------------------------------- errors on CPU

@pytest.fixture
def no_gpu(monkeypatch):
    from cuda_magic.compile import arch
    monkeypatch.setattr(arch, "detect_arch", lambda: None)


def test_profile_and_check_need_a_gpu(no_gpu):
    k = kernel(COPY, "copy")
    x = np.zeros(4, np.float32)
    with pytest.raises(NoGPUError, match=r"copy\.profile\(\) needs a GPU"):
        k.profile(1, 4, x, x, 4)
    with pytest.raises(NoGPUError, match=r"copy\.check\(\) needs a GPU"):
        k.check(1, 4, x, x, 4)


def test_profile_without_ncu(monkeypatch, tmp_path):
    monkeypatch.setattr(tools, "_need_gpu", lambda k, what: None)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(finder, "SYSTEM", {})
    monkeypatch.setattr(finder, "_pathfinder_knows", lambda name: False)
    k = kernel(COPY, "copy")
    x = np.zeros(4, np.float32)
    with pytest.raises(ToolNotFoundError, match=r"ncu was not found \(looked in PATH\); install "
                                                r"Nsight Compute"):
        k.profile(1, 4, x, x, 4)
    with pytest.raises(ToolNotFoundError, match="compute-sanitizer was not found"):
        k.check(1, 4, x, x, 4)


def test_bad_settings():
    k = kernel(COPY, "copy")
    x = np.zeros(4, np.float32)
    with pytest.raises(ArgumentError, match="tool='bogus'"):
        k.check(1, 4, x, x, 4, tool="bogus")
    with pytest.raises(ArgumentError, match="print_limit"):
        k.check(1, 4, x, x, 4, print_limit=0)
    with pytest.raises(ArgumentError, match="set="):
        k.profile(1, 4, x, x, 4, set="full; rm")
    with pytest.raises(ArgumentError, match="clock_control"):
        k.profile(1, 4, x, x, 4, clock_control="boost")
    with pytest.raises(ArgumentError, match="grid"):
        k.profile(0, 4, x, x, 4)


def test_counter_permission_error_says_how_to_fix():
    with pytest.raises(tools.ProfilerPermissionError, match="NVreg_RestrictProfilingToAdminUsers=0"):
        tools._ncu_errors("==ERROR== ERR_NVGPUCTRPERM (the counters are root-only here)",
                          kernel(COPY, "copy"), None, "/nonexistent.ncu-rep")


def test_fault_hint_offers_the_exact_check_call(monkeypatch):
    monkeypatch.delenv(CHILD_ENV, raising=False)
    k = kernel(COPY, "copy")
    hint = tools.check_hint(k, (4, 1, 1, 256, 1, 1))
    assert hint.endswith("copy.check(4, 256, x, y, n)")
    assert "shared_mem=64" in tools.check_hint(k, (4, 2, 1, 16, 16, 1), 64)
    assert "copy.check((4, 2), (16, 16), x, y, n, shared_mem=64)" in tools.check_hint(
        k, (4, 2, 1, 16, 16, 1), 64)
    exc = CudaError("waiting for the kernel: CUDA_ERROR_ILLEGAL_ADDRESS (...)", "CUDA_ERROR_ILLEGAL_ADDRESS")
    assert tools.add_check_hint(exc, k, (4, 1, 1, 256, 1, 1)) is exc
    assert str(exc).endswith("copy.check(4, 256, x, y, n)")
    other = CudaError("out of memory", "CUDA_ERROR_OUT_OF_MEMORY")
    assert "check(" not in str(tools.add_check_hint(other, k, (4, 1, 1, 256, 1, 1)))
    monkeypatch.setenv(CHILD_ENV, "1")        # inside the helper: no hint
    assert tools.check_hint(k, (4, 1, 1, 256, 1, 1)) == ""


# ------------------------------------------------------------------------- against stand-in tools

FAKE = r'''#!{python}
"""A stand-in for ncu / compute-sanitizer: plays back the captured output of the H200 runs and
runs the real helper process with --dry-run (no CUDA), logging what it was given."""
import json, os, subprocess, sys
args = sys.argv[1:]
data, log = {data!r}, os.environ["FAKE_TOOL_LOG"]
if "--version" in args:
    print("Version 2025.3.1.0 (stand-in)")
    sys.exit(0)
if "--import" in args:
    page = args[args.index("--page") + 1]
    name = {{"raw": "ncu_copy_raw.csv", "source": "ncu_copy_source_sass.csv",
            "details": "ncu_copy_details.csv"}}[page]
    sys.stdout.write(open(os.path.join(data, name)).read())
    sys.exit(0)
child = args[args.index("-m") - 1:]
done = subprocess.run(child + ["--dry-run"], capture_output=True, text=True)
with open(log, "w") as f:
    json.dump({{"argv": args, "child": done.stdout, "rc": done.returncode, "err": done.stderr}}, f)
mode = os.environ.get("FAKE_TOOL_MODE", "")
if mode == "perm":
    print("==ERROR== ERR_NVGPUCTRPERM")
    sys.exit(1)
if "--export" in args:
    open(args[args.index("--export") + 1], "w").write("stand-in report")
    sys.exit(0)
sys.stdout.write(open(os.path.join(data, mode)).read())
sys.exit(86)
'''


@pytest.fixture
def stand_ins(monkeypatch, tmp_path):
    bin_dir = tmp_path / "bin"
    text = FAKE.format(python=sys.executable, data=DATA)
    _exe(str(bin_dir / "ncu"), text)
    _exe(str(bin_dir / "compute-sanitizer"), text)
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("FAKE_TOOL_LOG", str(tmp_path / "log.json"))
    monkeypatch.setattr(tools, "_need_gpu", lambda k, what: None)
    monkeypatch.setattr(tools, "_reports", {"dir": str(tmp_path / "reports"), "n": 0})
    (tmp_path / "reports").mkdir()

    def log():
        with open(tmp_path / "log.json") as f:
            return json.load(f)
    return log


def test_profile_end_to_end_with_stand_in_ncu(stand_ins):
    k = kernel(COPY, "copy", LINEINFO)
    n = 1 << 10
    x = np.random.rand(n).astype(np.float32)
    p = k.profile((n + 255) // 256, 256, x, np.zeros_like(x), n, metrics=["dram__bytes.sum"])
    log = stand_ins()
    argv = log["argv"]
    for flag in ("--target-processes", "--kernel-name-base", "--launch-count", "--export",
                 "--clock-control"):
        assert flag in argv
    assert argv[argv.index("--kernel-name") + 1] == "copy"
    assert argv[argv.index("--launch-count") + 1] == "1"
    assert "SourceCounters" in argv and "WarpStateStats" in argv
    assert "dram__bytes.sum" in argv[argv.index("--metrics") + 1].split(",")
    child = json.loads(log["child"])
    assert child["sha256"] == hashlib.sha256(k.result.binary).hexdigest()   # the same bytes
    assert child["dims"] == [4, 1, 1, 256, 1, 1]
    assert p.duration_us == pytest.approx(219.552)
    assert p.report.endswith("copy-1.ncu-rep") and os.path.exists(p.report)
    assert p.hottest(1)[0][0] == 5 and "line info (-lineinfo)" in p.line_note
    assert p.tool_version == "Nsight Compute 2025.3.1.0"
    assert any("dram__bytes.sum" in n for n in p.notes)     # asked for, not in that report


def test_profile_permission_error_with_stand_in_ncu(stand_ins, monkeypatch):
    monkeypatch.setenv("FAKE_TOOL_MODE", "perm")
    k = kernel(COPY, "copy")
    x = np.zeros(4, np.float32)
    with pytest.raises(tools.ProfilerPermissionError, match="run as root|Run as root"):
        k.profile(1, 4, x, x, 4)


def test_check_end_to_end_with_stand_in_sanitizer(stand_ins, monkeypatch):
    monkeypatch.setenv("FAKE_TOOL_MODE", "memcheck_oob_plain.txt")
    k = kernel(OOB, "oob")
    c = k.check(4, 256, np.zeros(1000, np.float32), 1000)
    argv = stand_ins()["argv"]
    assert argv[argv.index("--tool") + 1] == "memcheck"
    assert argv[argv.index("--report-api-errors") + 1] == "no"
    assert "--error-exitcode" in argv and "--print-limit" in argv
    assert json.loads(stand_ins()["child"])["sha256"] == hashlib.sha256(k.result.binary).hexdigest()
    err = next(f for f in c.findings if f.kind == "error")
    assert (err.line, err.block, err.thread) == (6, (3, 0, 0), (232, 0, 0))
    assert err.sites[0].mapped and c.exit_code == 86 and not c.ok
    assert "at cell line 6" in view(c).text() and "<pre" in view(c).html()


# ------------------------------------------------------------------------- GPU

def _tool_or_skip(name):
    try:
        return finder.find(name)
    except ToolNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.mark.gpu
def test_gpu_profile_copy_kernel():
    _tool_or_skip("ncu")
    k = kernel(COPY, "copy", LINEINFO, arch=None)
    n = 1 << 24
    x = np.random.rand(n).astype(np.float32)
    p = k.profile((n + 255) // 256, 256, x, np.zeros_like(x), n)
    assert p.duration_us > 0
    for v in (p.sm_pct, p.memory_pct, p.occupancy_pct, p.l1_pct, p.l2_pct, p.dram_pct):
        assert v is not None and 0 <= v <= 100
    assert p.stalls and p.dram_gbps > 100
    assert os.path.exists(p.report) and p.report.endswith(".ncu-rep")
    assert p.hottest(1)[0][0] == 5          # the load and the store
    assert "-lineinfo" in p.line_note and p.lines[5]["instructions"] > 0


# How k.bench and ncu's gpu__time_duration agree is benchmarks/bench_timing.py's table.


@pytest.mark.gpu
@pytest.mark.parametrize("options", [None, LINEINFO], ids=["plain", "lineinfo"])
def test_gpu_check_finds_out_of_bounds_write(options):
    _tool_or_skip("compute-sanitizer")
    k = kernel(OOB, "oob", options, arch=None)
    c = k.check(4, 256, np.zeros(1000, np.float32), 1000)
    assert not c.ok
    err = next(f for f in c.findings if f.kind == "error")
    assert "write" in err.title and err.line == 6
    assert err.thread is not None and err.block is not None
    assert err.sites[0].mapped == (options is None)
    assert all(f.kind != "api" for f in c.findings)        # --report-api-errors no


@pytest.mark.gpu
def test_gpu_check_clean_kernel():
    _tool_or_skip("compute-sanitizer")
    k = kernel(COPY, "copy", None, arch=None)
    c = k.check(4, 256, np.ones(1000, np.float32), np.zeros(1000, np.float32), 1000)
    assert c.ok and c.errors == 0, c.output


@pytest.mark.gpu
def test_gpu_racecheck_finds_the_missing_syncthreads():
    _tool_or_skip("compute-sanitizer")
    k = kernel(RACE, "rsum", LINEINFO, arch=None)
    c = k.check(4, 256, np.ones(1024, np.float32), np.zeros(4, np.float32), tool="racecheck")
    assert not c.ok
    lines = {s.line for f in c.findings for s in f.sites}
    assert 8 in lines                       # part[threadIdx.x] += part[threadIdx.x + w];


@pytest.mark.gpu
def test_gpu_fault_message_offers_check():
    far = ('extern "C" __global__ void far(float* y, int n)\n'
           '{ y[threadIdx.x + 400000000ll * (threadIdx.x + 1)] = 1.0f; }\n')
    code = ("import numpy as np\nfrom cuda_magic.cell import build\n"
            f"k = build({far!r}, {{}}).kernels['far']\n"
            "try:\n    k[1, 32](np.zeros(16, np.float32), 16)\n"
            "except Exception as e:\n    print(type(e).__name__, e)\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    env.pop(CHILD_ENV, None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.stdout.startswith("CudaError"), out.stdout + out.stderr
    assert "far.check(1, 32, y, n)" in out.stdout
