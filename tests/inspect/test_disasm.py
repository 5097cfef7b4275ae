"""One nvdisasm run per build serves the SASS and the per-line cost (inspect/disasm.py
life_ranges + listing, inspect/lines.py), made once even when two threads ask (the view's
background start and a tab opened meanwhile)."""

import re
import threading
import time

import pytest

import cuda_magic
from conftest import ARCH, HEAVY, SAXPY, cfg
from cuda_magic import build, compile_source, view
from cuda_magic.display import frontend
from cuda_magic.inspect import disasm, lines as lines_mod

SPILL = ["--use_fast_math", "--maxrregcount=24"]


@pytest.fixture
def runs(monkeypatch):
    """The nvdisasm / cuobjdump runs: (tool, its options)."""
    calls = []
    real = disasm._run

    def counting(tool, args, *rest, **kw):
        calls.append((tool, tuple(args)))
        return real(tool, args, *rest, **kw)
    monkeypatch.setattr(disasm, "_run", counting)
    return calls


@pytest.mark.parametrize("label, options", [
    ("no line info", {"nvrtc": " ".join(SPILL)}),
    ("-lineinfo", {"nvrtc": " ".join(SPILL + ["-lineinfo"])}),
    ("nvcc fatbin", {"compiler": "nvcc"}),
    ("ptx", {"target_format": "ptx"}),
])
def test_sass_then_heat_map_of_one_build_run_nvdisasm_once(runs, label, options):
    pytest.importorskip("ipywidgets")
    m = build(HEAVY + f"// once: {label}\n", cuda_magic.line_config(arch=ARCH, **options),
              force=True)
    w = view(m).widget()
    w.tab.selected_index = 3                                    # SASS
    assert "EXIT" in w.sass.pane.value
    w.tab.selected_index = 5                                    # Source: the heat map
    assert "click a line for its SASS" in w.heat.pane.value
    w.tab.selected_index = 1                                    # Resources: the hottest lines
    assert "heavy</b>: peak" in w.hot.value
    assert runs == [("nvdisasm", disasm.LIFE_RANGES)], runs


# nvdisasm's own paths in markers (absolute, or relative to nvcc's directory) as file names
_PATHS = re.compile(r'"[^"\n]*/([^"/\n]*)"')


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
@pytest.mark.parametrize("case", ["cub_heat.cu", "histogram.cu", "HEAVY"])
def test_the_listing_made_from_life_ranges_reads_as_nvdisasms_own(compiler, case):
    """The SASS made from the -plr run is nvdisasm -c -g -gi's text: the same lines, labels,
    spill marks, NOPs and -lineinfo markers (inline chains included), but file paths."""
    from corpus import CASES, KERNELS, missing
    if case == "HEAVY":
        src, flags = HEAVY, SPILL
    else:
        found = next(c for c in CASES if c.file == case)
        if missing(found, compiler):
            pytest.skip(missing(found, compiler))
        src, flags = (KERNELS / case).read_text(), ["--use_fast_math", *found.flags]
    for extra in ([], ["-lineinfo"]):
        r = compile_source(src, cfg(compiler=compiler, **{compiler: flags + extra}))
        elf = disasm.cubin(r)
        made = disasm.listing(disasm._run("nvdisasm", list(disasm.LIFE_RANGES), elf, ".cubin"), elf)
        plain = disasm._run("nvdisasm", list(disasm.PLAIN), elf, ".cubin")
        assert _PATHS.sub(r'"\1"', made) == _PATHS.sub(r'"\1"', plain), (case, extra)
        assert ("//## File" in made) == bool(extra)


def test_a_build_whose_life_ranges_skip_code_gets_the_plain_run(runs):
    """-G code has blocks -plr leaves out (unreachable): its SASS comes from nvdisasm -c."""
    r = compile_source(SAXPY + "// -G\n", cfg(nvrtc=["-G"]), force=True)
    text = cuda_magic.sass_text(r)
    assert runs == [("nvdisasm", disasm.LIFE_RANGES), ("nvdisasm", disasm.PLAIN)]
    plain = disasm._run("nvdisasm", list(disasm.PLAIN), r.binary, ".cubin")
    assert text == disasm._LINE_FILE.sub(r'\1"cell.cu"', plain)
    with pytest.raises(ValueError, match="is missing"):
        disasm.listing(disasm.life_ranges(r), r.binary)


def test_a_failed_life_range_run_falls_back_to_the_plain_run(monkeypatch):
    r = compile_source(SAXPY + "// plr fails\n", cfg(), force=True)
    real = disasm._run

    def no_plr(tool, args, *rest):
        if "-plr" in args:
            raise RuntimeError("nvdisasm failed (1): -plr is not supported")
        return real(tool, args, *rest)
    monkeypatch.setattr(disasm, "_run", no_plr)
    assert "FMUL" in cuda_magic.sass(r, "scale")


