"""The quickstart notebook in a real JupyterLab, in a headless browser: its widget renders.

Runs JupyterLab 4 as a subprocess and drives Debian's chromium with Playwright (no browser
download). To run it locally:

    apt-get install -y --no-install-recommends chromium    # /usr/bin/chromium
    pip install -e ".[test]"                                # playwright, among others
    python3 -m pytest -q -m browser

Skipped (with that hint) when /usr/bin/chromium or playwright is missing. Screenshots go to
$CUDA_MAGIC_ARTIFACTS, else tests/.artifacts/. No GPU needed: the notebook then compiles for sm_90a.
A passing quickstart run also draws the README's picture (the %%cuda cell and its widget with
the SASS tab open): into a temporary folder, and over the tracked docs/img/quickstart.png only
with CUDA_MAGIC_UPDATE_SCREENSHOTS=1.
"""

import os
import shutil

import pytest

import browser_util as bu

pytestmark = pytest.mark.browser

TITLES = ["Config", "Resources", "Log", "SASS", "PTX", "Source"]

@pytest.fixture
def lab(tmp_path):
    """(root dir, page, server url, token): a JupyterLab on tmp_path and a browser page."""
    reason = bu.skip_reason()
    if reason:
        pytest.skip(reason)
    with bu.lab_server(tmp_path) as (base, token), bu.browser_page() as page:
        yield tmp_path, page, base, token


README_PICTURE = bu.ROOT / "docs" / "img" / "quickstart.png"


def check_notebook(lab, name: str, screenshot: str, picture=None):
    """Open `name`, run all cells, check the Tab and its SASS panel, save a screenshot (and,
    if it passed, a picture of the %%cuda cell to `picture`)."""
    root, page, base, token = lab
    png = bu.artifacts_dir() / screenshot
    png.unlink(missing_ok=True)
    try:
        bu.open_notebook(page, base, token, name, timeout=60)
        bu.run_all(page, timeout=90)
        tab = bu.widget_tab(page, "SASS", timeout=30)
        titles = bu.tab_titles(tab)
        assert set(TITLES) <= set(titles), f"tab titles {titles}, want {TITLES}"
        config = bu.select_tab(tab, "Config")
        bu.expect(config).to_contain_text("--ftz=true", timeout=10_000)      # kernel:scale_ftz
        bu.expect(config).to_contain_text("kernel:scale_ftz", timeout=10_000)
        sass = bu.select_tab(tab, "SASS")
        bu.expect(sass).to_contain_text("FMUL", timeout=30_000)             # filled when opened
        if picture is not None:
            cell = page.locator(".jp-CodeCell").filter(has=page.locator(".jupyter-widgets.widget-tab"))
            bu.save_cell_picture(page, cell.first, picture)
    finally:
        page.screenshot(path=png, full_page=True, timeout=15_000)  # on failure too
    assert png.stat().st_size > 0


def test_readme_picture_is_rewritten_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.delenv(bu.UPDATE_PICTURES, raising=False)
    assert bu.picture_target(README_PICTURE, tmp_path) == tmp_path / "quickstart.png"
    monkeypatch.setenv(bu.UPDATE_PICTURES, "0")
    assert bu.picture_target(README_PICTURE, tmp_path) == tmp_path / "quickstart.png"
    monkeypatch.setenv(bu.UPDATE_PICTURES, "1")
    assert bu.picture_target(README_PICTURE, tmp_path) == README_PICTURE


def test_quickstart(lab, tmp_path_factory):
    shutil.copy(bu.ROOT / "notebooks" / "quickstart.ipynb", lab[0] / "quickstart.ipynb")
    before = README_PICTURE.stat().st_mtime_ns if README_PICTURE.exists() else None
    picture = bu.picture_target(README_PICTURE, tmp_path_factory.mktemp("pictures"))
    check_notebook(lab, "quickstart.ipynb", "quickstart.png", picture=picture)
    assert 0 < picture.stat().st_size < 150_000
    if os.environ.get(bu.UPDATE_PICTURES) != "1":     # the tracked picture is left alone
        assert (README_PICTURE.stat().st_mtime_ns if README_PICTURE.exists() else None) == before


