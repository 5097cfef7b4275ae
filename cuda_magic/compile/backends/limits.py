"""Compile time limit and the interruptible wait of one compile, shared by the backends.

A compile can take minutes (a big unrolled kernel, CUTLASS).  Ctrl-C must stop
waiting at once, and a limit can be set after which a compile is given up:

- ``settings.compile_timeout`` (:mod:`cuda_magic.settings`; ``CUDA_MAGIC_COMPILE_TIMEOUT``,
  seconds; unset, empty, ``0`` or ``none``: no limit) is the limit;
  :func:`set_compile_timeout` sets it for the process (``None``: no limit).  Each
  compiler run gets the whole limit.
- nvcc runs in its own process group; on Ctrl-C, the limit or any error the
  whole group (nvcc, cicc, ptxas, ...) is killed and its directory removed.
- While a compile runs on the main thread, each step tells the :func:`..parallel.progress`
  listeners what runs and for how long (a live status: "compiling with nvcc… 1.2 s").
- NVRTC runs in the calling process: the compile runs in a worker thread that the caller
  waits on in short steps, so Ctrl-C and the limit take effect at once.  The wait, given up,
  sets the worker's cancel event (:func:`..parallel.cancel_events`): NVRTC 13.x with
  ``nvrtcSetFlowCallback`` then stops the compile at its next checkpoint
  (:mod:`.nvrtc`); an older NVRTC runs it to completion in the background, its result
  discarded (a precompiled header it was making is still published).

Progress, cancellation and the thread pool of a cell's parallel builds are :mod:`..parallel`.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, TypeVar

from ... import settings
from ..parallel import POLL, cancellable, tick
from ...errors import CompileTimeoutError

__all__ = ["CompileTimeoutError", "set_compile_timeout", "compile_timeout", "wait_for"]

ENV = settings.TABLE["compile_timeout"].env       # its environment variable
T = TypeVar("T")


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


def wait_for(work: Callable[[], T], *, timeout: float | None, on_timeout: Callable[[], BaseException],
             name: str = "cuda-magic compile", what: str = "compiling") -> T:
    """Run ``work()`` in a worker thread and wait for it in steps of :data:`POLL` seconds, so
    that Ctrl-C (KeyboardInterrupt) reaches the caller at once; past ``timeout`` seconds raise
    ``on_timeout()``.  Each step tells the :func:`progress` listeners ``what`` runs.  Either way
    the worker is abandoned and told so (its :func:`..parallel.cancel_events`, with those of the
    caller's builds): a compile that can be cancelled stops, any other runs on and its result
    is dropped.  Off the main thread with no limit (parallel builds), ``work`` runs in the
    caller's thread."""
    if timeout is None and threading.current_thread() is not threading.main_thread():
        return work()
    box: dict = {}
    abandon = threading.Event()
    within = cancellable(abandon)

    def run():
        try:
            box["value"] = within(work)
        except BaseException as exc:     # handed to the waiting thread
            box["error"] = exc
    worker = threading.Thread(target=run, name=name, daemon=True)
    started = time.monotonic()
    deadline = None if timeout is None else started + timeout
    worker.start()
    try:
        while worker.is_alive():
            step = POLL if deadline is None else min(POLL, deadline - time.monotonic())
            if step <= 0:
                raise on_timeout()
            worker.join(step)
            if worker.is_alive():
                tick(what, started)
    except BaseException:       # Ctrl-C or the limit: the compile is abandoned
        abandon.set()
        raise
    if "error" in box:
        exc = box.pop("error")
        try:
            raise exc
        finally:
            del exc
    return box["value"]