def test_a_tool_that_hangs_is_stopped(monkeypatch):
    import subprocess

    def hangs(*a, **kw):
        assert kw["timeout"] == disasm.TOOL_TIMEOUT_S
        raise subprocess.TimeoutExpired(a[0], kw["timeout"])
    monkeypatch.setattr(subprocess, "run", hangs)
    with pytest.raises(RuntimeError, match=r"nvdisasm -c ran past \d+ s and was stopped"):
        disasm._run("nvdisasm", ["-c"], b"", ".cubin")


def _result():
    return compile_source(SAXPY + "// made once\n", cfg())


def test_a_value_being_made_is_waited_for_not_made_again():
    r = _result()
    made, started = [], threading.Event()

    def slow():
        started.set()
        time.sleep(0.3)
        made.append(1)
        return "value"
    first = threading.Thread(target=lambda: disasm._cached(r, "slow", slow))
    first.start()
    started.wait(5)
    assert disasm._cached(r, "slow", lambda: made.append(2) or "other") == "value"
    first.join(5)
    assert made == [1] and r.derived["slow"] == "value"
    assert not any(isinstance(k, tuple) for k in r.derived)          # nothing left in the making


def test_a_value_whose_making_failed_is_made_by_the_one_waiting():
    r = _result()
    started, go = threading.Event(), threading.Event()

    def fails():
        started.set()
        go.wait(5)
        raise RuntimeError("nvdisasm failed")
    errors = []
    first = threading.Thread(target=lambda: errors.append(
        pytest.raises(RuntimeError, disasm._cached, r, "flaky", fails)))
    first.start()
    started.wait(5)
    threading.Timer(0.2, go.set).start()
    assert disasm._cached(r, "flaky", lambda: "made here") == "made here"
    first.join(5)
    assert errors and disasm._cached(r, "flaky", fails) == "made here"


def test_prefetch_makes_the_sass_and_the_lines_in_the_background(runs):
    r = compile_source(HEAVY + "// prefetched\n", cfg(nvrtc=SPILL), force=True)
    thread = lines_mod.prefetch([r])
    assert thread.daemon and thread.name == "cuda-magic prefetch"
    thread.join(120)
    assert disasm.has_sass(r) and "lines" in r.derived
    assert runs == [("nvdisasm", disasm.LIFE_RANGES)]
    cuda_magic.sass(r, "heavy")
    lines_mod.lines(r, "heavy")
    assert runs == [("nvdisasm", disasm.LIFE_RANGES)]
    assert lines_mod.prefetch([]) is None


def test_prefetch_drops_its_failures_and_the_tab_says_them(monkeypatch):
    pytest.importorskip("ipywidgets")
    r = compile_source(SAXPY + "// prefetch fails\n", cfg(), force=True)

    def missing(*a, **k):
        raise cuda_magic.ToolNotFoundError("nvdisasm was not found")
    monkeypatch.setattr(disasm, "_run", missing)
    lines_mod.prefetch([r]).join(60)                       # no exception escapes the thread
    assert not disasm.has_sass(r) and "lines" not in r.derived
    w = view(r).widget()
    w.tab.selected_index = 3
    assert "ToolNotFoundError: nvdisasm was not found" in w.sass.pane.value


def test_a_view_shown_in_a_kernel_starts_the_prefetch(runs, monkeypatch):
    """Shown in a Jupyter kernel, the view starts the first kernel's SASS and per-line cost at
    once, after its static HTML is made (which so has no SASS: the saved page does not depend
    on the thread's speed); the tabs opened then run nothing more.  A widget built outside a
    kernel (scripts, tests) starts nothing."""
    pytest.importorskip("ipywidgets")
    from cuda_magic.display.widget import prefetch_tabs
    m = build(HEAVY + "// shown in a kernel\n", {"arch": ARCH, "nvrtc": SPILL}, force=True)
    w = view(m).widget()
    assert prefetch_tabs(view(m)) is None and runs == []
    monkeypatch.setattr(frontend, "in_kernel", lambda: True)
    bundle = view(m)._repr_mimebundle_()
    assert "SASS (start)" not in bundle["text/html"]
    for t in [t for t in threading.enumerate() if t.name == "cuda-magic prefetch"]:
        t.join(120)
    assert disasm.has_sass(m.result) and "lines" in m.result.derived
    assert runs == [("nvdisasm", disasm.LIFE_RANGES)]
    w.tab.selected_index = 3
    w.tab.selected_index = 5
    assert "STL" in w.sass.pane.value and "click a line" in w.heat.pane.value
    assert runs == [("nvdisasm", disasm.LIFE_RANGES)]


def test_importing_cuda_magic_starts_nothing():
    import subprocess
    import sys
    code = ("import threading, cuda_magic, cuda_magic.display, cuda_magic.inspect.lines; "
            "print(sorted(t.name for t in threading.enumerate()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['MainThread']", out.stdout
