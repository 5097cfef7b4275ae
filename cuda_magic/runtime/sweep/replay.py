"""A job on the GPU, in the helper process: its arrays on the device, the launches replayed
once, the outputs read back (or judged there), each launch timed with the code of ``k.bench``.
"""

from __future__ import annotations

import os
import time
from typing import Mapping

from .. import bench, driver, peaks
from ..driver import api, check
from ..helper.encoding import decode
from ..kernel import Kernel
from ...correctness.judges import check as judge
from .jobs import Job, Outcome

__all__ = ["run_job", "DeviceArray", "label"]


class DeviceArray:
    """A device buffer shaped like a NumPy array, passed to kernels by pointer
    (``__cuda_array_interface__``): filled from the host or from another buffer on the GPU."""

    def __init__(self, shape, dtype, source=None):
        import numpy as np
        drv = api()
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.ptr = check(drv.cuMemAlloc(max(self.nbytes, 1)), "allocating a sweep buffer")
        if isinstance(source, DeviceArray):
            check(drv.cuMemcpyDtoD(self.ptr, source.ptr, self.nbytes), "copying a sweep buffer")
        elif source is not None and self.nbytes:
            host = np.ascontiguousarray(source)
            check(drv.cuMemcpyHtoD(self.ptr, host.ctypes.data, self.nbytes), "uploading an array")

    @classmethod
    def upload(cls, host) -> "DeviceArray":
        return cls(host.shape, host.dtype, host)

    @classmethod
    def copy_of(cls, other: "DeviceArray") -> "DeviceArray":
        return cls(other.shape, other.dtype, other)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (int(self.ptr), False),
                "strides": None, "version": 3}

    def get(self):
        import numpy as np
        host = np.empty(self.shape, self.dtype)
        if self.nbytes:
            check(api().cuMemcpyDtoH(host.ctypes.data, self.ptr, self.nbytes), "reading an output")
        return host

    def free(self) -> None:
        if self.ptr is not None:
            api().cuMemFree(self.ptr)
            self.ptr = None


def run_job(job: Job, gpu: str = "", shared: Mapping[str, DeviceArray] | None = None,
            reference: tuple | None = None) -> Outcome:
    """Replay ``job``'s launches once, then time each (in this process: the helper's side).

    The arrays live on the GPU for the whole job: fresh buffers copied on the GPU from
    ``shared`` (the arrays every job of the sweep uses, uploaded once) or uploaded from the
    job's own; the outputs are read back after the replay, and the timing reuses the buffers.
    With ``reference`` (``{name: Reference}``) holding every output, the outputs are compared
    here and only the verdict goes back; otherwise the outputs do."""
    started = time.perf_counter()
    program = job.program
    timings = []
    buffers: dict = {}
    try:
        kernels = {name: Kernel(name, e.params, program, e.symbol) for name, e
                   in program.kernels.items()}
        names = {a[1] for launch in job.launches for a in launch.args if a[0] == "array"}
        for name in sorted(names):
            own = job.arrays.get(name)
            buffers[name] = DeviceArray.upload(own) if own is not None else \
                DeviceArray.copy_of((shared or {})[name])
        for launch in job.launches:
            kernels[launch.kernel].launch_raw(tuple(launch.dims), launch.shared, 0,
                                              tuple(decode(a, buffers) for a in launch.args))
        driver.synchronize()
        outputs = {name: buffers[name].get() for name in job.outputs}
        if job.bench is not None:
            for launch in job.launches:
                args = [decode(a, buffers) for a in launch.args]
                timings.append(bench.measure(kernels[launch.kernel], tuple(launch.dims), args,
                                             launch.shared, 0, **job.bench))
    except Exception as exc:
        name = getattr(exc, "name", "") or type(exc).__name__
        message = str(exc).replace(getattr(driver, "LOST_NOTE", "\0"), "")
        status = "fault" if driver.lost() is not None else "error"
        return Outcome(job.index, status, message[:2000], name, gpu=gpu,
                       seconds=time.perf_counter() - started)
    finally:
        if driver.lost() is None:
            for buf in buffers.values():
                buf.free()
    seconds = time.perf_counter() - started
    if reference is not None and set(job.outputs) <= set(reference):
        return Outcome(job.index, "ok", timings=tuple(timings), gpu=gpu, seconds=seconds,
                       checked=True, wrong=judge(outputs, reference))
    return Outcome(job.index, "ok", outputs=outputs, timings=tuple(timings), gpu=gpu,
                   seconds=seconds)


def label() -> str:
    """This helper's GPU, as the sweep's table names it: "GPU 1 (NVIDIA H200)"."""
    name = peaks.device_info().name
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return f"GPU {visible or 0} ({name})"
