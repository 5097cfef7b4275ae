"""Progress, cancellation and the thread pool of parallel compiles.

- :func:`progress`: while a compile is waited for on the main thread, the listeners registered
  here are called every :data:`POLL` seconds with what runs and for how long (:func:`tick`), so
  that a cell can show a live status ("compiling with nvcc… 1.2 s"); :func:`doing` adds a note
  from any thread ("building a one-off precompiled header").
- :func:`parallel`: the builds of one cell run together, a pool of threads each running a
  compile (NVRTC in the thread, nvcc as its own process); the main thread waits in short steps,
  so Ctrl-C stops the wait at once and tells the nvcc runs to kill their process groups and
  the NVRTC runs to cancel (:func:`cancelled`, checked by nvcc's wait; :func:`cancel_events`,
  by NVRTC's flow callback; :func:`cancellable` for pools of one's own).

The compile time limit and the interruptible wait of one compile are
:mod:`.backends.limits`.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence, TypeVar
from ..errors import Cancelled

__all__ = ["POLL", "progress", "doing", "tick", "WORKERS", "parallel", "cancellable", "cancelled",
           "cancel_events", "Cancelled"]

POLL = 0.1          # seconds between checks for Ctrl-C (and the time limit) while compiles run
_listeners: list[Callable[[str, float], None]] = []
T = TypeVar("T")


@contextmanager
def progress(listener: Callable[[str, float], None]) -> Iterator[None]:
    """While the block runs, call ``listener(what, seconds)`` every :data:`POLL` seconds of a
    compile waited for on the main thread (``what``: ``"compiling with nvcc"``)."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


_doing: dict[str, int] = {}      # what runs besides the compile itself -> how many (any thread)
_doing_lock = threading.Lock()


@contextmanager
def doing(note: str) -> Iterator[None]:
    """While the block runs (in any thread), the progress line adds ``note``
    (``"building a one-off precompiled header"``)."""
    with _doing_lock:
        _doing[note] = _doing.get(note, 0) + 1
    try:
        yield
    finally:
        with _doing_lock:
            _doing[note] -= 1
            if not _doing[note]:
                del _doing[note]


def tick(what: str, started: float) -> None:
    """Tell the :func:`progress` listeners that ``what`` has run since ``started``
    (``time.monotonic()``), with any :func:`doing` notes.  Only on the main thread; a failing
    listener is ignored."""
    if not _listeners or threading.current_thread() is not threading.main_thread():
        return
    seconds = time.monotonic() - started
    if _doing:
        what = f"{what} ({'; '.join(list(_doing))})"
    for listener in list(_listeners):
        try:
            listener(what, seconds)
        except Exception:
            pass


# ---- several builds at once -------------------------------------------------------------------------

WORKERS = 32        # at most this many compiles at once (and at least 4, whatever the cores)
_local = threading.local()


def cancelled() -> bool:
    """Whether the builds this thread belongs to were given up (checked by nvcc's wait)."""
    return any(event.is_set() for event in cancel_events())


def cancel_events() -> tuple[threading.Event, ...]:
    """The events that give up the builds this thread belongs to (any one set: given up), for a
    compiler that checks them from threads of its own (NVRTC's flow callback)."""
    return tuple(getattr(_local, "cancel", ()))


def cancellable(cancel: threading.Event) -> Callable[[Callable[[], T]], T]:
    """``run(work)``, for a pool's threads: ``work()`` with the builds it starts given up once
    ``cancel`` is set (nvcc runs killed, NVRTC runs discarded), and with those of the pool the
    caller's thread belongs to."""
    inherited = tuple(getattr(_local, "cancel", ()))   # a pool inside a pool's thread

    def run(work: Callable[[], T]) -> T:
        _local.cancel = (*inherited, cancel)
        try:
            return work()
        finally:
            _local.cancel = ()
    return run


def parallel(works: Sequence[Callable[[], T]], what: str) -> list[T]:
    """Run each of ``works`` in a thread of its own and return their results in order.

    The caller waits in steps of :data:`POLL` seconds, telling the :func:`progress`
    listeners ``what`` runs ("compiling 4 builds with nvrtc"), so Ctrl-C reaches it at once:
    the builds not started are dropped, nvcc runs are killed, NVRTC runs are cancelled where
    NVRTC can be (:mod:`.backends.nvrtc`; else they finish in the background and are discarded).  When builds fail, the rest still running finish and the
    error of the first failed one (in the order of ``works``) is raised.  One work runs in
    the caller's thread."""
    works = list(works)
    if len(works) < 2:
        return [work() for work in works]
    cancel = threading.Event()
    run = cancellable(cancel)
    pool = ThreadPoolExecutor(max_workers=min(len(works), max(4, min(WORKERS, os.cpu_count() or 1))),
                              thread_name_prefix="cuda-magic build")
    futures = [pool.submit(run, work) for work in works]
    started = time.monotonic()
    try:
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=POLL, return_when=FIRST_EXCEPTION)
            if any(f.exception() is not None for f in done):
                for f in pending:       # not started: dropped; running: waited for
                    f.cancel()
                pending = {f for f in pending if not f.cancelled()}
            tick(what, started)
    except BaseException:
        cancel.set()
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    for f in futures:
        if not f.cancelled() and f.exception() is not None:
            exc = f.exception()
            try:
                raise exc
            finally:
                del exc
    return [f.result() for f in futures]
