"""The views of a sweep (cuda_magic.display.tune): text, HTML, the SVG plot, the matplotlib
figure, view() and show().  Real Tunings built on the CPU (compile-only); the ran ones get
the fields a GPU bench would set (status, time, GPU), as tune()'s judging sets them."""

import io
import re
import sys
from dataclasses import replace
from html import escape

import numpy as np
import pytest

import cuda_magic
from conftest import ARCH
from cuda_magic.display import ShowError, show, view
from cuda_magic.display.tune import (MAX_TEXT_ROWS, NoMatplotlibError, PlotError, TuneView,
                                     figure, grouping, svg)
from cuda_magic.errors import Error
from cuda_magic.variants.tune import Tuning, tune

# 56 registers; spills under --maxrregcount=24; BAD=1 does not compile.
SRC = r'''
template<int BM> __global__ void k(float* y, int n) {
#if BAD
#error "<oops> & bad"
#endif
    float acc[48];
    #pragma unroll
    for (int j = 0; j < 48; ++j) acc[j] = y[threadIdx.x + j * n];
    #pragma unroll
    for (int r = 0; r < 8; ++r) {
        #pragma unroll
        for (int j = 0; j < 48; ++j) acc[j] = acc[j] * acc[(j + r + 1) % 48] + 1.0f;
    }
    float s = 0.f;
    #pragma unroll
    for (int j = 0; j < 48; ++j) s += acc[j] * (j + 1);
    y[blockIdx.x * BM + threadIdx.x] = s;
}
'''
SPACE = {"BM": [32, 64], "-DBAD": [0, 1], "maxrreg": [None, 24], "block": [128, 256],
         "tag": ["<b>"]}
GPU = "GPU 0 (NVIDIA <H200>)"


@pytest.fixture(scope="module")
def swept():
    """16 candidates: 4 compiled, 4 pruned (spills), 8 failed (#error)."""
    return tune(SRC, SPACE, arch=ARCH, compile_only=True)


def ran(t, results, pool="1 GPU of this host", group=None, notes=None):
    """``t`` as a bench would leave it: ``results`` maps a compiled candidate's position among
    the compiled ones to the fields the bench sets."""
    compiled = [c.index for c in t.candidates if c.status == "compiled"]
    fields = {compiled[i]: f for i, f in results.items()}
    cands = [replace(c, **fields.get(c.index, {})) for c in t.candidates]
    return Tuning(t.source, t.parameters, cands, t.options, t.preset, t.runs, pool,
                  t.notes if notes is None else notes, t.seconds, group)


@pytest.fixture
def benched(swept):
    """1 ok, 1 winner, 1 wrong (fastest, but wrong), 1 fault."""
    return ran(swept, {0: dict(status="ok", time_ms=0.0123, gpu=GPU, gbps=1000.0),
                       1: dict(status="ok", time_ms=0.0101, gpu=GPU, gbps=1234.5),
                       2: dict(status="wrong", time_ms=0.005, gpu=GPU,
                               reason="y differs at 3 of 100 elements (<first>)"),
                       3: dict(status="fault", gpu=GPU, reason="CUDA_ERROR_ILLEGAL_ADDRESS: <x>")},
               notes=["a <note> & more"])


def table_indices(text):
    """The # column of the text table, in order."""
    return [int(m.group(1)) for m in re.finditer(r"^  (\d+) ", text, re.M)]


def test_compile_only_text(swept):
    out = view(swept).text()
    lines = out.splitlines()
    assert lines[0].startswith("16 candidates: 4 compiled, 4 pruned, 8 failed (compile-only: "
                               "none benched) · compile ")
    assert lines[1] == ""             # no "no winner" line: nothing was meant to be timed
    head, kinds = lines[2].split(), lines[3].split()
    assert head[:6] == ["#", "BM", "BAD", "maxrreg", "block", "tag"]
    assert kinds == ["template", "macro", "flag", "launch", "launch"]
    assert "GPU" not in head and "GB/s" not in head and "TFLOP/s" not in head
    assert "status" in head and "reason" in head
    assert table_indices(out) == list(range(16))            # nothing timed: by index
    assert re.search(r"pruned +spills \d+ B", out)
    assert '#error directive: "<oops> & bad"' in out       # text is not escaped
    assert "Reproduce the winner" not in out
    assert re.search(r"^  0 +32 +0 +none +128 +<b> +\d+ +0 +\d+% +- +compiled", out, re.M)


