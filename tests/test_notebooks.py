"""The notebooks run headless, as `jupyter execute` runs them (CPU: explicit arch; GPU: launches)."""

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from cuda_magic import detect_arch

ROOT = Path(__file__).resolve().parent.parent


def run(name: str, monkeypatch) -> list[str]:
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), *sys.path]))  # kernel imports this tree
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            assert o["output_type"] != "error", o
            out.append(o.get("text") or o.get("data", {}).get("text/plain", ""))
    return out


def test_quickstart(monkeypatch):
    text = "\n".join(run("quickstart.ipynb", monkeypatch))
    assert "FMUL.FTZ R" in text and "FMUL R" in text
    assert "[kernel:scale_ftz]" in text and "registers" in text
    if detect_arch() is None:
        assert "No GPU here" in text
    else:
        assert "ftz=false: 5.877472e-39  ftz=true: 0.0" in text
