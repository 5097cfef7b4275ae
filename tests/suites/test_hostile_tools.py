"""Hostile tools and sizes: big cells in the view, -lineinfo markers from headers, flags that
break "in memory", Ctrl-C and the compile time limit (real NVRTC and nvcc, no GPU needed)."""

import _thread
import os
import re
import subprocess
import threading
import time
from dataclasses import replace
from html import unescape

import pytest

import cuda_magic
from conftest import ARCH, SAXPY, cfg
from cuda_magic import CellError, CompileError, ConfigError, build, compile_source, sass, view
from cuda_magic.compile.backends import limits, nvcc as nvcc_backend
from cuda_magic.compile.backends.limits import CompileTimeoutError, set_compile_timeout
from cuda_magic.config import RESERVED, validate
from cuda_magic.display import markup as html
from cuda_magic.display.sass import annotate


def _plain(markup: str) -> str:
    return unescape(re.sub(r"<[^>]+>", "", markup))


# -- 13: a big cell's view ----------------------------------------------------------------------

def _big_cell(megabytes: float) -> str:
    """Realistic CUDA C++ (not #if 0, which pygments lexes as one comment) of about this size."""
    body, i = [], 0
    while sum(map(len, body)) < megabytes * 1e6:
        body.append(f"__device__ float f{i}(const float* x, int i) {{\n    float acc = {i}.0f;\n"
                    + "    acc = fmaf(acc, x[(i + 3) & 63], 1.0f) * 0.5f;  // a <step>\n" * 8
                    + "    return acc;\n}\n")
        i += 1
    return SAXPY + "".join(body) + "// the last line <end>\n"


def test_a_multi_megabyte_cell_views_quickly_with_capped_colours():
    big = _big_cell(4.5)
    r = replace(compile_source(SAXPY, cfg()), source=big)    # a real build, shown as the big cell
    v = view(r)
    page = v.html(sass=False)      # was 10-30 s with pygments over every line: the colours are
    w = v.widget()                 # capped (below); bench_display.py times it

    source = page[page.index(">Source</summary>"):]
    coloured = len(re.findall(r"padding-right: 5px;\">\s*\d+</span>", source))  # pygments' numbers
    assert 0 < coloured <= html.HIGHLIGHT_LINES
    lines = big.count("\n")
    assert f"lines {coloured + 1}–{lines} are shown without colours" in _plain(source)
    assert "// the last line <end>" in _plain(source)           # the rest is there, escaped
    assert "<end>" not in source and "&lt;end&gt;" in source

    # The widget's Source tab of a big cell is made when it is first opened, capped the same way.
    tab = w.heat.pane
    assert "computed when this tab is opened" in tab.value and "f0(" not in tab.value
    w.tab.selected_index = 5
    assert "shown without colours" in _plain(tab.value) and "// the last line <end>" in _plain(tab.value)


def test_a_usual_cell_is_coloured_whole_and_at_once():
    r = compile_source(SAXPY, cfg())
    w = view(r).widget()
    assert "without colours" not in w.heat.pane.value
    assert re.search(r">\s*1</span>", w.heat.pane.value)
    assert SAXPY.startswith("\n")          # a leading blank line keeps its number
    numbered = re.findall(r">\s*(\d+)</span>([^\n]*)", w.heat.pane.value)
    assert [n for n, rest in numbered if "extern" in rest] == ["2"]
    one_line = html.source("x" * (html.HIGHLIGHT_BYTES + 10))   # one huge line: plain text
    assert "line 1 is shown without colours" in _plain(one_line)


# -- 14: -lineinfo markers from headers --------------------------------------------------------

