"""The worker's helper process (:mod:`.worker`): ``python3 -m cuda_magic.runtime.helper.main``.

It reads ``(op, program, name, payload, launch time limit)`` messages (:func:`.worker.message`) from stdin and
answers each on stdout, over :mod:`.helper.transport`: ``("ok", (result, printed, arrays))``
(the NumPy arrays the kernel may have written, by argument index) or ``("err", (error type,
message, printed, sticky))``, sticky when the error ended CUDA here (the notebook then ends
this process).  It makes one Kernel per binary and kernel, over the
:class:`~.helper.program.Program` it was sent.  The ops: "run", "bench", "attributes",
"occupancy", "profile" and "check" (the tools run from here, for a remote GPU),
"timeline" (:func:`..measure.timeline.recording.record`), and
"devices" (no kernel: :func:`..driver.devices`).  The same process serves ``isolate()`` in
the notebook's host and a remote GPU on a Dask worker (:mod:`..remote.host`).
"""

from __future__ import annotations

import io
import sys

from .. import driver
from ... import settings
from ..hang import gdb, waiting
from . import encoding, transport
from ..launch.kernel import Kernel

__all__ = ["serve", "main"]


def serve(inp: int, out: int) -> None:
    """Answer messages from ``inp`` on ``out`` until the input ends."""
    kernels: dict = {}
    while True:
        try:
            op, program, name, payload, limit = transport.recv(inp)
        except (EOFError, OSError):
            return
        settings.put("launch_timeout", limit)    # the notebook's launch time limit
        printed, saved = io.StringIO(), sys.stdout
        sys.stdout = printed
        try:
            if op == "devices":                    # no kernel: what GPUs this process sees
                sys.stdout = saved
                transport.send(out, ("ok", (driver.devices(), printed.getvalue(), [])))
                continue
            k = kernels.get((program.key, name))
            if k is None:
                entry = program.kernels[name]
                k = kernels[(program.key, name)] = Kernel(name, entry.params, program, entry.symbol,
                                                          entry.printf)
            arrays = []
            if op in ("run", "bench", "profile", "check", "timeline"):
                encoded, sent = payload[2]
                args = tuple(encoding.decode(a, sent) for a in encoded)
            if op == "run":
                dims, shared, _, attrs = payload
                if attrs is None:
                    k.launch_raw(dims, shared, 0, args)
                else:                                  # checked again here, on this GPU
                    k.launch(dims[:3], dims[3:], args, shared, **attrs.keywords())
                arrays = _written(k, args)
                result = None
            elif op == "bench":
                dims, shared, _, options, attrs = payload     # options: bench.options(...)
                result = k.bench(dims[:3], dims[3:], *args, shared_mem=shared, **options,
                                 **(attrs.keywords() if attrs is not None else {}))
            elif op == "timeline":                    # the instrumented build, recorded here
                from ..measure.timeline import recording
                dims, shared, _, options, attrs = payload
                result = recording.record(k, program, dims, shared, attrs, args,
                                          options["capacity"], options["given"])
                arrays = _written(k, args)
            elif op in ("profile", "check"):          # under ncu or compute-sanitizer, here
                from ..nsight import run as tools
                dims, shared, _, options, attrs = payload
                result = getattr(tools, op)(k, dims, shared, args, attrs=attrs, **options)
            elif op == "occupancy":
                result = k.occupancy(*payload)
            else:
                result = k.attributes
            sys.stdout = saved
            transport.send(out, ("ok", (result, printed.getvalue(), arrays)))
        except BaseException as exc:
            sys.stdout = saved
            hang = type(exc).__name__ == "KernelHangError"
            transport.send(out, ("err", (type(exc).__name__, str(exc), printed.getvalue(),
                                         driver.lost() is not None or hang,
                                         getattr(exc, "seconds", 0.0) if hang else None)))


def _written(k, args) -> list:
    """The NumPy arrays a launch may have written, by argument index (sent back)."""
    import numpy as np
    return [(i, a) for i, (p, a) in enumerate(zip(k.params, args))
            if isinstance(a, np.ndarray) and (p.pointer or p.reference) and not p.const]


def main() -> int:
    waiting._state["helper"] = True     # a hang here ends this process (the GPU is freed)
    gdb.allow_parent()                  # the notebook's cuda-gdb may attach to this process
    serve(*transport.serving())
    return 0


if __name__ == "__main__":
    # run as the package's module, not as __main__, so what it pickles names cuda_magic's classes
    from cuda_magic.runtime.helper import main as _worker_main
    sys.exit(_worker_main.main())
