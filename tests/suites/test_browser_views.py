"""The Source tab's heat map and the SASS tab as a reader sees them, in a real JupyterLab in
headless chromium (tests/browser_util.py; skipped without /usr/bin/chromium or playwright).

One notebook, run once for the module: a spilling kernel with an indented body and a line
wider than the view (the heat map), and a template kernel (the SASS tab).  Screenshots of both
views go to $CUDA_MAGIC_ARTIFACTS, else tests/.artifacts/ (heat_map.png, sass_tab.png).
"""

import json

import pytest

import browser_util as bu
import common  # benchmarks/common.py (on sys.path: conftest.py)

pytestmark = pytest.mark.browser

END = "END_OF_THE_LONG_LINE"
LONG = "    y[threadIdx.x] = s;  // " + "a trailing comment that runs on and on, " * 6 + END
HEAVY = ('%%cuda --name heavy --nvrtc+ "--maxrregcount=24"' +
         common.HEAVY.replace("    y[threadIdx.x] = s;\n", LONG + "\n"))
TEMPLATE = r'''%%cuda --name t
template <typename T, int N>
__global__ void axpy(const T* x, T* y, T a, int n) {
    int i = blockIdx.x * N + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
template __global__ void axpy<float, 256>(const float*, float*, float, int);
'''


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    """(page, the heat map's panel, the SASS panel), the notebook run and both tabs opened."""
    reason = bu.skip_reason()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("views")
    (root / "views.ipynb").write_text(json.dumps(bu.notebook(
        ["%load_ext cuda_magic\n%cuda_config --arch sm_90a", HEAVY, TEMPLATE])))
    with bu.lab_server(root) as (base, token), bu.browser_page() as page:
        bu.open_notebook(page, base, token, "views.ipynb", timeout=60)
        bu.run_all(page, timeout=150)
        tabs = page.locator(".jp-OutputArea .jupyter-widgets.widget-tab")
        bu.widget_tab(page, "Source", timeout=30)
        heat = bu.select_tab(tabs.nth(0), "Source")
        bu.expect(heat).to_contain_text("click a line for its SASS", timeout=60_000)
        sass = bu.select_tab(tabs.nth(1), "SASS")
        bu.expect(sass).to_contain_text("EXIT", timeout=60_000)
        page.wait_for_timeout(300)
        heat.screenshot(path=bu.artifacts_dir() / "heat_map.png", timeout=15_000)
        sass.screenshot(path=bu.artifacts_dir() / "sass_tab.png", timeout=15_000)
        yield page, heat, sass


# the left edge of the first character of each source line in the heat map's table: the last
# cell of each body row holds the line's code (in a <summary> where the line made code)
_LINE_STARTS = """panel => {
  const table = [...panel.querySelectorAll('table')].find(t => t.innerText.includes('click a line'));
  const out = [];
  for (const tr of table.querySelectorAll('tr')) {
    const cells = tr.querySelectorAll(':scope > td');
    if (!cells.length) continue;
    const code = cells[cells.length - 1];
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    const node = walker.nextNode();
    if (!node || !node.textContent.length) continue;
    const range = document.createRange();
    range.setStart(node, 0);
    range.setEnd(node, 1);
    out.push([cells[0].innerText.trim(), range.getBoundingClientRect().left,
              code.querySelector('details') !== null]);
  }
  return out;
}"""


def test_heat_map_lines_start_in_one_column(views):
    """Lines that made code (and open to their SASS) start where the others do: indentation
    reads as it is written."""
    page, heat, _ = views
    starts = heat.evaluate(_LINE_STARTS)
    assert len(starts) >= 14, starts
    assert any(opens for *_, opens in starts) and not all(opens for *_, opens in starts)
    lefts = {round(left, 1) for _, left, _ in starts}
    assert max(lefts) - min(lefts) < 0.5, starts


def test_colour_by_label_is_on_its_buttons_line(views):
    page, heat, _ = views
    toggle = heat.locator(".widget-toggle-buttons").first
    label = toggle.locator(".widget-label").first.bounding_box()
    buttons = [b.bounding_box() for b in toggle.locator("button").all()]
    assert label and buttons
    first = min(buttons, key=lambda b: b["x"])
    middle = label["y"] + label["height"] / 2
    assert first["y"] <= middle <= first["y"] + first["height"], (label, first)
    assert label["x"] + label["width"] <= first["x"] + 1, (label, first)


