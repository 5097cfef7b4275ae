"""The helper process of a sweep: ``python3 -m cuda_magic.runtime.sweep``, one per GPU.

Messages are framed pickles (:mod:`~cuda_magic.runtime.helper.transport`).  The helper
first says ``("ready", gpu)`` (or ``("failed", why)`` when it has no GPU); then each message
from the notebook is one of

- ``("arrays", {name: array})``: the arrays every later job of a sweep shares, put on the GPU
  once (this also forgets the reference);
- ``("reference", (arrays, rtol, atol, formats))``: the outputs later jobs are judged against here
  (:func:`~cuda_magic.correctness.reference.references`), so only the verdict goes back;
- a :class:`~.jobs.Job`, answered with its :class:`~.jobs.Outcome`.

It exits after a fault (CUDA is over for this process) or at the end of its input.  It also
exits when the notebook is gone while a job runs (:func:`watch`: its input hung up, or its
parent process changed), so a helper never outlives the process that started it.
:class:`~.pools.Helper` is the notebook's end.
"""

from __future__ import annotations

import os
import select
import threading

from .. import driver
from ..helper import transport
from ...correctness.reference import references
from .jobs import Outcome
from ..device_array import DeviceArray
from .replay import label, run_job

__all__ = ["serve", "main", "watch", "WATCH_S", "ARRAYS", "REFERENCE", "READY", "FAILED"]

ARRAYS, REFERENCE, READY, FAILED = "arrays", "reference", "ready", "failed"
WATCH_S = 0.5        # how often the helper looks for its notebook


def watch(inp: int = 0, interval: float = WATCH_S) -> threading.Thread:
    """End this process (``os._exit``) as soon as the notebook is gone, even while a job runs:
    its end of ``inp`` hung up (it closed it, or died: a SIGKILLed notebook too) or the parent
    process changed (the notebook died and this process was handed to another).  A daemon
    thread; the serving loop ends at the end of its input by itself when idle."""
    parent = os.getppid()

    def loop() -> None:
        poller = select.poll() if hasattr(select, "poll") else None
        if poller is not None:
            poller.register(inp, select.POLLHUP | select.POLLERR)
        while True:
            if poller is not None:
                events = poller.poll(interval * 1000)
                gone = any(ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL)
                           for _, ev in events)
            else:
                threading.Event().wait(interval)
                gone = False
            if gone or os.getppid() != parent:
                os._exit(0)

    thread = threading.Thread(target=loop, name="cuda-magic helper watch", daemon=True)
    thread.start()
    return thread


def serve(inp: int, out: int) -> None:
    """The helper's loop: a ready message with its GPU, then one Outcome per Job (an
    ``("arrays", {...})`` message sets the arrays every later job shares); it exits after a
    fault (CUDA is over for this process) or at end of input."""
    try:
        gpu = label()
    except Exception as exc:
        transport.send(out, (FAILED, f"{type(exc).__name__}: {exc}"))
        return
    transport.send(out, (READY, gpu))
    shared: dict = {}
    reference = None
    failed = ""
    while True:
        try:
            job = transport.recv(inp)
        except EOFError:
            return
        if isinstance(job, tuple) and job[0] == REFERENCE:
            reference = references(*job[1])
            continue
        if isinstance(job, tuple) and job[0] == ARRAYS:
            for buf in shared.values():
                buf.free()
            shared, failed, reference = {}, "", None
            try:
                for name, a in job[1].items():
                    shared[name] = DeviceArray.upload(a)
            except Exception as exc:     # out of memory: each job then fails, saying why
                failed = f"the sweep's arrays could not be put on the GPU: {exc}"
            continue
        outcome = run_job(job, gpu, shared, reference) if not failed else \
            Outcome(job.index, "error", failed, "SweepError", gpu=gpu)
        transport.send(out, outcome)
        if driver.lost() is not None:
            return


def main() -> int:
    # The protocol owns the original stdout; anything the kernels or libraries print goes to
    # stderr, so it cannot corrupt a frame.
    inp, out = transport.serving()
    watch(inp)
    serve(inp, out)
    return 0