def test_compile_only_html_escapes_and_has_no_plot(swept):
    h = view(swept).html()
    assert "<svg" not in h and "Reproduce the winner" not in h
    assert "&lt;oops&gt; &amp; bad" in h and "<oops>" not in h
    assert ">&lt;b&gt;</td>" in h and "<b></td>" not in h and "tag=<b>" not in h
    assert h.count("<tr") == 1 + 16
    assert "overflow: auto" in h                            # the table scrolls
    assert "template</span>" in h and "launch</span>" in h  # the kinds under the names
    assert 'opacity: 0.65">failed</span>' in h               # pruned/failed grey


def test_winner_header_and_order(benched):
    t = benched
    w = t.winner
    assert w.status == "winner" and w.time_ms == 0.0101
    out = view(t).text()
    lines = out.splitlines()
    assert lines[0].startswith("16 candidates: 1 ok, 1 winner, 4 pruned, 8 failed, 1 wrong, "
                               "1 fault · on 1 GPU of this host · compile ")
    assert lines[1] == (f"winner: #{w.index} BM=32 BAD=0 maxrreg=none block=256 tag=<b> · "
                        f"10.10 µs · 1,234 GB/s · {GPU}")
    head = lines[3].split()
    assert "time" in head and "GB/s" in head and "GPU" in head and "TFLOP/s" not in head
    timed = sorted((c for c in t.candidates if c.time_ms and c is not w), key=lambda c: c.time_ms)
    rest = sorted(c.index for c in t.candidates if c.time_ms is None)
    assert table_indices(out) == [w.index] + [c.index for c in timed] + rest
    assert "5.000 µs" in out and "12.30 µs" in out
    assert "Reproduce the winner:\n" + t.cell.rstrip("\n") in out
    assert out.rstrip().endswith("a <note> & more")


def test_winner_html(benched):
    t = benched
    h = view(t).html()
    assert "color: #27ae60; font-weight: bold\">winner</span>" in h
    assert "color: #c0392b; font-weight: bold\">wrong</span>" in h
    assert "color: #c0392b; font-weight: bold\">fault</span>" in h
    assert escape(GPU) in h and GPU not in h
    assert "(&lt;first&gt;)" in h and "&lt;x&gt;" in h and "a &lt;note&gt; &amp; more" in h
    assert "Reproduce the winner:" in h and escape(t.cell.rstrip("\n")) in h
    assert "<pre" in h and "tag=&lt;b&gt;" in h
    assert "<svg" in h


def test_svg_groups_and_marks_the_winner(benched, swept):
    t = benched
    s = svg(t)
    assert s.startswith("<svg") and s.endswith("</svg>")
    assert ">BM=32<" in s and ">BM=64<" in s                 # grouped by the first varied
    assert s.count("<circle") == 3 + 1                       # 3 timed, the winner ringed
    assert 'stroke="#27ae60"' in s and 'fill="#c0392b"' in s  # winner ring, wrong red
    assert "tag=&lt;b&gt;" in s and "tag=<b>" not in s
    by_block = ran(swept, {0: dict(status="ok", time_ms=0.2), 1: dict(status="ok", time_ms=1.5)},
                   group="block")
    s = svg(by_block)
    assert ">block=128<" in s and ">block=256<" in s and ">BM=" not in s
    s = svg(by_block, "BM")
    assert ">BM=32<" in s and ">BM=64" not in s               # only BM=32 was timed
    assert "1.500 ms" in view(by_block).text()
    with pytest.raises(PlotError, match="'nope' is not a parameter"):
        grouping(t, "nope")


def test_long_table_truncates_in_text_only(swept):
    blocks = list(range(32, 32 * 26, 32))                    # 25 block sizes x 2 = 50
    t = tune(SRC, {"BM": [32, 64], "-DBAD": [0], "block": blocks}, arch=ARCH, compile_only=True)
    assert len(t.candidates) == 50
    out = view(t).text()
    assert len(table_indices(out)) == MAX_TEXT_ROWS
    assert f"  ... {50 - MAX_TEXT_ROWS} more (t.rows())" in out
    assert len(table_indices(view(t).text(max_rows=5))) == 5
    assert view(t).html().count("<tr") == 1 + 50