HELPER = """// helper.cuh
__device__ __noinline__ float twice(float v) {
    return v * 2.0f + 1.0f;
}
"""
SESSION = """// mem.cuh
__device__ __noinline__ float quad(float v) {
    float r = sqrtf(v);
    return r * 4.0f;
}
"""
USES = """#include "helper.cuh"
#include "mem.cuh"
#include <cuda/std/cmath>
extern "C" __global__ void k(const float* x, float* y) {
    int i = threadIdx.x;
    y[i] = twice(x[i]) + quad(x[i + 1]) + cuda::std::fmax(x[i], x[i + 2]);
}
"""


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_lineinfo_markers_name_their_file(compiler, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "helper.cuh").write_text(HELPER)
    cuda_magic.define_header("mem.cuh", SESSION)
    try:
        r = compile_source(USES, cfg(compiler=compiler, target_format="cubin",
                                     **{compiler: ["-lineinfo"]}), force=True)
        raw = sass(r, "k")
        shown = annotate(raw, USES, r.inputs)
    finally:
        cuda_magic.remove_header("mem.cuh")
    assert re.search(r'//## File "[^"]*helper\.cuh", line 3$', raw, re.M)   # not inlined
    markers = [ln.strip() for ln in shown.splitlines() if ln.strip().startswith("//##")]
    cell, helper, mem = USES.splitlines(), HELPER.splitlines(), SESSION.splitlines()
    for m in markers:
        if (q := re.fullmatch(r"//## line (\d+)(?:, inlined at [^|]*)? \| (.*)", m)):
            assert cell[int(q.group(1)) - 1].strip() == q.group(2)       # only the cell's lines
        if (q := re.fullmatch(r"//## helper\.cuh:(\d+)(?:, inlined at [^|]*)? \| (.*)", m)):
            assert helper[int(q.group(1)) - 1].strip() == q.group(2)
        if (q := re.fullmatch(r"//## mem\.cuh:(\d+)(?:, inlined at [^|]*)? \| (.*)", m)):
            assert mem[int(q.group(1)) - 1].strip() == q.group(2)
    assert "//## helper.cuh:3 | return v * 2.0f + 1.0f;" in markers      # not the cell's line 3
    assert "//## line 3 | #include <cuda/std/cmath>" not in markers
    assert any(re.fullmatch(r"//## mem\.cuh:[34] \| .*", m) for m in markers)   # %%cuda_header
    toolkit = [m for m in markers if "cuda/std/" in m.split(",")[0]]
    assert toolkit and all(" | " not in m for m in toolkit)                # location only
    assert any(re.search(r"inlined at line 6$", m) for m in toolkit)

    # The view (widget SASS tab) says the same; a header changed on disk since is not quoted.
    w = view(r).widget()
    w.tab.selected_index = 3
    assert "helper.cuh:3 | return v * 2.0f + 1.0f;" in _plain(w.sass.pane.value)
    (tmp_path / "helper.cuh").write_text(HELPER.replace("1.0f", "3.0f"))
    again = annotate(raw, USES, r.inputs)
    assert re.search(r"^  //## helper\.cuh:3$", again, re.M)


# -- 15: flags that break "in memory" -----------------------------------------------------------

@pytest.mark.parametrize("key,flag,why", [
    ("nvcc", "-M", "dependency"), ("nvcc", "--generate-dependencies", "dependency"),
    ("nvcc", "-MM", "dependency"), ("nvcc", "--generate-nonsystem-dependencies", "dependency"),
    ("nvcc", "-MD", "dependency"), ("nvcc", "-MMD", "dependency"),
    ("nvcc", "--generate-dependencies-with-compile", "dependency"),
    ("nvcc", "-MF=deps.d", "dependency"), ("nvcc", "-MF deps.d", "dependency"),
    ("nvcc", "-MF", "dependency"), ("nvcc", "--dependency-output=deps.d", "dependency"),
    ("nvcc", "-MT=x.o", "dependency"), ("nvcc", "--dependency-target-name x.o", "dependency"),
    ("nvcc", "--keep", "intermediate files"), ("nvcc", "-keep", "intermediate files"),
    ("nvcc", "--keep-dir=kd", "intermediate files"), ("nvcc", "-keep-dir kd", "intermediate files"),
    ("nvcc", "--save-temps", "intermediate files"), ("nvcc", "-save-temps", "intermediate files"),
    ("nvcc", "--dryrun", "list"), ("nvcc", "-dryrun", "list"),
    ("nvcc", "--version", "version"), ("nvcc", "-V", "version"),
    ("nvcc", "--help", "help"), ("nvcc", "-h", "help"),
    ("nvcc", "-E", "preprocessed"), ("nvcc", "--preprocess", "preprocessed"),
    ("nvcc", "--run", "run a host program"), ("nvcc", "-run", "run a host program"),
    ("nvcc", "--fdevice-syntax-only", "no device code"),
    ("nvcc", "--time=phases.csv", "timing file"), ("nvcc", "-time phases.csv", "timing file"),
    ("nvrtc", "--fdevice-syntax-only", "no device code"),
    ("nvrtc", "-fdevice-syntax-only", "no device code"),
    ("nvrtc", "--create-pch=x.pch", "precompiled headers"),
    ("nvrtc", "-create-pch=x.pch", "precompiled headers"),
    ("nvrtc", "--use-pch=x.pch", "precompiled headers"),
    ("nvrtc", "-use-pch=x.pch", "precompiled headers"),
    ("nvrtc", "--pch-dir=/tmp", "precompiled headers"),
    ("nvrtc", "-pch-dir=/tmp", "precompiled headers"),
    ("nvrtc", "--pch", "precompiled headers"), ("nvrtc", "-pch", "precompiled headers"),
    ("nvrtc", "--time=/tmp/t.csv", "timing file"), ("nvrtc", "-time=t.csv", "timing file"),
    ("nvrtc", "--time", "timing file"),
    ("nvrtc", "--fdevice-time-trace=/tmp/t.json", "trace file"),
    ("nvrtc", "-fdevice-time-trace=t.json", "trace file"),
])
def test_flags_that_break_in_memory_are_reserved(key, flag, why):
    with pytest.raises(ConfigError) as e:
        validate({key: ["--use_fast_math", flag]})
    msg = str(e.value)
    assert e.value.key == key and repr(flag) in msg and "reserved" in msg and why in msg


