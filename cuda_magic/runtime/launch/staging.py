"""NumPy arrays for a launch: copied to freshly allocated device memory once every argument
passed its check, and after the launch copied back (non-const pointees) and freed."""

from __future__ import annotations

from ...errors import KernelHangError
from ..driver import api, check
from ..hang import waiting

__all__ = ["stage", "release"]


def stage(staged: list, args: list, params) -> None:
    """Allocate and fill the device copy of each staged NumPy array; its pointer goes into
    ``args`` at the parameter's place."""
    drv = api()
    for entry in staged:
        _, a, _, i = entry
        name = params[i].name
        entry[0] = int(check(drv.cuMemAlloc(a.nbytes), f"allocating {a.nbytes} bytes for '{name}'"))
        check(drv.cuMemcpyHtoD(entry[0], a.ctypes.data, a.nbytes), f"copying '{name}' to the GPU")
        args[i] = entry[0]


def release(staged: list, stream, copy_back: bool, launch=None) -> None:
    """Copy written NumPy arrays back (after the stream finished: a polled wait, see
    :mod:`.hang.waiting`, for ``launch``) and free their device memory.  After a hang the
    memory is left as it is: freeing it would wait for the kernel."""
    drv = api()
    if copy_back:
        try:
            waiting.stream(stream, launch)
        except KernelHangError:
            raise
        except BaseException:
            _free(drv, staged)
            raise
    try:
        if copy_back:
            for ptr, a, writes, _ in staged:
                if writes and ptr:
                    check(drv.cuMemcpyDtoH(a.ctypes.data, ptr, a.nbytes), "copying results back")
    finally:
        _free(drv, staged)


def _free(drv, staged: list) -> None:
    for ptr, _, _, _ in staged:
        if ptr:
            drv.cuMemFree(ptr)