def test_ftz_comparison_toggles(lab):
    """The comparison's widget renders, and a toggle rebuilds the variant in the real frontend."""
    root, page, base, token = lab
    shutil.copy(bu.ROOT / "notebooks" / "ftz_comparison.ipynb", root / "ftz_comparison.ipynb")
    png = bu.artifacts_dir() / "ftz_comparison.png"
    png.unlink(missing_ok=True)
    try:
        bu.open_notebook(page, base, token, "ftz_comparison.ipynb", timeout=60)
        bu.run_all(page, timeout=120)
        tab = bu.widget_tab(page, "SASS diff", timeout=30)     # the first comparison's
        assert bu.tab_titles(tab) == ["Variants", "Resources", "SASS diff", "Numbers", "PTX diff",
                                      "Source"]
        bu.expect(bu.select_tab(tab, "SASS diff")).to_contain_text("FMUL.FTZ", timeout=10_000)
        toggle = page.locator(".widget-checkbox", has_text="prec-div")
        widget = page.locator(".jp-OutputArea-output").filter(has=toggle).first   # the first cell's
        box = widget.locator(".widget-checkbox", has_text="prec-div").locator("input")
        bu.expect(widget).to_contain_text("stays fixed", timeout=10_000)
        box.click()
        bu.expect(widget).to_contain_text("prec-div → on", timeout=30_000)
        bu.expect(bu.select_tab(tab, "Variants")).to_contain_text("--prec-div=true", timeout=10_000)
        box.click()
        bu.expect(widget).to_contain_text("from the cache", timeout=30_000)
    finally:
        page.screenshot(path=png, full_page=True, timeout=15_000)
    assert png.stat().st_size > 0


# each token's text -> its colour, per code cell, as the page shows them
_TOKENS_JS = """() => {
  const probe = (v) => {
    const el = document.createElement('span');
    el.style.color = `var(${v})`;
    document.querySelector('.jp-Notebook').appendChild(el);
    const c = getComputedStyle(el).color; el.remove(); return c;
  };
  const cells = [...document.querySelectorAll('.jp-CodeCell .cm-content')];
  return {
    keyword: probe('--jp-mirror-editor-keyword-color'),
    comment: probe('--jp-mirror-editor-comment-color'),
    cells: cells.map(content => [...content.querySelectorAll('.cm-line span')]
      .map(s => [s.textContent.trim(), getComputedStyle(s).color])),
  };
}"""

HIGHLIGHT_CELLS = [
    '%%cuda --arch sm_90a\n// scale by two\nextern "C" __global__ void twice(float* x) { x[0] *= 2; }',
    "extern = 4 // 2  # Python: a name, then floor division",
    '%%cuda_header twice.cuh\n/* shared */\nstatic const int N = 8;',
    "%%time\nextern = 1",
]


def test_cuda_cells_are_highlighted_as_cpp(lab):
    """The extension (labextension/, installed by pip): a %%cuda or %%cuda_header cell's body is
    C++ (a keyword such as `extern`, a `//` or `/* */` comment coloured so); a Python cell, and
    another cell magic's body, are not."""
    import json
    root, page, base, token = lab
    (root / "highlight.ipynb").write_text(json.dumps(bu.notebook(HIGHLIGHT_CELLS)))
    png = bu.artifacts_dir() / "highlight.png"
    png.unlink(missing_ok=True)
    try:
        bu.open_notebook(page, base, token, "highlight.ipynb", timeout=60)
        try:        # CodeMirror parses in slices: wait for the last token looked at, coloured
            page.wait_for_function(f"() => {{ const t = ({_TOKENS_JS})(); const c = t.cells;"
                                   f" const kw = (cell, word) => cell.some(([s, k]) => s === "
                                   f"word && k === t.keyword); return c.length === 4 && "
                                   f"kw(c[0], 'extern') && kw(c[2], 'static'); }}",
                                   timeout=20_000)
        except Exception:           # the assertions below say what is missing
            pass
        got = page.evaluate(_TOKENS_JS)
    finally:
        page.screenshot(path=png, full_page=True, timeout=15_000)
    keyword, comment = got["keyword"], got["comment"]
    cuda, python, header, timed = ({text: colour for text, colour in cell} for cell in got["cells"])
    assert cuda.get("extern") == keyword and cuda.get("// scale by two") == comment, cuda
    assert header.get("static") == keyword and header.get("/* shared */") == comment, header
    assert python.get("extern") != keyword and python.get("# Python: a name, then floor division") \
        == comment, python
    assert not any(c == comment for t, c in python.items() if "//" in t), python
    assert timed.get("extern") != keyword, timed          # %%time's body stays Python
