"""A kernel's name in HTML is text, never markup: a template instance (``k<2>``) and a name
written to break out (``<script>``) come out escaped in the async-pipeline table (the Resources
tab) and in a bench's and a kernel's bench history's HTML.  No GPU: real builds, Timings made
from fixed samples."""

import re
from html import escape

import pytest

import cuda_magic
from cuda_magic.cell import build
from cuda_magic.display import pipeline as pview
from cuda_magic.inspect.pipeline import ROWS, Pipeline
from cuda_magic.runtime.measure import history as bench_history
from cuda_magic.runtime.measure.bench import Timing

HOSTILE = "<script>alert(1)</script>"

# a template kernel whose source uses the async machinery (the table is shown for it)
TEMPLATE = r"""
template <int N>
__global__ void __launch_bounds__(128) k(float* d) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    d[threadIdx.x] = N;
}
template __global__ void k<2>(float*);
"""


@pytest.fixture(scope="module")
def module():
    return build(TEMPLATE, {"arch": "sm_90a"})


@pytest.fixture(autouse=True)
def _fresh_history():
    bench_history.clear_history()
    yield
    bench_history.clear_history()


def _raw_markup(html: str) -> list[str]:
    """The tags of ``html`` that are no tag the views write (every view tag is lower case
    and known; a kernel's name let through would add <script>, <img>, or k<2>'s <2>)."""
    return [t for t in re.findall(r"<\s*/?\s*([^\s>/]*)", html)
            if t not in {"div", "span", "b", "table", "thead", "tbody", "tr", "th", "td", "svg",
                         "title", "rect", "circle", "line", "polyline", "text", "details",
                         "summary", "pre"}]


def test_a_template_kernel_in_the_pipeline_table(module):
    pipes = pview.of_content(cuda_magic.display.view(module).content)
    assert list(pipes) == ["k<2>"]
    html = pview.html(pipes)
    assert "<b>k&lt;2&gt;</b>: async pipeline" in html
    assert "k<2>" not in html and _raw_markup(html) == []


def test_a_hostile_name_arch_and_warning_in_the_pipeline_table():
    counts = {name: 0 for name, _, _ in ROWS}
    counts["WGMMA"] = 1
    p = Pipeline(HOSTILE, "sm_90a", counts, {}, warnings=(f"{HOSTILE}: <img src=x>",))
    html = pview.html({HOSTILE: {"<sm_90a>": p, "<b>sm_100a</b>": p}})
    assert html.count(escape(HOSTILE)) == 2          # the title and the warning
    assert "&lt;sm_90a&gt;" in html and "&lt;img src=x&gt;" in html
    assert _raw_markup(html) == []


def _timing(name: str, median: float) -> Timing:
    return Timing(name, (8, 1, 1, 256, 1, 1), [median * (1 + 0.001 * i) for i in range(20)])


@pytest.mark.parametrize("name", ["k<2>", HOSTILE])
def test_a_kernel_name_in_the_bench_and_its_history(module, name):
    k = module["k<2>"]
    for median in (1.0, 2.0):
        bench_history.record(k, _timing(name, median))
    h = cuda_magic.history(name)
    html = cuda_magic.view(h).html()
    assert f"history of {escape(name)}: 2 runs" in html
    assert f"<title>{escape(name)}: median per run</title>" in html     # the plot's title
    assert name not in html and _raw_markup(html) == []
    html = cuda_magic.view(h.latest).html()                            # the bench itself
    assert f"{escape(name)}[grid=(8, 1, 1), block=(256, 1, 1)]" in html
    assert name not in html and _raw_markup(html) == []
