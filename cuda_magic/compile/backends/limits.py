"""Compile time limit and interruptible waits, shared by the backends.

A compile can take minutes (a big unrolled kernel, CUTLASS).  Ctrl-C must stop
waiting at once, and a limit can be set after which a compile is given up:

- ``settings.compile_timeout`` (:mod:`cuda_magic.settings`; ``CUDA_MAGIC_COMPILE_TIMEOUT``,
  seconds; unset, empty, ``0`` or ``none``: no limit) is the limit;
  :func:`set_compile_timeout` sets it for the process (``None``: no limit).  Each
  compiler run gets the whole limit.
- nvcc runs in its own process group; on Ctrl-C, the limit or any error the
  whole group (nvcc, cicc, ptxas, ...) is killed and its directory removed.
- While a compile runs on the main thread, the listeners registered with
  :func:`progress` are called every step with what runs and for how long, so that
  a cell can show a live status ("compiling with nvcc… 1.2 s").
- NVRTC runs in the calling process and cannot be stopped: the compile runs in
  a worker thread that the caller waits on in short steps, so Ctrl-C and the
  limit take effect at once.  The abandoned compile runs to completion in the
  background; the worker then destroys its program and its result is
  discarded (a precompiled header it was making is still published).
- The builds of one cell run together (:func:`parallel`): a pool of threads, each
  running a compile (NVRTC in the thread, nvcc as its own process); the main thread
  waits in short steps, so Ctrl-C stops the wait at once and tells the nvcc runs to
  kill their process groups (:func:`cancelled`).
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence, TypeVar

from ... import settings
from .base import CompileError

__all__ = ["CompileTimeoutError", "set_compile_timeout", "compile_timeout", "wait_for", "POLL",
           "progress", "doing", "tick", "parallel", "cancellable", "cancelled", "Cancelled"]

POLL = 0.1          # seconds between checks for Ctrl-C and the limit while a compile runs
ENV = settings.TABLE["compile_timeout"].env       # its environment variable
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


def set_compile_timeout(seconds: float | None) -> None:
    """Give up a compile after ``seconds`` (``None`` or ``0``: no limit, the default).

    Sets ``cuda_magic.settings.compile_timeout``, overriding ``CUDA_MAGIC_COMPILE_TIMEOUT`` for
    this process.  A compile that takes longer raises :class:`CompileTimeoutError` (nvcc: its
    processes are killed; NVRTC: the compile is abandoned and finishes in the background).
    """
    settings.put("compile_timeout", seconds, by="set_compile_timeout")


def compile_timeout() -> float | None:
    """The limit in force, ``settings.compile_timeout``: :func:`set_compile_timeout`'s, else
    ``$CUDA_MAGIC_COMPILE_TIMEOUT``'s (None: no limit)."""
    return settings.compile_timeout


class CompileTimeoutError(CompileError):
    """A compile ran past the compile time limit (:func:`set_compile_timeout`)."""

    def __init__(self, compiler: str, seconds: float, argv: Sequence[str], source: str,
                 filename: str = "cell.cu", done: str = ""):
        self.timeout, self.done = seconds, done
        super().__init__(compiler, "", argv, source, filename)
        self.log = self._why()

    @property
    def what(self) -> str:
        return (f"{self.compiler} did not finish compiling {self.filename} within the compile "
                f"time limit of {self.timeout:g} s" + (f" for {self.context}" if self.context else ""))

    def _why(self) -> str:
        return (f"{self.done}. Raise or remove the limit with cuda_magic.set_compile_timeout"
                f"(seconds or None) or the {ENV} environment variable.")

    def _message(self) -> str:
        return "\n".join([self.what, self._why(), *self.notes])

    def error_lines(self) -> list:
        return []

    def _render_traceback_(self) -> list[str]:
        if not self.shown:
            return super()._render_traceback_()
        return [f"CompileTimeoutError: {self.what} (shown above)"]


def wait_for(work: Callable[[], T], *, timeout: float | None, on_timeout: Callable[[], BaseException],
             name: str = "cuda-magic compile", what: str = "compiling") -> T:
    """Run ``work()`` in a worker thread and wait for it in steps of :data:`POLL` seconds, so
    that Ctrl-C (KeyboardInterrupt) reaches the caller at once; past ``timeout`` seconds raise
    ``on_timeout()``.  Each step tells the :func:`progress` listeners ``what`` runs.  Either way the worker is abandoned: it runs on and its result is dropped.
    Off the main thread with no limit (parallel builds), ``work`` runs in the caller's thread."""
    if timeout is None and threading.current_thread() is not threading.main_thread():
        return work()
    box: dict = {}

    def run():
        try:
            box["value"] = work()
        except BaseException as exc:     # handed to the waiting thread
            box["error"] = exc
    worker = threading.Thread(target=run, name=name, daemon=True)
    started = time.monotonic()
    deadline = None if timeout is None else started + timeout
    worker.start()
    while worker.is_alive():
        step = POLL if deadline is None else min(POLL, deadline - time.monotonic())
        if step <= 0:
            raise on_timeout()
        worker.join(step)
        if worker.is_alive():
            tick(what, started)
    if "error" in box:
        exc = box.pop("error")
        try:
            raise exc
        finally:
            del exc
    return box["value"]


# ---- several builds at once -----------------------------------------------------------------

WORKERS = 32        # at most this many compiles at once (and at least 4, whatever the cores)
_local = threading.local()


class Cancelled(Exception):
    """The wait for the builds of a cell was given up (Ctrl-C): a build still running stops."""


def cancelled() -> bool:
    """Whether the builds this thread belongs to were given up (checked by nvcc's wait)."""
    return any(event.is_set() for event in getattr(_local, "cancel", ()))


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
    the builds not started are dropped, nvcc runs are killed, NVRTC runs finish in the
    background and are discarded.  When builds fail, the rest still running finish and the
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
