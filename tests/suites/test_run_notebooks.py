"""notebooks/run.py, the README's main job: what it writes and prints.

(tests/suites/test_notebooks.py checks what the notebooks compute; this checks the runner.)
"""

import os
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "notebooks" / "run.py"


def run(*args, cwd=ROOT):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, str(RUN), *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_quickstart_into_a_directory(tmp_path):
    out = tmp_path / "out"
    p = run("--out", out)
    assert p.returncode == 0, p.stdout + p.stderr
    ipynb, html = out / "quickstart.ipynb", out / "quickstart.html"
    assert f"notebook: {ipynb}" in p.stdout and f"html:     {html}" in p.stdout   # absolute
    assert "quickstart.ipynb: ran in " in p.stdout and p.stdout.startswith("GPU: ")
    assert f"jupyter lab {ipynb}" in p.stdout and "--allow-root" in p.stdout  # out is not below cwd

    nb = nbformat.read(ipynb, as_version=4)
    cell = next(c for c in nb.cells if c.source.startswith("%%cuda"))
    assert cell.outputs and "scale_ftz" in cell.outputs[0]["data"]["text/plain"]
    assert "application/vnd.jupyter.widget-state+json" in nb.metadata["widgets"]
    page = html.read_text()
    assert "<html" in page and "kernel:scale_ftz" in page


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
