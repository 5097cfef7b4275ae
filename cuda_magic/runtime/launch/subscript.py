"""The subscript form ``k[grid, block](*args)``: the :class:`Launcher` a kernel caches per launch
configuration, whose ``__call__`` becomes the launch plan the kernel's Packer wrote once the kernel
is loaded (the hot path of repeat launches), and ``k[config](*args)`` with a cuda.core
``LaunchConfig`` (:func:`configured`)."""

from __future__ import annotations

import time

from ... import settings
from .. import driver
from ..driver import api
from ..hang import watchdog

__all__ = ["Launcher", "configured", "fast_launcher"]


def configured(kernel, given: dict, *args) -> None:
    """``k[config](*args)`` with a cuda.core LaunchConfig: ``k.launch`` with its keywords."""
    kernel.launch(args=args, **given)


_STATE = driver._state     # "lost", "isolated": read per launch (driver.elsewhere(), inlined)


class Launcher:
    """``k[grid, block]``: one launch configuration, cached by the kernel (``Kernel._launchers``).

    Until the kernel is loaded it launches the full way (``Kernel.launch_raw``).  Then it becomes an
    instance of the kernel's launcher class (:func:`fast_launcher`), whose ``__call__`` is the
    launch plan the kernel's Packer wrote: the quick checks of each argument, the values packed
    into the kernel's one parameter buffer, and cuLaunchKernel called with ``argv``, prepared
    once (the CUfunction, dims, shared bytes, stream, the buffer's address): cuda.bindings', or
    CuPy's ``launchKernel`` on plain ints where CuPy is loaded (``driver.int_launch``).  Arguments the
    plan has not seen (a first launch, another dtype, NumPy arrays), launches in the helper
    process, printf kernels and errors go the full way, which raises the errors.
    """

    __slots__ = ("kernel", "dims", "shared", "stream", "argv")

    def __init__(self, kernel, dims, shared, stream):
        self.kernel, self.dims, self.shared, self.stream = kernel, dims, shared, stream
        self.argv = None
        self._prepare()

    def _prepare(self) -> None:
        k = self.kernel
        b = k._bound
        if b is None or k.printf or self.shared > k._max_dynamic:
            return
        fast = k._fast
        if fast is None:    # written at the first launch (CuPy may be imported by then)
            fast = k._fast = fast_launcher(b)
        cls, handle, ints = fast
        if ints:            # CuPy's launchKernel: plain ints
            self.argv = (int(handle), *self.dims, self.shared, int(self.stream), b[2].address, 0)
        else:
            drv = api()
            stream = drv.CUstream(self.stream) if hasattr(drv, "CUstream") else self.stream
            self.argv = (handle, *self.dims, self.shared, stream, b[2].address, 0)
        self.__class__ = cls

    def __call__(self, *args) -> None:
        self.kernel.launch_raw(self.dims, self.shared, self.stream, args)
        if self.argv is None:
            self._prepare()

    def slow(self, args) -> None:
        self.kernel.launch_raw(self.dims, self.shared, self.stream, args)

    def failed(self) -> None:
        """The plan's launch failed: again the full way (cuLaunchKernel with the CUkernel, in the
        current context, as the first launch), which raises the error or launches where the
        plan's could not (a thread with no context yet)."""
        k = self.kernel
        b = k._bound
        k._launch(b[1], self.dims, self.shared, self.stream, b[2].address, False)


def fast_launcher(bound) -> tuple:
    """(the kernel's launcher class, with its launch plan as ``__call__``; the handle to launch;
    whether the plan calls CuPy's launchKernel with ints)."""
    _, handle, packer, launch = bound
    cls = type("Launcher", (Launcher,), {"__slots__": (), "__doc__": Launcher.__doc__})
    # the plan's last call (Packer.launcher_call), settings.plan_launch: "auto" CuPy's
    # launchKernel where CuPy is loaded already (driver.int_launch), "bindings" cuda.bindings'
    ints = driver.int_launch() if settings.plan_launch == "auto" else None
    packer.scope.update(WATCH=watchdog.WATCH, monotonic=time.monotonic)   # hangs: watched
    packer.launcher_call(launch, _STATE, lambda call: setattr(cls, "__call__", call), ints)
    get = getattr(api(), "cuKernelGetFunction", None)   # in the current context: a little faster
    if get is not None:
        err, func = get(handle)
        if err == 0:
            handle = func
    return cls, handle, ints is not None
