"""Launching in a helper process.

After a kernel fault CUDA is gone for the rest of this process (see
``driver``), so later launches go to a helper process with a CUDA context of
its own; a fault there ends only the helper, and the next launch starts a new
one.  ``isolate()`` sends launches there from the start, for debugging a
kernel that may fault without ever losing the notebook's CUDA.  Arguments
cross by pickling: NumPy arrays and numbers only (device memory cannot).
"""

from __future__ import annotations

import io
import sys
import threading

from . import driver
from .args import ArgumentError, ArgumentRangeError
from .driver import CudaError, NoGPUError

__all__ = ["isolate", "call", "stop"]

_lock = threading.Lock()
_state: dict = {"proc": None, "conn": None}
_ERRORS = {c.__name__: c for c in (ArgumentError, ArgumentRangeError, CudaError, NoGPUError,
                                   TypeError, ValueError, OverflowError)}


def isolate(on: bool = True) -> None:
    """Launch every kernel in a helper process (``on=False``: in this process again, unless lost)."""
    driver._state["isolated"] = bool(on)
    if not on:
        stop()


def stop() -> None:
    """End the helper process, if there is one."""
    proc, conn = _state["proc"], _state["conn"]
    _state["proc"] = _state["conn"] = None
    if conn is not None:
        conn.close()
    if proc is not None:
        proc.terminate()
        proc.join(5)


def _start():
    if _state["proc"] is None or not _state["proc"].is_alive():
        import multiprocessing
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve, args=(child,), daemon=True, name="cuda-magic-launcher")
        proc.start()
        child.close()
        _state["proc"], _state["conn"] = proc, parent
    return _state["conn"]


class _Binary:
    """What a Kernel needs of a CompilationResult, to cross the process boundary."""

    def __init__(self, key, binary, format, arch, source=""):
        self.key, self.binary, self.format, self.arch = key, binary, format, arch
        self.source = source


def call(kernel, op: str, *payload):
    """Run ``op`` ("run", "bench", "attributes", "occupancy") for ``kernel`` in the helper
    process."""
    args = payload[2] if op in ("run", "bench") else ()
    for p, a in zip(kernel.params, args):
        if hasattr(a, "__cuda_array_interface__") or type(a).__module__.split(".")[0] == "torch":
            raise ArgumentError(f"{kernel.name}(): parameter '{p.name}': kernels now run in a helper "
                                f"process (after a fault, or isolate()), which takes NumPy arrays "
                                f"and numbers, not {type(a).__name__}")
    r = kernel.result
    spec = (kernel.name, kernel.params, _Binary(r.key, r.binary, r.format, r.arch,
                                                getattr(r, "source", "")),
            kernel.symbol, kernel.printf)
    with _lock:
        conn = _start()
        try:
            conn.send((op, spec, payload))
            status, value = conn.recv()
        except (EOFError, OSError) as exc:
            stop()
            raise CudaError(f"the helper process that launches kernels died ({exc!r}); the next "
                            f"launch starts a new one", "HELPER_DIED") from None
    if status == "ok":
        result, out, arrays = value
        if out:
            sys.stdout.write(out)
            sys.stdout.flush()
        for i, a in arrays:
            args[i][...] = a
        return result
    name, message, out, sticky = value
    if out:
        sys.stdout.write(out)
    if sticky:
        stop()
        message += (" [in the helper process, which ended; the next launch starts a new one]")
    raise _ERRORS.get(name, RuntimeError)(message)


def _serve(conn) -> None:  # the helper process
    import numpy as np

    from .kernel import Kernel
    kernels: dict = {}
    while True:
        try:
            op, spec, payload = conn.recv()
        except (EOFError, OSError):
            return
        out, saved = io.StringIO(), sys.stdout
        sys.stdout = out
        try:
            name, params, binary, symbol, printf = spec
            k = kernels.get((binary.key, name))
            if k is None:
                k = kernels[(binary.key, name)] = Kernel(name, params, binary, symbol, printf)
            arrays = []
            if op == "run":
                dims, shared, args = payload
                k._run(dims, shared, 0, args)
                arrays = [(i, a) for i, (p, a) in enumerate(zip(params, args))
                          if isinstance(a, np.ndarray) and (p.pointer or p.reference) and not p.const]
                result = None
            elif op == "bench":
                dims, shared, args, options = payload     # options: bench.options(...)
                result = k.bench(dims[:3], dims[3:], *args, shared_mem=shared, **options)
            elif op == "occupancy":
                result = k.occupancy(*payload)
            else:
                result = k.attributes
            sys.stdout = saved
            conn.send(("ok", (result, out.getvalue(), arrays)))
        except BaseException as exc:
            sys.stdout = saved
            conn.send(("err", (type(exc).__name__, str(exc), out.getvalue(),
                               driver.lost() is not None)))