def test_rates_columns_and_no_winner(swept):
    t = ran(swept, {0: dict(status="ok", time_ms=2.0, tflops=12.345, gpu="GPU 1")})
    out = view(t).text()
    assert "TFLOP/s" in out.splitlines()[3] and "GB/s" not in out.splitlines()[3]
    assert out.splitlines()[1].endswith("2.000 ms · 12.3 TFLOP/s · GPU 1")
    faults = ran(swept, {0: dict(status="fault", gpu="GPU 0"), 1: dict(status="wrong",
                                                                      time_ms=1.0, gpu="GPU 0")})
    assert faults.winner is None and faults.cell is None
    out = view(faults).text()
    assert out.splitlines()[1] == "no winner: none of the 2 candidates that ran gave right outputs"
    assert "Reproduce" not in out and "<svg" in view(faults).html()   # the wrong one has a time


def test_view_show_and_mimebundle(benched, swept):
    v = cuda_magic.view(benched)
    assert isinstance(v, TuneView) and view(v) is v
    bundle = v._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert bundle["text/plain"] == v.text() and bundle["text/html"] == v.html()
    assert set(v._repr_mimebundle_(include={"text/html"})) == {"text/html"}
    buf = io.StringIO()
    cuda_magic.show(benched, file=buf)
    assert buf.getvalue() == v.text().rstrip("\n") + "\n"
    with pytest.raises(ShowError, match="show\\(t\\)"):
        show(swept, "sass")


def test_figure(benched, swept, monkeypatch):
    pytest.importorskip("matplotlib")
    fig = benched.plot()
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["BM=32", "BM=64"]
    assert ax.get_ylabel() == "time (µs)"
    assert sorted(h.get_label() for h in ax.get_legend_handles_labels()[0]) == \
        ["candidate", "winner", "wrong outputs"]
    assert figure(benched, "block").axes[0].get_title() == "time per candidate, grouped by block"
    with pytest.raises(PlotError, match="nothing was timed"):
        swept.plot()
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(NoMatplotlibError, match="pip install matplotlib") as err:
        benched.plot()
    assert isinstance(err.value, Error) and isinstance(err.value, ImportError)


# ---- compile-only, occupancy, failures ------------------------------------------------------------

SCALE = r'''template <int BM>
__global__ void scale(const float* x, float* y, float a, int n) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * BM;
    for (int j = 0; j < BM; ++j) if (i + j < n) y[i + j] = a * x[i + j];
}
'''
BROKEN = SCALE.replace("* BM;", "* BM")         # line 3 lacks its ';': every build fails alike


def test_compile_only_header_says_what_was_done_and_the_occupancy_block():
    t = tune(SCALE, {"BM": [1, 4], "maxrreg": [None, 32]}, arch=ARCH, compile_only=True)
    out = view(t).text()
    lines = out.splitlines()
    assert lines[0].startswith("4 candidates compiled (compile-only: none benched) · compile ")
    assert lines[1] == "occupancy at block 256 (no block in the space)"
    assert "benched" not in out.replace("(compile-only: none benched)", "")
    assert "no winner" not in out
    assert re.search(r"^  0 +1 +none +\d+ +0 +100% +- +compiled", out, re.M), out
    h = view(t).html()
    assert "4 candidates compiled (compile-only: none benched)" in h
    assert "occupancy at block 256 (no block in the space)" in h and "no winner" not in h
    assert h.count(">100%</td>") == 4


def test_launch_bounds_note_names_the_block_sizes():
    bounded = SCALE.replace("__global__ void", "__global__ void __launch_bounds__(32 * BM)")
    t = tune(bounded, {"BM": [1, 4]}, arch=ARCH, compile_only=True)
    out = view(t).text()
    assert out.splitlines()[1] == "occupancy at the kernel's __launch_bounds__ (32, 128 threads)"
    assert re.search(r"^  0 +1 +\d+ +0 +50% ", out, re.M), out     # 32 blocks of 1 warp: 32/64
    both = tune(bounded + SCALE.replace("scale", "other"), {"BM": [1]}, arch=ARCH,
                compile_only=True)
    assert {(c.occupancy_block, c.occupancy_from) for c in both.candidates} == {(32, "bounds")}
    t.candidates[1].occupancy_block, t.candidates[1].occupancy_from = 256, "default"
    assert view(t).text().splitlines()[1] == (
        "occupancy at __launch_bounds__ (32) where a kernel has one, else at block 256 "
        "(no block in the space)")