# the box of the long line's last character, and whether any element around it hides it
_LAST_CHAR = """(panel, end) => {
  const walker = document.createTreeWalker(panel, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode()) && !node.textContent.includes(end)) {}
  if (!node) return null;
  const at = node.textContent.indexOf(end) + end.length - 1;
  const range = document.createRange();
  range.setStart(node, at);
  range.setEnd(node, at + 1);
  const box = range.getBoundingClientRect();
  const clipped = [];
  for (let e = node.parentElement; e; e = e.parentElement) {
    const s = getComputedStyle(e);
    if (s.overflowX === 'visible' && s.overflowY === 'visible') continue;
    const r = e.getBoundingClientRect();
    if (box.right > r.right + 0.5 || box.left < r.left - 0.5)
      clipped.push(`${e.tagName}.${e.className} (overflow ${s.overflowX})`);
  }
  return {right: box.right, width: window.innerWidth, clipped};
}"""


def test_a_line_wider_than_the_view_can_be_read_to_its_end(views):
    page, heat, _ = views
    found = heat.evaluate(_LAST_CHAR, END)
    assert found is not None, "the long line is not in the heat map"
    assert not found["clipped"], found
    assert found["right"] <= found["width"], found


def test_sass_tab_is_headed_by_the_kernels_cpp_name(views):
    page, _, sass = views
    text = sass.inner_text()
    listing = text[text.index("axpy<float, 256>"):]
    head = listing.splitlines()[0]
    assert head.startswith("axpy<float, 256>"), head
    assert not any(line.strip() == "_Z4axpyIfLi256EEvPKT_PS0_S0_i:" for line in listing.splitlines())
    # the mangled symbol is a smaller note beside it
    note = sass.get_by_text("_Z4axpyIfLi256EEvPKT_PS0_S0_i", exact=True).first
    name = sass.get_by_text("axpy<float, 256>", exact=True).first
    size = [float(e.evaluate("e => getComputedStyle(e).fontSize").removesuffix("px"))
            for e in (note, name)]
    assert size[0] < size[1], size


def test_sass_tab_folds_the_padding_after_the_last_exit(views):
    page, _, sass = views
    lines = [line.strip() for line in sass.locator("pre").first.inner_text().splitlines()
             if line.strip()]
    assert not any(line.endswith("NOP;") or line.endswith("NOP ;") for line in lines), lines
    assert "trailing NOPs folded" in lines[-1], lines[-3:]
    assert "BRA `(.L_x_0);" in lines[-2], lines[-3:]       # the EXIT ... BRA self-loop stays


def test_heat_map_line_opens_to_its_sass_in_place(views):
    """(Runs last: it leaves a line open.)  A click on a line opens its SASS under it; the
    lines keep their column."""
    page, heat, _ = views
    line = heat.locator("summary", has_text="s += acc[k]").first
    line.click()
    bu.expect(heat.locator("details[open] pre").first).to_contain_text("LDL", timeout=10_000)
    heat.screenshot(path=bu.artifacts_dir() / "heat_map_open.png", timeout=15_000)
    lefts = {round(left, 1) for _, left, _ in heat.evaluate(_LINE_STARTS)}
    assert max(lefts) - min(lefts) < 0.5, lefts


# every flag token of the Config tab (a nowrap span inside a JSON-ish list): how many line
# boxes each takes (1: not broken), and its text
_FLAG_BOXES = """panel => [...panel.querySelectorAll('span')]
  .filter(s => s.style.whiteSpace === 'nowrap' || s.style.display === 'inline-block')
  .map(s => [s.innerText, s.getClientRects().length])"""


def test_config_tab_folds_the_compiler_that_did_not_run(views):
    """(After the heat map's tests: it leaves the first cell on its Config tab.)  The NVRTC
    build's Config shows the nvrtc list; the nvcc row is folded under one closed line; no flag
    of a list, a note or the argv breaks across lines, in a wide and in a narrow view."""
    page, _, _ = views
    tabs = page.locator(".jp-OutputArea .jupyter-widgets.widget-tab")
    config = bu.select_tab(tabs.nth(0), "Config")
    bu.expect(config).to_contain_text("nvcc flags: not used (compiled with nvrtc)", timeout=10_000)
    config.screenshot(path=bu.artifacts_dir() / "config_tab.png", timeout=15_000)
    fold = config.locator("details", has_text="nvcc flags: not used").first
    assert fold.evaluate("d => d.open") is False
    visible = config.inner_text()
    assert "--maxrregcount=24" in visible and "nvrtc" in visible
    for width in (None, 900):
        if width:
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(300)
            config.screenshot(path=bu.artifacts_dir() / "config_tab_narrow.png", timeout=15_000)
        flags = config.evaluate(_FLAG_BOXES)
        shown = [(text, boxes) for text, boxes in flags if boxes]     # the folded ones: 0 boxes
        for word in ('"--warn-on-local-memory-usage"', "--ptxas-options=--warn-on-local-memory-usage",
                     '"--maxrregcount=24"', "--no-cache"):
            assert any(t == word for t, _ in shown), (word, shown)
        assert all(boxes == 1 for _, boxes in shown), (width, shown)
