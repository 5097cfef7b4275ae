"""Launching in a helper process.

After a kernel fault CUDA is gone for the rest of this process (see
``driver``), so later launches go to a helper process with a CUDA context of
its own; a fault there ends only the helper, and the next launch starts a new
one.  ``isolate()`` sends launches there from the start, for debugging a
kernel that may fault without ever losing the notebook's CUDA.  Arguments
cross as :mod:`.helper.encoding` describes them, in framed pickles
(:mod:`.helper.transport`): NumPy arrays and numbers only (device memory cannot, nor a
tensor map); launch attributes (cluster, cooperative, PDL) go with the launch.
The helper's side is :mod:`.worker_main`.
"""

from __future__ import annotations

import atexit
import select
import subprocess
import sys
import threading
import time

from ... import settings
from ...arrays import library
from .. import driver
from ...errors import ArgumentError, ArgumentRangeError
from ..driver import CudaError, NoGPUError
from ...errors import BenchError, KernelHangError, OccupancyError
from . import encoding, transport
from ..hang import waiting
from .program import Entry, Program

__all__ = ["isolate", "call", "stop", "message", "answer", "MODULE", "LAUNCHING"]

LAUNCHING = ("run", "bench", "profile", "check", "timeline")   # ops whose payload is a launch

MODULE = "cuda_magic.runtime.helper.main"

_lock = threading.Lock()
_state: dict = {"proc": None}
_ERRORS = {c.__name__: c for c in (ArgumentError, ArgumentRangeError, CudaError, NoGPUError,
                                   BenchError, OccupancyError, KernelHangError, TypeError,
                                   ValueError, OverflowError)}
GRACE = 30.0        # seconds past the launch time limit before the notebook stops waiting itself


def isolate(on: bool = True) -> None:
    """Launch every kernel in a helper process (``on=False``: in this process again, unless lost)."""
    driver._state["isolate_asked"] = bool(on)
    driver._state["isolated"] = bool(on) or driver._state.get("remote") is not None
    if not on:
        stop()


def stop() -> None:
    """End the helper process, if there is one."""
    proc = _state["proc"]
    _state["proc"] = None
    if proc is not None:
        try:
            proc.stdin.close()
        except OSError:
            pass
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


atexit.register(stop)      # as a daemon process would be: ended with the session


def _start() -> subprocess.Popen:
    proc = _state["proc"]
    if proc is None or proc.poll() is not None:
        stop()                 # a helper that ended: its pipes closed
        proc = _state["proc"] = transport.spawn(MODULE, transport.child_env(tool_child=False))
    return proc


def message(kernel, op: str, *payload, where: str = "in a helper process (after a fault, or "
                                                    "isolate())") -> tuple:
    """What goes to the helper for ``op`` on ``kernel``: ``(op, program, name, payload)``, the
    launch arguments of "run" and "bench" as ``(encoded, arrays)``; an ArgumentError for an
    argument that cannot cross (device memory, a tensor map).  "run" is ``(dims, shared, args,
    attrs)``, "bench" ``(dims, shared, args, options, attrs)``: ``attrs`` the launch's
    :class:`~..launch.attributes.Attributes` or None, checked again in the helper against its
    GPU."""
    if op in LAUNCHING:
        args = payload[2]
        for p, a in zip(kernel.params, args):
            if encoding.is_tensor_map(a):
                raise ArgumentError(f"{kernel.name}(): parameter '{p.name}': kernels now run "
                                    f"{where}, and a tensor map describes device memory of this "
                                    f"process")
            if library(a) in ("cupy", "torch", "cai"):
                raise ArgumentError(f"{kernel.name}(): parameter '{p.name}': kernels now run "
                                    f"{where}, which takes NumPy arrays and numbers, not "
                                    f"{type(a).__name__} (it lives on this machine's GPU)")
        arrays: dict = {}

        def array(a):
            arrays[f"arg{len(arrays)}"] = a
            return f"arg{len(arrays) - 1}"
        encoded = tuple(encoding.encode(a, array, plain=False) for a in args)
        payload = (*payload[:2], (encoded, arrays), *payload[3:])
    r = kernel.result
    program = Program.of(r, {kernel.name: Entry(kernel.symbol, kernel.params, kernel.printf)},
                         key=r.key)
    return (op, program, kernel.name, payload, settings.launch_timeout)


def _wait(proc, kernel, dims) -> None:
    """Wait for the helper's answer, polled: on Ctrl-C, or well past the launch time limit
    (the helper's own waits report a hang at the limit; this is the backstop), read where the
    helper's warps wait, end the helper (which frees the GPU) and raise KernelHangError."""
    fd = proc.stdout.fileno()
    launch = waiting.Launch(kernel, tuple(dims), time.monotonic(), proc.pid)
    try:
        while not select.select([fd], [], [], 0.05)[0]:
            limit = settings.launch_timeout
            if limit is not None and time.monotonic() - launch.started > 2 * limit + GRACE:
                raise _ended(launch, interrupted=False)
    except KeyboardInterrupt:
        raise _ended(launch, interrupted=True) from None


def _ended(launch, interrupted: bool) -> KernelHangError:
    exc = waiting.hung(launch, time.monotonic() - launch.started, interrupted=interrupted,
                       helper=True)
    stop()
    return exc


def call(kernel, op: str, *payload):
    """Run ``op`` ("run", "bench", "profile", "check", "attributes", "occupancy") for
    ``kernel`` in the helper process, or on the remote GPU under ``cuda_magic.remote()``."""
    target = driver._state.get("remote")
    if target is not None:
        return target.call(kernel, op, *payload)
    sent = message(kernel, op, *payload)
    with _lock:
        proc = _start()
        try:
            transport.send(proc.stdin.fileno(), sent)
            _wait(proc, kernel, dims_of(op, payload))
            reply = transport.recv(proc.stdout.fileno())
        except (EOFError, OSError) as exc:
            stop()
            raise CudaError(f"the helper process that launches kernels died ({exc!r}); the next "
                            f"launch starts a new one", "HELPER_DIED") from None

    def hung(hung_for):               # the helper's kernel still runs: read where, then end it
        return _ended(waiting.Launch(kernel, tuple(dims_of(op, payload)),
                                     time.monotonic() - hung_for, proc.pid), interrupted=False)
    return answer(reply, args_of(op, payload), hung, ended=stop,
                  where="in the helper process, which ended; the next launch starts a new one")


def dims_of(op: str, payload: tuple) -> tuple:
    return payload[0] if op in LAUNCHING else ()


def args_of(op: str, payload: tuple) -> tuple:
    return payload[2] if op in LAUNCHING else ()


def answer(reply: tuple, args, hung, ended, where: str):
    """The result of a helper's ``reply``: what it printed is printed here, the arrays it wrote
    are copied into ``args`` (only from a complete answer: an error writes nothing), an error
    is raised as its own class with ``where`` said (``hung(seconds)``: the KernelHangError of
    a hang; ``ended()``: after an error that ended the helper's CUDA)."""
    status, value = reply
    if status == "ok":
        result, out, arrays = value
        if out:
            sys.stdout.write(out)
            sys.stdout.flush()
        for i, a in arrays:
            args[i][...] = a
        return result
    name, message_, out, sticky, hung_for = value
    if out:
        sys.stdout.write(out)
    if name == "KernelHangError":
        raise hung(hung_for or 0.0)
    if sticky:
        ended()
        message_ += f" [{where}]"
    raise _ERRORS.get(name, RuntimeError)(message_)
