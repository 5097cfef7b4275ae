"""A job on the GPU, in the helper process: its arrays on the device, the launches replayed
once, the outputs read back (or judged there), each launch timed with the code of ``k.bench``.
"""

from __future__ import annotations

import os
import time
from typing import Mapping

from ..measure import bench, peaks
from .. import driver
from ..device_array import DeviceArray
from ..helper.encoding import decode
from ..launch.kernel import Kernel
from ...correctness.reference import first_difference
from .jobs import Job, Outcome

__all__ = ["run_job", "label"]


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
                       checked=True, wrong=first_difference(outputs, reference))
    return Outcome(job.index, "ok", outputs=outputs, timings=tuple(timings), gpu=gpu,
                   seconds=seconds)


def label() -> str:
    """This helper's GPU, as the sweep's table names it: "GPU 1 (NVIDIA H200)"."""
    name = peaks.device_info().name
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return f"GPU {visible or 0} ({name})"
