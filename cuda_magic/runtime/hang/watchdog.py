"""The watchdog: a launch that returned at once (CuPy, PyTorch, a stream) and never ends.

Such a launch hangs later, in the user's own code (CuPy's ``synchronize()``, ``tensor.cpu()``),
where Ctrl-C does nothing.  So after a launch that does not wait, an event is recorded on its
stream (:func:`arm`; one at a time per stream, so a stream of launches costs one dict lookup
each and an event record a few times a second), and a daemon thread polls the events every
:data:`PERIOD` seconds.  One still pending past the launch time limit
(``settings.launch_timeout``; counted from its launch, so work queued before it counts too)
is diagnosed like a hang in a wait (:func:`.waiting.read_warps`), CUDA here is marked lost,
and the report is written to ``sys.stderr``: in Jupyter, the output of the cell that is
running, even while that cell is blocked in the driver.  The report says that only a
restart of the Python kernel frees the GPU.  Reports are kept in :data:`REPORTS`.
"""

from __future__ import annotations

import sys
import threading
import time

from ... import settings
from .. import driver
from . import waiting

__all__ = ["WATCH", "REPORTS", "arm", "arm_launcher", "stop", "PERIOD"]

PERIOD = 0.2
WATCH: dict = {}        # stream handle -> (event, Launch, reported) or None (not watched)
REPORTS: list = []      # the KernelHangErrors reported, oldest first
_wake = threading.Event()
_lock = threading.Lock()
_thread: dict = {"t": None, "stop": False}
_pool: list = []


def _off(_value=None) -> None:
    """The limit changed: watch afresh (a stream marked unwatched while it was off)."""
    for stream in [s for s, e in list(WATCH.items()) if e is None]:
        WATCH.pop(stream, None)


settings.watch("launch_timeout", _off)


def arm(stream: int, kernel, dims) -> None:
    """Watch ``kernel``'s launch just queued on ``stream``, unless that stream is watched."""
    if stream in WATCH:
        return
    if settings.launch_timeout is None or driver.lost() is not None:
        WATCH[stream] = None
        return
    drv = driver.api()
    try:
        ev = _pool.pop() if _pool else driver.check(
            drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
        driver.check(drv.cuEventRecord(ev, stream), "cuEventRecord")
    except Exception:           # an invalid stream: the launch said so already
        return
    WATCH[stream] = (ev, waiting.Launch.of(kernel, dims), False)
    _start()


def arm_launcher(launcher) -> None:
    """:func:`arm` for a ``k[grid, block]`` launcher (what the launch plan calls)."""
    arm(launcher.stream, launcher.kernel, launcher.dims)


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
    """End the watchdog thread (tests); launches armed later start it again."""
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
    while not _thread["stop"]:
        if not any(WATCH.values()):
            _wake.wait(5)
            _wake.clear()
            continue
        time.sleep(PERIOD)
        drv = driver.api()
        for stream, entry in list(WATCH.items()):
            if not entry:
                continue
            ev, launch, reported = entry
            err = int(drv.cuEventQuery(ev)[0])
            if err != waiting.NOT_READY:
                WATCH.pop(stream, None)
                if err == 0:
                    _pool.append(ev)
                continue
            limit = settings.launch_timeout
            if not reported and limit is not None and time.monotonic() - launch.started > limit:
                WATCH[stream] = (ev, launch, True)
                _report(launch)


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
