"""Slow work shows progress: a compile over half a second gets a live status line (an output
updated in place in a notebook, a line on stderr in a terminal); the widget's lazy tabs count
the seconds of nvdisasm."""

import io
import os
import sys
import time
from pathlib import Path

import nbformat
import pytest
from IPython.utils.capture import capture_output
from nbclient import NotebookClient

from conftest import ARCH, SAXPY
from cuda_magic.compile import parallel
from cuda_magic.compile.backends import limits
from cuda_magic.display import progress

ROOT = Path(__file__).resolve().parents[2]
NVCC_CELL = f"--arch {ARCH} --compiler nvcc --force"


def test_status_says_nothing_for_quick_work_then_one_terminal_line():
    out = io.StringIO()
    with progress.Status(live=False, stream=out) as status:
        status("compiling with nvcc", 0.1)
        assert out.getvalue() == ""
        status("compiling with nvcc", progress.DELAY)
        status("compiling with nvcc", progress.DELAY + 0.3)     # no second line
    text = out.getvalue()
    assert text.startswith("compiling with nvcc…") and text.count("\n") == 1
    assert text.rstrip().endswith(" s")


def test_a_terminal_line_ends_with_where_the_work_got_to():
    """The line is printed once (a terminal is not redrawn), so its end says the last count,
    not the first one's stale figure."""
    out = io.StringIO()
    with progress.Status(live=False, stream=out) as status:
        status("tuning: 0/12 builds compiled", progress.DELAY)
        status("tuning: 5/12 builds compiled", progress.DELAY + 0.1)
        status("tuning: 12/12 builds compiled", progress.DELAY + 0.2)
    text = out.getvalue()
    assert text.startswith("tuning: 0/12 builds compiled… tuning: 12/12 builds compiled: ")
    assert text.count("\n") == 1 and text.rstrip().endswith(" s") and "5/12" not in text


def test_listeners_hear_the_compile_waits_on_the_main_thread_only():
    heard = []
    with parallel.progress(lambda what, s: heard.append((what, s))):
        limits.wait_for(lambda: time.sleep(0.35), timeout=None, on_timeout=RuntimeError,
                        what="compiling with nvrtc")
    assert heard and all(w == "compiling with nvrtc" for w, _ in heard)
    assert [s for _, s in heard] == sorted(s for _, s in heard) and heard[-1][1] >= 0.2
    # a failing listener does not fail the compile
    with parallel.progress(lambda *_: 1 / 0):
        assert limits.wait_for(lambda: time.sleep(0.25) or 7, timeout=None,
                               on_timeout=RuntimeError) == 7


def test_terminal_gets_one_line_for_a_slow_nvcc_compile(shell, monkeypatch, capsys):
    monkeypatch.setattr(progress, "DELAY", 0.0)     # nvcc takes ~0.4 s here: show it at once
    shell.run_cell_magic("cuda", NVCC_CELL, SAXPY)
    err = capsys.readouterr().err
    assert err.count("compiling with nvcc…") == 1 and err.rstrip().endswith(" s")
    # --quiet shows nothing, progress included
    shell.run_cell_magic("cuda", NVCC_CELL + " --quiet", SAXPY)
    assert "compiling" not in capsys.readouterr().err


def test_notebook_status_is_one_output_updated_in_place(shell, monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "EVERY", 0.0)
    monkeypatch.setattr(shell, "kernel", object(), raising=False)    # as under ipykernel
    with capture_output() as cap:
        shell.run_cell_magic("cuda", NVCC_CELL, SAXPY)
    first, *updates = cap.outputs
    assert "compiling with nvcc… " in first.data["text/html"] and not first.update
    assert updates and all(o.update for o in updates)
    ids = {o.transient["display_id"] for o in cap.outputs}
    assert len(ids) == 1                                  # one line, updated in place
    seconds = [float(o.data["text/html"].split("… ")[1].split(" s")[0]) for o in cap.outputs[:-1]]
    assert seconds == sorted(seconds)
    assert "compiling" not in updates[-1].data["text/html"]    # emptied at the end


def test_in_a_real_kernel(monkeypatch, tmp_path):
    """Jupyter's own messages: a display_data, then update_display_data with the same id."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("%load_ext cuda_magic\nimport cuda_magic.display.progress as p\n"
                                  "p.DELAY = 0.0"),
        nbformat.v4.new_code_cell(f"%%cuda {NVCC_CELL}\n{SAXPY}"),
    ])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), *sys.path]))
    seen = []

    class Recording(NotebookClient):
        def process_message(self, msg, cell, cell_index):
            if cell_index == 1 and msg["msg_type"] in ("display_data", "update_display_data",
                                                       "execute_result"):
                seen.append((msg["msg_type"], msg["content"]))
            return super().process_message(msg, cell, cell_index)

    Recording(nb, timeout=120, kernel_name="python3",
              resources={"metadata": {"path": str(tmp_path)}}).execute()
    kinds = [k for k, _ in seen]
    assert kinds[0] == "display_data" and "update_display_data" in kinds
    status_id = seen[0][1]["transient"]["display_id"]
    assert "compiling with nvcc…" in seen[0][1]["data"]["text/html"]
    assert all(c["transient"]["display_id"] == status_id
               for k, c in seen if k == "update_display_data")
    # the cell's result (the widget) comes after the status
    assert kinds[-1] == "execute_result"


def test_widget_tab_counts_the_seconds_of_slow_work():
    pytest.importorskip("ipywidgets")
    import ipywidgets as widgets

    from cuda_magic.display.widget import LazyPanel
    panel = LazyPanel(widgets, ["k"], lambda i: time.sleep(0.6) or "<pre>SASS</pre>",
                      "running nvdisasm", "kernel")
    values = []
    panel.pane.observe(lambda ch: values.append(ch["new"]), names="value")
    panel.fill()
    assert "running nvdisasm …" in values[0]
    # every character renders in a browser without an emoji font (U+23F3 was a box)
    assert all(ord(c) < 0x2300 for v in values for c in v), values
    assert any("running nvdisasm … 0." in v for v in values), values
    assert values[-1] == "<pre>SASS</pre>" and panel.pane.value == "<pre>SASS</pre>"
