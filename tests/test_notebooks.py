"""The notebooks run headless, as `jupyter execute` runs them (CPU: explicit arch; GPU: launches)."""

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from cuda_magic import detect_arch

ROOT = Path(__file__).resolve().parent.parent


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
    assert "<b>[\"--use_fast_math\", \"--ftz=true\"]</b>" in page   # the value that differs
