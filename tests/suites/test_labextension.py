"""The JupyterLab extension that highlights %%cuda cells as C++ (labextension/): the committed
build is the build of the committed sources, pip installs it where JupyterLab looks, and
JupyterLab lists it enabled.  (tests/suites/test_browser.py looks at the colours.)"""

import hashlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILT = ROOT / "cuda_magic" / "labextension"


def test_the_committed_build_is_of_the_committed_sources():
    """labextension/build.sh records the sha256 of what it built from: an edit of the sources
    without a rebuild (and a commit of cuda_magic/labextension/) fails here."""
    recorded = dict(line.split()[::-1] for line in (BUILT / "source.sha256").read_text().splitlines())
    now = {name: hashlib.sha256((ROOT / "labextension" / name).read_bytes()).hexdigest()
           for name in recorded}
    assert now == recorded, "labextension/ changed since the build: run labextension/build.sh"
    assert set(recorded) == {"src/index.ts", "package.json", "package-lock.json"}


def test_the_build_is_complete_and_pip_installs_all_of_it():
    manifest = json.loads((BUILT / "package.json").read_text())
    assert manifest["name"] == "cuda-magic-highlight"
    entry = manifest["jupyterlab"]["_build"]["load"]
    assert (BUILT / entry).is_file() and entry.startswith("static/remoteEntry.")
    files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    where = "share/jupyter/labextensions/cuda-magic-highlight"
    assert files[where] == ["cuda_magic/labextension/package.json", "labextension/install.json"]
    assert files[f"{where}/static"] == ["cuda_magic/labextension/static/*"]


def test_jupyterlab_lists_it_enabled():
    """After the README's ``pip install -e .`` (setup.py makes the editable install copy the
    data files, which setuptools' own does not)."""
    out = subprocess.run([sys.executable, "-m", "jupyterlab.labextensions", "list"],
                         capture_output=True, text=True, timeout=120)
    text = out.stdout + out.stderr
    line = next((ln for ln in text.splitlines() if "cuda-magic-highlight" in ln), "")
    assert "enabled" in line and "OK" in line and "(python, cuda-magic)" in line, \
        f"not installed where JupyterLab looks: run pip install -e . again\n{text[-2000:]}"
