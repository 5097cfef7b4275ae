"""Helpers for tests/suites/test_browser.py: a throwaway JupyterLab server, a notebook run in it, its widgets.

Everything here waits with a timeout and raises AssertionError (with the server log or the
cell's error text) instead of hanging.
"""

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"

# User settings for the throwaway lab: nothing that pops up (news/update toasts, kernel
# dialogs), every cell in the DOM (no windowing), the preferred kernel started unasked.
SETTINGS = {
    "@jupyterlab/apputils-extension/notification":
        {"fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True},
    "@jupyterlab/apputils-extension/sessionDialogs": {"skipKernelRestartDialog": True},
    "@jupyterlab/notebook-extension/tracker":
        {"autoStartDefaultKernel": True, "windowingMode": "none"},
}


def skip_reason() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not os.path.exists(CHROMIUM):
        return (f"no {CHROMIUM}: apt-get install -y --no-install-recommends chromium "
                "(never `playwright install`)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return 'no playwright package: pip install -e ".[test]"'
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status
    except OSError:
        return 0


@contextmanager
def lab_server(root: Path, timeout: float = 60):
    """Run `jupyter lab` on `root`; yield (base_url, token). Server and kernels are gone afterwards."""
    state = Path(tempfile.mkdtemp(prefix="lab-state-"))
    for name, values in SETTINGS.items():
        f = state / "settings" / f"{name}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(values))
    # No build check (a node/yarn run at each page load, and a "Build Recommended" dialog).
    (state / "config" / "labconfig").mkdir(parents=True)
    (state / "config" / "labconfig" / "page_config.json").write_text(
        json.dumps({"buildCheck": False, "buildAvailable": False}))
    env = dict(os.environ,
               JUPYTERLAB_SETTINGS_DIR=str(state / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(state / "workspaces"),
               JUPYTER_CONFIG_DIR=str(state / "config"),    # no user config (passwords, ...)
               JUPYTER_RUNTIME_DIR=str(state / "runtime"),
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    port, token = _free_port(), secrets.token_hex(16)
    base = f"http://127.0.0.1:{port}"
    log = open(state / "server.log", "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.expose_app_in_browser=True",             # window.jupyterapp, to run commands
         "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         *(["--allow-root"] if os.geteuid() == 0 else [])],                 # CI containers
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while _get(f"{base}/api/status?token={token}") != 200:
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise AssertionError(f"jupyter lab did not start (rc={proc.poll()}):\n{log.read()[-4000:]}")
            time.sleep(0.25)
        yield base, token
    finally:
        # /api/shutdown stops the kernels too; then the whole process group, to be sure.
        req = urllib.request.Request(f"{base}/api/shutdown?token={token}", method="POST")
        try:
            urllib.request.urlopen(req, timeout=5).close()
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        try:
            os.killpg(proc.pid, signal.SIGKILL)   # leftovers of this group (kernels have their own
        except ProcessLookupError:               # session, and exit when the server is gone)
            pass
        log.close()
        shutil.rmtree(state, ignore_errors=True)


@contextmanager
def browser_page(width: int = 1400, height: int = 1000):
    """A Playwright page in Debian's headless chromium."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()


# State of the current notebook: per code cell its prompt, execution count, error outputs.
_STATE_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = panel.content.widgets.filter(c => c.model.type === 'code');
  return {
    kernel: panel.sessionContext.session?.kernel?.status ?? null,
    done: window.__runAllDone ?? null,
    cells: cells.map(c => ({
      prompt: c.node.querySelector('.jp-InputPrompt')?.textContent ?? '',
      count: c.model.executionCount,
      source: c.model.sharedModel.getSource().slice(0, 200),
      errors: c.model.outputs.toJSON().filter(o => o.output_type === 'error')
                .map(o => (o.traceback || []).join('\\n') || `${o.ename}: ${o.evalue}`),
    })),
  };
}"""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def notebook(cells) -> dict:
    """An nbformat 4 notebook (as a dict, for json.dumps) of code cells, in the python3 kernel."""
    return {"cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [],
                       "execution_count": None} for c in cells],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                        "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def open_notebook(page, base: str, token: str, name: str, timeout: float = 60) -> None:
    """Open `name` (relative to the server root) and wait until its kernel is idle."""
    page.goto(f"{base}/lab/tree/{name}?token={token}", timeout=timeout * 1000)
    page.wait_for_function(
        """name => {
          const w = window.jupyterapp?.shell?.currentWidget;
          return w?.context?.path === name && w.sessionContext?.session?.kernel?.status === 'idle';
        }""", arg=name, timeout=timeout * 1000)


def run_all(page, timeout: float = 90) -> list[dict]:
    """Clear outputs, run every cell, wait until all finished; fail with a failing cell's error."""
    page.evaluate("""() => {
      const app = window.jupyterapp;
      window.__runAllDone = null;
      return app.commands.execute('notebook:clear-all-cell-outputs').then(() => {
        app.commands.execute('notebook:run-all-cells').then(ok => { window.__runAllDone = ok; },
                                                           err => { window.__runAllDone = String(err); });
      });
    }""")
    deadline = time.monotonic() + timeout
    while True:
        state = page.evaluate(_STATE_JS)
        for i, cell in enumerate(state["cells"]):
            if cell["errors"]:
                error = _ANSI.sub("", "\n".join(cell["errors"]))
                page.evaluate("""i => window.jupyterapp.shell.currentWidget.content.widgets
                                 .filter(c => c.model.type === 'code')[i].node.scrollIntoView()""", i)
                raise AssertionError(f"code cell #{i + 1} {cell['prompt']} failed:\n{cell['source']}\n"
                                     f"---\n{error[-4000:]}")
        finished = all(c["count"] is not None and "*" not in c["prompt"] for c in state["cells"])
        if state["done"] is True and finished and state["kernel"] == "idle":
            return state["cells"]
        prompts = [c["prompt"] for c in state["cells"]]
        if state["done"] not in (None, True):                   # e.g. the kernel died
            raise AssertionError(f"run-all-cells gave {state['done']!r}: prompts {prompts}, "
                                 f"kernel {state['kernel']}")
        if time.monotonic() > deadline:
            raise AssertionError(f"cells not finished after {timeout}s: prompts {prompts}, "
                                 f"kernel {state['kernel']}")
        time.sleep(0.25)


def _label(page, title: str):
    """A Lumino tab-bar label whose text is exactly `title`."""
    return page.locator(".lm-TabBar-tabLabel", has_text=re.compile(rf"^\s*{re.escape(title)}\s*$"))


def widget_tab(page, title: str, timeout: float = 30):
    """The ipywidgets Tab in the notebook's outputs that has a tab titled `title`."""
    tabs = page.locator(".jp-OutputArea .jupyter-widgets.widget-tab")
    tab = tabs.filter(has=page.locator(":scope > .widget-tab-bar").filter(has=_label(page, title))).first
    try:
        tab.wait_for(state="visible", timeout=timeout * 1000)
    except Exception:
        found = [tab_titles(t) for t in tabs.all()]
        raise AssertionError(f"no ipywidgets Tab with a {title!r} tab after {timeout}s; "
                             f"Tabs rendered: {found or 'none'}") from None
    return tab


def tab_titles(tab) -> list[str]:
    """Titles of the Tab's own tabs (not those of Tabs nested in it)."""
    labels = tab.locator(":scope > .widget-tab-bar .lm-TabBar-tab .lm-TabBar-tabLabel")
    return [t.strip() for t in labels.all_inner_texts()]


def select_tab(tab, title: str, timeout: float = 10):
    """Click the tab titled `title`; return the locator of the panel it shows."""
    button = tab.locator(":scope > .widget-tab-bar .lm-TabBar-tab").filter(has=_label(tab.page, title))
    button.click(timeout=timeout * 1000)
    expect(button).to_have_attribute("aria-selected", "true", timeout=timeout * 1000)
    return tab.locator(":scope > .widget-tab-contents > .lm-Widget:not(.lm-mod-hidden)")


def save_cell_picture(page, cell, path: Path, max_height: int = 900, colours: int = 256) -> Path:
    """Save a picture of one notebook cell (input and output), as the README shows it: the
    cell scrolled to the top of the notebook, cut at `max_height` CSS pixels, and, with
    Pillow, quantised to `colours` colours (a PNG of ~100 KB instead of ~300 KB)."""
    cell.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)                        # let the notebook settle after scrolling
    box = cell.bounding_box()
    area = page.locator(".jp-NotebookPanel-notebook").first.bounding_box()   # the scrolled part
    top = max(box["y"], area["y"])
    clip = {"x": box["x"], "y": top,
            "width": min(box["width"], area["x"] + area["width"] - box["x"]),
            "height": min(box["y"] + box["height"], area["y"] + area["height"], top + max_height) - top}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.png")
    page.screenshot(path=tmp, clip=clip, timeout=15_000)
    try:
        from PIL import Image
    except ImportError:
        tmp.replace(path)
        return path
    with Image.open(tmp) as im:
        im.convert("RGB").quantize(colours, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    tmp.unlink()
    return path


UPDATE_PICTURES = "CUDA_MAGIC_UPDATE_SCREENSHOTS"


def picture_target(tracked: Path, scratch: Path) -> Path:
    """Where a picture the docs show is written: the tracked file itself only when
    ``CUDA_MAGIC_UPDATE_SCREENSHOTS=1`` asks for it, else a file of the same name in ``scratch``."""
    if os.environ.get(UPDATE_PICTURES) == "1":
        return tracked
    return Path(scratch) / tracked.name


def artifacts_dir() -> Path:
    d = Path(os.environ.get("CUDA_MAGIC_ARTIFACTS") or ROOT / "tests" / ".artifacts")
    d.mkdir(parents=True, exist_ok=True)
    return d


def expect(locator):
    """playwright's expect (imported here so that this module imports without playwright)."""
    from playwright.sync_api import expect as _expect
    return _expect(locator)


def view_output(page, cell, selector: str):
    """The output of ``cell`` that holds ``selector``: not simply its first output, since a slow
    compile's status line (display/progress.py) leaves an emptied output before the view."""
    return cell.locator(".jp-OutputArea-output").filter(has=page.locator(selector)).first


def shown_outputs(page, selector: str, names, prefix: str, shown_js: str) -> dict:
    """The first output of each code cell that holds ``selector``, in order, one per name of
    ``names``: each screenshot to ``<prefix>_<name>.png`` under :func:`artifacts_dir`, and what
    ``shown_js`` (a function of the output element) reads from it, by name."""
    areas = page.locator(".jp-CodeCell").filter(has=page.locator(selector))
    expect(areas).to_have_count(len(names), timeout=30_000)
    page.wait_for_timeout(300)
    out = {}
    for i, name in enumerate(names):
        output = view_output(page, areas.nth(i), selector)
        output.scroll_into_view_if_needed()
        output.screenshot(path=artifacts_dir() / f"{prefix}_{name}.png", timeout=15_000)
        out[name] = output.evaluate(shown_js)
    return out