def test_time_to_the_log_is_allowed():
    assert validate({"nvrtc": ["--time=-"], "nvcc": ["-time=-"]}) == \
        {"nvrtc": ["--time=-"], "nvcc": ["-time=-"]}
    r = compile_source(SAXPY, cfg(nvrtc=["--time=-"]), force=True)
    assert "phase name" in r.log and "scale" in r.symbols


def test_reserved_spellings_follow_nvcc_help():
    """Where nvcc --help lists a reserved option, its other spelling is reserved too."""
    text = subprocess.run([cuda_magic.tools.find("nvcc"), "--help"], capture_output=True,
                          text=True).stdout
    pairs = re.findall(r"^(--[\w-]+)(?: [^(\n]*?)?\s+\((-[\w-]+)\)", text, re.M)
    assert len(pairs) > 100
    for name in ("--generate-dependencies", "--keep-dir", "--dryrun", "--run", "--version"):
        assert name in dict(pairs)
    half = [(long, short) for long, short in pairs if (long in RESERVED) != (short in RESERVED)]
    assert half == []


def test_a_binary_without_kernels_is_an_error_naming_the_flags():
    cell = ('#ifdef WITH_KERNEL\nextern "C" __global__ void k(float* x) { x[0] = 1.0f; }\n'
            '#endif\n')
    for compiler in ("nvrtc", "nvcc"):
        with pytest.raises(CellError) as e:
            build(cell, {"arch": ARCH, "compiler": compiler, compiler: ["-DOTHER=1"]})
        msg = str(e.value)
        assert "holds no kernel" in msg and "k (line 2)" in msg and e.value.line == 2
        assert f"{compiler} -DOTHER=1" in msg
        m = build(cell, {"arch": ARCH, "compiler": compiler, compiler: ["-DWITH_KERNEL"]})
        assert list(m.kernels) == ["k"]
    templates_only = "template <typename T> __global__ void t(T* p) { p[0] = T(1); }\n"
    assert len(build(templates_only, {"arch": ARCH})) == 0       # nothing declared to bind: fine


# -- 16: Ctrl-C and the compile time limit -------------------------------------------------------

def _slow_cell(statements: int) -> str:
    """One kernel of thousands of dependent statements: compiles for seconds."""
    body = "\n".join(f"    acc = acc * {1.0001 + i * 1e-6:.7f}f + x[{(i * 7) % 64}];"
                     for i in range(statements))
    return (f'extern "C" __global__ void slow(const float* x, float* y) {{\n    float acc = 0.0f;\n'
            f"{body}\n    y[threadIdx.x] = acc;\n}}\n")


SLOW = _slow_cell(30000)     # ~4 s under NVRTC, ~7 s under nvcc on 2 cores
SLOWER = _slow_cell(40000)


class Interrupt:
    """Ctrl-C after ``seconds``: a timer thread calls ``_thread.interrupt_main()``."""

    def __init__(self, seconds: float, before=None):
        self.at = None
        self.before = before
        self.timer = threading.Timer(seconds, self._fire)

    def _fire(self):
        if self.before is not None:
            self.before()
        self.at = time.monotonic()
        _thread.interrupt_main()

    def __enter__(self):
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.timer.cancel()


def _abandoned(name: str = "cuda-magic nvrtc") -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


def _wait_abandoned():
    for t in _abandoned():
        t.join(120)


def test_ctrl_c_during_an_nvrtc_compile_lands_at_once():
    _wait_abandoned()
    with Interrupt(0.7) as ctrl_c:
        with pytest.raises(KeyboardInterrupt):
            compile_source(SLOW, cfg(), force=True)
    # landed at once: the compile was still running when the cell got its KeyboardInterrupt
    workers = _abandoned()
    assert ctrl_c.at is not None and workers, "the abandoned compile runs on in the background"
    for t in workers:       # ... to completion; its result is dropped
        t.join(120)
        assert not t.is_alive()


