"""notebooks/run.py, the README's main job: what it writes and prints.

(tests/suites/test_notebooks.py checks what the notebooks compute; this checks the runner.)
"""

import os
import shlex
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import browser_util as bu

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "notebooks" / "run.py"


def run(*args, cwd=ROOT):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, str(RUN), *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    """(stdout+stderr, out dir) of one run of the main job into a fresh directory."""
    out = tmp_path_factory.mktemp("run") / "out"
    p = run("--out", out)
    assert p.returncode == 0, p.stdout + p.stderr
    return p, out


def test_quickstart_into_a_directory(quickstart):
    p, out = quickstart
    ipynb, html = out / "quickstart.ipynb", out / "quickstart.html"
    assert f"notebook: {ipynb}" in p.stdout and f"html:     {html}" in p.stdout   # absolute
    assert "quickstart.ipynb: ran in " in p.stdout and p.stdout.startswith("GPU: ")
    assert f"jupyter lab {ipynb}" in p.stdout and "--allow-root" in p.stdout  # out is not below cwd
    assert "without encryption" not in p.stdout + p.stderr    # the kernel runs over IPC

    nb = nbformat.read(ipynb, as_version=4)
    cell = next(c for c in nb.cells if c.source.startswith("%%cuda"))
    assert cell.outputs and "scale_ftz" in cell.outputs[0]["data"]["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" in cell.outputs[0]["data"]  # kept for Lab
    assert "application/vnd.jupyter.widget-state+json" in nb.metadata["widgets"]
    page = html.read_text()
    assert "<html" in page and "kernel:scale_ftz" in page


@pytest.mark.browser
def test_quickstart_page_needs_no_network(quickstart):
    """The page shows each cell's static view, not the widget view whose manager script loads
    from a CDN (offline, the %%cuda cell's output was empty): opened in Chromium with every
    request but the file itself refused, the Resources table and the SASS are on the page."""
    reason = bu.skip_reason()
    if reason:
        pytest.skip(reason)
    html = quickstart[1] / "quickstart.html"
    assert '<script type="application/vnd.jupyter.widget-view+json">' not in html.read_text()
    refused = []

    def offline(route):
        if route.request.url.startswith("file:"):
            return route.continue_()
        refused.append(route.request.url)
        return route.abort()

    with bu.browser_page() as page:
        page.route("**/*", offline)
        page.goto(html.as_uri())
        out = page.locator(".cuda-magic").filter(
            has=page.locator("summary", has_text="Resources")).first     # the %%cuda cell's
        bu.expect(out).to_be_visible(timeout=10_000)
        bu.expect(out.locator("table", has_text="registers").first).to_contain_text("scale_ftz")
        bu.expect(out.locator("summary", has_text="SASS")).to_be_visible()
        bu.expect(out).to_contain_text("FMUL")
        png = bu.artifacts_dir() / "quickstart_offline.png"
        out.screenshot(path=png)
    assert png.stat().st_size > 0


def test_the_documented_nbconvert_command_shows_the_static_view(quickstart, tmp_path):
    """docs/display.md's `jupyter nbconvert` line, run on the executed quickstart: the page
    holds the static view and no widget view (a plain export holds the widget view)."""
    doc = (ROOT / "docs" / "display.md").read_text()
    line = doc.split("<!-- nbconvert -->\n```bash\n", 1)[1].split("\n", 1)[0]
    nb = tmp_path / "NOTEBOOK.ipynb"
    nb.write_bytes((quickstart[1] / "quickstart.ipynb").read_bytes())
    jupyter = Path(sys.executable).with_name("jupyter")
    words = shlex.split(line)
    assert words[:3] == ["jupyter", "nbconvert", "--to"]
    for extra, static in ((words[3:], True), (["html", "NOTEBOOK.ipynb"], False)):
        p = subprocess.run([str(jupyter), "nbconvert", "--to", *extra, "--output", "page"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        page = (tmp_path / "page.html").read_text()
        widget = '<script type="application/vnd.jupyter.widget-view+json">' in page
        assert widget is not static and ('>SASS (start)</summary>' in page) is static, extra


def test_cwd_and_relative_open_command(tmp_path):
    """The kernel runs in the notebook's folder; the command to open the result is relative
    to where you are when the result is below it."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import os; print(os.getcwd())")])
    src = tmp_path / "tiny.ipynb"
    nbformat.write(nb, src)
    p = run(src, "--out", tmp_path / "executed", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "open it:  jupyter lab executed/tiny.ipynb" in p.stdout
    done = nbformat.read(tmp_path / "executed" / "tiny.ipynb", as_version=4)
    assert done.cells[0].outputs[0]["text"].strip() == str(tmp_path)     # cwd: the notebook's dir


def test_failing_cell(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                         nbformat.v4.new_code_cell("raise ValueError('boom here')"),
                                         nbformat.v4.new_code_cell("print('never')")])
    src = tmp_path / "bad.ipynb"
    nbformat.write(nb, src)
    p = run(src, "--out", tmp_path / "out")
    assert p.returncode == 1
    assert "bad.ipynb: failed after" in p.stdout
    assert "cell 2 failed:" in p.stderr and "ValueError: boom here" in p.stderr
    assert "\x1b[" not in p.stderr
    assert (tmp_path / "out" / "bad.ipynb").exists() and (tmp_path / "out" / "bad.html").exists()
    assert "open it" not in p.stdout


def test_missing_notebook(tmp_path):
    p = run(tmp_path / "nope.ipynb")
    assert p.returncode == 2 and "no notebook" in p.stderr
