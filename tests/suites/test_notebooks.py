"""The notebooks run headless, as `jupyter execute` runs them (CPU: explicit arch; GPU: launches)."""

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from cuda_magic import detect_arch

ROOT = Path(__file__).resolve().parents[2]


def execute(name: str, monkeypatch):
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), *sys.path]))  # kernel imports this tree
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    return nb


def texts(nb) -> list[str]:
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            assert o["output_type"] != "error", o
            out.append(o.get("text") or o.get("data", {}).get("text/plain", ""))
    return out


def test_quickstart(monkeypatch):
    nb = execute("quickstart.ipynb", monkeypatch)
    text = "\n".join(texts(nb))
    assert "FMUL.FTZ R" in text and "FMUL R" in text
    assert "[kernel:scale_ftz]" in text and "registers" in text
    if detect_arch() is None:
        assert "No GPU here" in text
    else:
        assert "ftz=false: 5.877472e-39  ftz=true: 0.0" in text

    # The %%cuda cell's output: the widget, its HTML fallback and text; the Tab's state saved.
    cell = next(c for c in nb.cells if c.source.startswith("%%cuda"))
    data = cell.outputs[0]["data"]
    assert "application/vnd.jupyter.widget-view+json" in data
    assert ">Resources</summary>" in data["text/html"] and "scale_ftz" in data["text/plain"]
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    tabs = [m["state"]["titles"] for m in state.values() if m["model_name"] == "TabModel"]
    assert tabs == [["Config", "Resources", "Log", "SASS", "PTX", "Source"]]

    # Static HTML (nbconvert) of the notebook as JupyterLab saves it (no widget state): the
    # HTML fallback with config, resources and log, everything escaped.
    del nb.metadata["widgets"]
    from nbconvert import HTMLExporter
    page, _ = HTMLExporter().from_notebook_node(nb)
    assert "kernel:scale_ftz" in page and ">Resources</summary>" in page
    nw = '<span style="white-space: nowrap">'      # the value that differs, each flag unbroken
    assert f'<b>[{nw}"--use_fast_math"</span>, {nw}"--ftz=true"</span>]</b>' in page


def test_ftz_comparison(monkeypatch):
    nb = execute("ftz_comparison.ipynb", monkeypatch)
    text = "\n".join(texts(nb))
    assert "ftz=false  .FTZ instructions: 0  FMUL R" in text
    assert "ftz=true   .FTZ instructions: 1  FMUL.FTZ R" in text
    assert "+FADD.FTZ R" in text                                   # the sum, as a unified diff
    assert "CALL.REL.NOINC" in text and "MUFU.RCP" in text          # prec-div: IEEE vs approximate
    assert "[variant:ftz=false]" in text
    if detect_arch() is None:
        assert "the numbers need a GPU: --run was not executed" in text
    else:
        assert "y[0] = 5.877472e-39" in text and "y[0] = 0" in text
        assert "ftz=true   differ" in text and "ULP apart" in text
        assert "prec-div=true  differ" in text
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    boxes = {m["state"]["description"] for m in state.values() if m["model_name"] == "CheckboxModel"}
    assert boxes == {"ftz", "prec-div", "prec-sqrt", "fmad", "fast-math", "raw registers"}
    tabs = {tuple(m["state"]["titles"]) for m in state.values() if m["model_name"] == "TabModel"}
    assert tabs == {("Variants", "Resources", "SASS diff", "Numbers", "PTX diff", "Source")}
