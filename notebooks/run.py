"""Run notebooks headless and keep what they show: the executed notebook and an HTML page.

    python3 notebooks/run.py                      # notebooks/quickstart.ipynb
    python3 notebooks/run.py notebooks/ftz_comparison.ipynb --out /tmp/out

Each notebook runs top to bottom in a fresh `python3` kernel (nbclient) whose working
directory is the notebook's own folder, with this checkout first on the kernel's
PYTHONPATH. For NAME.ipynb it writes OUT/NAME.ipynb (outputs and widget state saved) and
OUT/NAME.html (nbconvert, each output's static HTML view first: the page needs no network),
OUT being notebooks/executed/ unless --out says otherwise, then
prints how long it took, whether a GPU was present, the absolute paths, and how to open
the result in JupyterLab. Without a GPU the notebooks compile for sm_90a and skip their
launches.

If a cell fails, its error is printed, what ran so far is still written, and the exit
status is 1.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# nbconvert's HTML prefers a widget's view, whose manager script loads from a CDN: on a machine
# without internet the cell's output is empty.  Each cuda_magic output also holds its static
# view (text/html: config, resources, log, SASS), which needs nothing: the page shows that.
# docs/display.md gives the same list for `jupyter nbconvert` on the command line.
STATIC_FIRST = ["text/html", "text/markdown", "image/svg+xml", "text/latex", "image/png",
                "image/jpeg", "text/plain"]


def _gpu() -> str | None:
    """The GPU's arch (sm_90a...) or None; never fails."""
    sys.path.insert(0, str(ROOT))
    try:
        from cuda_magic import detect_arch
        return detect_arch()
    except Exception:
        return None
    finally:
        sys.path.remove(str(ROOT))


def _shown(path: Path) -> str:
    """`path` relative to the working directory when it is below it, else absolute."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _failure(nb, exc) -> str:
    """The failing cell: its number, first lines and error (without terminal colours)."""
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                head = "\n".join(cell.source.splitlines()[:3])
                tb = "\n".join(out.get("traceback") or [f"{out['ename']}: {out['evalue']}"])
                tb = re.sub(r"\x1b\[[0-9;]*m", "", tb)
                return f"cell {i + 1} failed:\n{head}\n---\n{tb[-3000:]}"
    return re.sub(r"\x1b\[[0-9;]*m", "", str(exc))[-3000:]


def _kernel_manager():
    """The kernel's manager: over local sockets (IPC) where the OS has them, so ipykernel does
    not warn in the middle of the output that TCP is unencrypted (and nothing listens on a
    port); the sockets go to a temporary folder."""
    from jupyter_client import KernelManager
    if os.name == "nt":
        return KernelManager(kernel_name="python3")
    return KernelManager(kernel_name="python3", transport="ipc",
                         ip=os.path.join(tempfile.mkdtemp(prefix="cuda-magic-run-"), "kernel"))


def run(notebook: Path, out: Path, timeout: int) -> bool:
    """Execute `notebook`, write OUT/NAME.ipynb and OUT/NAME.html; True if every cell ran."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", km=_kernel_manager(),
                            resources={"metadata": {"path": str(notebook.parent)}})
    start = time.perf_counter()
    error = None
    try:
        client.execute()
    except CellExecutionError as exc:
        error = _failure(nb, exc)
    except Exception as exc:      # the kernel died, a timeout, no kernel
        error = f"{type(exc).__name__}: {exc}"
    took = time.perf_counter() - start

    out.mkdir(parents=True, exist_ok=True)
    ipynb, html = out / notebook.name, (out / notebook.name).with_suffix(".html")
    nbformat.write(nb, ipynb)
    exporter = HTMLExporter(config=Config({"NbConvertBase": {"display_data_priority": STATIC_FIRST}}))
    page, _ = exporter.from_notebook_node(nb)
    html.write_text(page, encoding="utf-8")

    status = "failed after" if error else "ran in"
    print(f"{notebook.name}: {status} {took:.1f} s")
    print(f"  notebook: {ipynb}")
    print(f"  html:     {html}")
    if error:
        print(error, file=sys.stderr)
    return error is None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        default=[HERE / "quickstart.ipynb"], help="notebooks to run "
                        "(default: notebooks/quickstart.ipynb)")
    parser.add_argument("--out", type=Path, default=HERE / "executed",
                        help="where to write the results (default: notebooks/executed/)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell (default 600)")
    args = parser.parse_args(argv)

    notebooks = [p.resolve() for p in args.notebooks]
    for p in notebooks:
        if not p.is_file():
            parser.error(f"no notebook {p}")
    out = args.out.resolve()
    gpu = _gpu()
    print(f"GPU: {gpu}" if gpu else "GPU: none (the notebooks compile for sm_90a and skip launches)")
    # The kernel imports the cuda_magic of this checkout, and puts each kernel's SASS into the
    # static view the HTML page shows (settings.static_sass).
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ.setdefault("CUDA_MAGIC_STATIC_SASS", "1")
    for nb in notebooks:
        if not run(nb, out, args.timeout):
            return 1
    first = out / notebooks[0].name
    print(f"open it:  jupyter lab {_shown(first)}   (add --allow-root as root; on a remote "
          f"machine --ip 0.0.0.0 --no-browser)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