def _group(pid: int) -> list[int]:
    """Processes whose process group is ``pid`` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pid:
                out.append(int(entry))
    return out


def _gone(pgid: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def nvcc_runs(monkeypatch):
    """The nvcc processes started (Popen objects) and their private directories."""
    seen = []
    real = subprocess.Popen

    def spy(argv, *a, **kw):
        proc = real(argv, *a, **kw)
        seen.append((proc, os.path.dirname(argv[-1])))
        return proc
    monkeypatch.setattr(nvcc_backend.subprocess, "Popen", spy)
    return seen


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")
def test_ctrl_c_during_an_nvcc_compile_kills_its_process_group(nvcc_runs):
    state = {}

    def look():     # just before Ctrl-C: nvcc leads its own group, with cicc & co. in it
        proc, tmp = nvcc_runs[-1]
        state["pgid"], state["own"] = proc.pid, os.getpgid(proc.pid) == proc.pid
        state["members"], state["tmp"] = _group(proc.pid), tmp
    with Interrupt(1.5, before=look) as ctrl_c:
        with pytest.raises(KeyboardInterrupt):
            compile_source(SLOWER, cfg(compiler="nvcc", target_format="cubin"), force=True)
    assert nvcc_runs[-1][0].returncode < 0      # landed at once: nvcc was killed, not waited for
    assert state["own"] and len(state["members"]) >= 2          # nvcc and what it started
    assert _gone(state["pgid"], 5), "a process of nvcc's group survived"   # no cicc left
    end = time.monotonic() + 5
    while os.path.exists(state["tmp"]) and time.monotonic() < end:
        time.sleep(0.05)
    assert not os.path.exists(state["tmp"])                       # the directory is removed


@pytest.fixture
def limit(monkeypatch):
    monkeypatch.delenv(limits.ENV, raising=False)
    with cuda_magic.settings.override(compile_timeout=None):    # as it was, after
        cuda_magic.settings.reset("compile_timeout")             # the environment's, within
        yield set_compile_timeout


def test_compile_time_limit_nvrtc(limit):
    _wait_abandoned()
    limit(0.5)
    with pytest.raises(CompileTimeoutError) as e:
        compile_source(SLOW, cfg(), force=True)
    assert _abandoned(), "the limit ended the wait, not the compile finishing"
    msg = str(e.value)
    assert isinstance(e.value, CompileError) and e.value.timeout == 0.5
    assert "nvrtc did not finish compiling cell.cu within the compile time limit of 0.5 s" in msg
    assert "abandoned" in msg and "set_compile_timeout" in msg and limits.ENV in msg
    limit(None)
    assert compile_source(SAXPY, cfg(), force=True).symbols == ["scale"]
    _wait_abandoned()


def test_compile_time_limit_nvcc(limit, nvcc_runs):
    limit(1.0)
    with pytest.raises(CompileTimeoutError) as e:
        compile_source(SLOW, cfg(compiler="nvcc", target_format="cubin"), force=True)
    assert "nvcc did not finish" in str(e.value) and "killed" in str(e.value)
    proc, tmp = nvcc_runs[-1]
    assert proc.returncode is not None and proc.returncode < 0, proc.returncode   # killed
    assert _gone(proc.pid, 5)
    limit(60)       # a generous limit changes nothing
    assert compile_source(SAXPY, cfg(compiler="nvcc"), force=True).symbols == ["scale"]


def test_compile_time_limit_setting(limit, monkeypatch):
    assert limits.compile_timeout() is None                       # default: no limit
    monkeypatch.setenv(limits.ENV, "2.5")
    assert limits.compile_timeout() == 2.5
    monkeypatch.setenv(limits.ENV, "none")
    assert limits.compile_timeout() is None
    monkeypatch.setenv(limits.ENV, "soon")
    with pytest.raises(ConfigError, match=f"{limits.ENV}.*number of seconds.*'soon'"):
        limits.compile_timeout()
    limit(3)                                                      # the function wins
    assert limits.compile_timeout() == 3
    limit(0)
    assert limits.compile_timeout() is None
    for bad in (-1, float("nan"), "x"):
        with pytest.raises(ConfigError, match="set_compile_timeout"):
            limit(bad)


# -- 17: Ctrl-C cancels an NVRTC compile for real (nvrtcSetFlowCallback) -------------------------

class _Runs:
    """NVRTC programs compiled (through the backend's ``_run``, in whatever thread): when each
    started, and the status and time at which its nvrtcCompileProgram returned."""

    def __init__(self, monkeypatch):
        from cuda_magic.compile.backends import nvrtc as nvrtc_backend
        self.started, self.ended, self.lock = [], [], threading.Lock()
        real = nvrtc_backend._run

        def spy(*a, **kw):
            with self.lock:
                self.started.append(time.monotonic())
            out = real(*a, **kw)
            with self.lock:
                self.ended.append((out[0].name, time.monotonic()))
            return out
        monkeypatch.setattr(nvrtc_backend, "_run", spy)

    def ctrl_c(self, runs: int, after: float) -> "_WhenRunning":
        return _WhenRunning(self, runs, after)

    def wait(self, runs: int) -> list:
        """The ``runs`` ended compiles (Thread.join is no use here: Python 3.11 marks a thread
        stopped when Ctrl-C interrupts a join of it)."""
        end = time.monotonic() + 180
        while len(self.ended) < runs and time.monotonic() < end:
            time.sleep(0.02)
        return list(self.ended)


class _WhenRunning(Interrupt):
    """Ctrl-C ``after`` seconds once ``runs`` compiles are running (not before: a big cell's
    parsing takes a while on a loaded machine); never once the block has ended."""

    def __init__(self, spy: _Runs, runs: int, after: float):
        super().__init__(after)
        self.over = threading.Event()
        self.timer = threading.Thread(target=self._when, args=(spy, runs, after), daemon=True)

    def _when(self, spy, runs, after):
        end = time.monotonic() + 120
        while len(spy.started) < runs and time.monotonic() < end and not self.over.is_set():
            time.sleep(0.01)
        if not self.over.wait(after):
            self._fire()

    def __exit__(self, *exc):
        self.over.set()


def _cancels() -> bool:
    from cuda_magic.compile.backends import nvrtc as nvrtc_backend
    return nvrtc_backend.can_cancel()


def _idle():
    """No compile of an earlier test still running in the background."""
    end = time.monotonic() + 180
    while _abandoned() and any(t.is_alive() for t in _abandoned()) and time.monotonic() < end:
        time.sleep(0.05)


def test_ctrl_c_cancels_the_nvrtc_compile_for_real(monkeypatch):
    _idle()
    runs = _Runs(monkeypatch)
    with runs.ctrl_c(1, 0.5) as ctrl_c:
        with pytest.raises(KeyboardInterrupt):
            compile_source(SLOWER, cfg(), force=True)
    (status, ended), = runs.wait(1)
    if _cancels():      # NVRTC 13.x with nvrtcSetFlowCallback: stopped, no core kept busy
        assert status == "NVRTC_ERROR_CANCELLED" and ended - ctrl_c.at < 10, (status, ended - ctrl_c.at)
    else:               # older NVRTC: abandoned, it runs to its end (docs/hardening.md)
        assert status == "NVRTC_SUCCESS"


def test_the_compile_time_limit_cancels_the_nvrtc_compile_too(limit, monkeypatch):
    _idle()
    runs = _Runs(monkeypatch)
    limit(1.0)
    with pytest.raises(CompileTimeoutError) as e:
        compile_source(SLOWER, cfg(), force=True)
    given_up = time.monotonic()
    (status, ended), = runs.wait(1)
    if _cancels():
        assert status == "NVRTC_ERROR_CANCELLED" and ended - given_up < 10
        assert "cancelled" in str(e.value) and "background" not in str(e.value)
    else:
        assert status == "NVRTC_SUCCESS" and "background" in str(e.value)


def test_ctrl_c_cancels_the_parallel_nvrtc_builds_of_a_cell(monkeypatch):
    """Two configs, two builds in pool threads: Ctrl-C stops both compiles."""
    _idle()
    runs = _Runs(monkeypatch)
    cell = ("//| nvrtc: [--ftz=true]\n" + SLOWER + "\n//| nvrtc: [--ftz=false]\n"
            + SLOWER.replace("void slow(", "void slow2("))
    with runs.ctrl_c(2, 0.5) as ctrl_c:
        with pytest.raises(KeyboardInterrupt):
            build(cell, {"arch": ARCH}, force=True)
    ended = runs.wait(2)
    assert len(ended) == 2
    if _cancels():
        assert {s for s, _ in ended} == {"NVRTC_ERROR_CANCELLED"}
        assert max(t for _, t in ended) - ctrl_c.at < 10
    else:
        assert {s for s, _ in ended} == {"NVRTC_SUCCESS"}