def test_every_candidate_failing_alike_shows_the_error_once():
    t = tune(BROKEN, {"BM": [1, 4, 8], "maxrreg": [None, 32]}, arch=ARCH, compile_only=True)
    assert t.counts == {"failed": 6}
    out = view(t).text()
    lines = out.splitlines()
    assert lines[0].startswith("6 candidates failed · compile ")
    assert "none benched" not in lines[0]
    assert "all 6 candidates failed to compile the same way (#0 BM=1 maxrreg=none shown):" in out
    assert out.count("nvrtc failed to compile cell.cu") == 1
    assert "registers" not in out and "compile error:" not in out        # no table of rows
    assert out.count('     4 |     for (int j = 0; j < BM; ++j)') == 1   # the source quote, once
    assert "\nlog:\n" in out and 'warning #177-D: variable "i"' in out    # the compiler's log
    assert "1 error detected in the compilation" in out
    assert "argv: --gpu-architecture=" in out
    h = view(t).html()
    assert "<table" not in h and h.count("nvrtc failed to compile cell.cu") == 1
    assert "all 6 candidates failed to compile the same way" in h
    assert "expected a &quot;;&quot;" in h and ">Log</summary>" in h
    assert "4 |     for (int j = 0; j &lt; BM; ++j)" in h
    one = tune(BROKEN, {"BM": [1]}, arch=ARCH, compile_only=True)
    assert "#0 BM=1 failed to compile:" in view(one).text()


def test_one_launch_error_for_every_candidate_is_shown_once():
    x = np.ones(8, np.float32)
    t = tune(SCALE, {"BM": [1, 4]}, "scale[1, 128](x, missing, 2.0, 8)", arch=ARCH,
             namespace={"x": x})
    assert t.counts == {"error": 2}
    out = view(t).text()
    assert "both candidates failed the same way (#0 BM=1 shown):" in out
    assert out.count("NameError: name 'missing' is not defined") == 1
    assert "registers" not in out
    h = view(t).html()
    assert h.count("NameError: name &#x27;missing&#x27; is not defined") == 1 and "<table" not in h


def test_candidates_failing_differently_keep_a_row_each():
    cell = "#if V == 1\n#error one\n#else\n#error two\n#endif\n" + SCALE
    t = tune(cell, {"V": [1, 2], "BM": [4]}, arch=ARCH, compile_only=True)
    assert t.counts == {"failed": 2}
    assert t.candidates[0].failure != t.candidates[1].failure
    out = view(t).text()
    assert "the same way" not in out and table_indices(out) == [0, 1]
    assert "#error directive: one" in out and "#error directive: two" in out
    assert view(t).html().count("<tr") == 1 + 2
    # some compiled: the failed ones keep their rows (the one they share is not collapsed)
    mixed = tune(SRC, {"BM": [32], "-DBAD": [0, 1], "maxrreg": [None]}, arch=ARCH,
                 compile_only=True)
    assert [c.status for c in mixed.candidates] == ["compiled", "failed"]
    assert table_indices(view(mixed).text()) == [0, 1]


def test_the_winner_line_says_how_far_ahead_of_the_next_it_is(swept):
    """The winner's margin over the next candidate, from their samples (Hodges-Lehmann ratio,
    Mann-Whitney interval): a clear 20% is said with its interval; two candidates within
    noise are said to be, never one "faster"."""
    import random
    r = random.Random(5)
    fast = tuple(0.010 * r.lognormvariate(0, 0.01) for _ in range(50))
    slow = tuple(0.012 * r.lognormvariate(0, 0.01) for _ in range(50))
    same = tuple(0.010 * r.lognormvariate(0, 0.01) for _ in range(50))
    t = ran(swept, {0: dict(status="ok", time_ms=0.010, samples_ms=fast, gpu=GPU),
                    1: dict(status="ok", time_ms=0.012, samples_ms=slow, gpu=GPU)})
    w = t.winner
    other = next(c for c in t.candidates if c.status == "ok")
    assert re.fullmatch(rf"1[67]\.\d% faster than #{other.index} \(95% CI 1\d\.\d to 1\d\.\d%\)",
                        t.margin), t.margin
    assert view(t).text().splitlines()[1].endswith(t.margin) and w.samples_ms == fast
    t = ran(swept, {0: dict(status="ok", time_ms=0.0100, samples_ms=fast, gpu=GPU),
                    1: dict(status="ok", time_ms=0.01001, samples_ms=same, gpu=GPU)})
    assert t.margin.startswith("within noise of #") and "faster" not in t.margin
    t = ran(swept, {0: dict(status="ok", time_ms=0.0100, gpu=GPU)})       # one timed: nothing
    assert t.margin == ""
