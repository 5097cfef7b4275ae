"""The watchdog: a launch that returned at once (CuPy, PyTorch, a stream) and never ends.

Such a launch hangs later, in the user's own code (CuPy's ``synchronize()``, ``tensor.cpu()``),
where Ctrl-C does nothing.  So each launch that does not wait notes its stream, what it
launched and when in :data:`WATCH` (one dict store; the launch plan does it too), and a daemon
thread asks each noted stream every :data:`PERIOD` seconds whether it is idle
(``cuStreamQuery``: nothing is put into the user's stream, not even an event between two of
its launches, which a programmatic dependent launch pair would have to order around).  A stream idle
again is forgotten; one still busy past the launch time limit (``settings.launch_timeout``)
since its last launch is diagnosed like a hang in a wait (:func:`.waiting.read_warps`), CUDA
here is marked lost, and the report is written to ``sys.stderr``: in Jupyter, the output of
the cell that is running, even while that cell is blocked in the driver.  It says that only a
restart of the Python kernel frees the GPU.  Reports are kept in :data:`REPORTS`.  (A stream
fed work for longer than the limit after its last launch counts as hung too.)
"""

from __future__ import annotations

import sys
import threading
import time

from ... import settings
from .. import driver
from . import waiting

__all__ = ["WATCH", "REPORTS", "note", "stop", "PERIOD"]

PERIOD = 0.2
WATCH: dict = {}        # stream handle -> (a launcher, or (kernel, dims); time.monotonic())
REPORTS: list = []      # the KernelHangErrors reported, oldest first
_wake = threading.Event()
_lock = threading.Lock()
_thread: dict = {"t": None, "stop": False}


def note(stream: int, kernel, dims) -> None:
    """``kernel`` was just launched on ``stream`` with ``dims`` and did not wait: watch it.
    (The launch plan stores ``(launcher, time.monotonic())`` itself.)"""
    WATCH[stream] = ((kernel, tuple(dims)), time.monotonic())
    t = _thread["t"]
    if t is None or not t.is_alive():
        _start()


def _start() -> None:
    with _lock:
        t = _thread["t"]
        if t is None or not t.is_alive():
            _thread["stop"] = False
            t = _thread["t"] = threading.Thread(target=_run, name="cuda-magic watchdog",
                                                daemon=True)
            t.start()
    _wake.set()


def stop() -> None:
    """End the watchdog thread (tests); the next launch that does not wait starts it again."""
    _thread["stop"] = True
    _wake.set()
    t = _thread["t"]
    if t is not None:
        t.join(5)


def _run() -> None:
    try:
        driver.context()
    except Exception:
        return
    reported: dict = {}
    while not _thread["stop"]:
        if not WATCH:
            _wake.wait(1.0)
            _wake.clear()
            continue
        time.sleep(PERIOD)
        try:
            drv = driver.api()
        except Exception:       # no driver now (a test's fake one removed): wait for one; the
            _wake.wait(1.0)     # launch plans write to WATCH without starting a thread
            _wake.clear()
            continue
        for stream, entry in list(WATCH.items()):
            if driver.lost() is not None:
                break
            err = drv.cuStreamQuery(stream)[0]
            if err != waiting.NOT_READY:          # idle again (or an error its user will see)
                if WATCH.get(stream) is entry:
                    WATCH.pop(stream, None)
                continue
            limit = settings.launch_timeout
            who, since = entry
            if limit is not None and time.monotonic() - since > limit and \
                    reported.get(stream) != since:
                reported[stream] = since
                kernel, dims = (who.kernel, who.dims) if hasattr(who, "kernel") else who
                _report(waiting.Launch(kernel, tuple(dims), since))


def _report(launch) -> None:
    seconds = time.monotonic() - launch.started
    exc = waiting.hung(launch, seconds, interrupted=False)
    REPORTS.append(exc)
    text = (f"cuda-magic watchdog: KernelHangError: {exc}\n(The cell's own code may stay blocked "
            f"in the driver, where Ctrl-C does nothing: restart the Python kernel.)\n")
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except Exception:
        pass
