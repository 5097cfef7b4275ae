"""``k.timeline[grid, block](*args)``: one launch of the instrumented build, its events read back.

1. The instrumented build (:mod:`.build`): the cell again with ``-DCUDA_MAGIC_TIMELINE``.
2. The buffer: per warp ``capacity`` 16-byte slots and a count (:mod:`.events`), zeroed counts;
   ``capacity`` defaults to :data:`CAPACITY`, cut to fit :data:`BUDGET` bytes (said in the
   notes); ``capacity=`` sets it (an error names it when the GPU cannot hold it).
3. The header's ``cm_timeline`` (a ``__constant__`` struct: the buffer's addresses, the
   capacity, a random nonce for the shared-memory counters' tags, the layout's version) is
   written with ``cuLibraryGetGlobal`` + a copy before the launch, not passed as a parameter.
4. One launch as ``k.launch`` makes it (cluster, cooperative, PDL attributes; NumPy arguments
   copied there and back, CuPy/PyTorch by pointer) on the legacy default stream, a polled wait
   (Ctrl-C and the launch time limit work as for any launch), the buffers read back and decoded.
5. Once per process and GPU, the probe kernel of the same build measures ``%globaltimer``'s
   tick and checks it never runs backwards against ``clock64`` on any SM.
"""

from __future__ import annotations

import secrets
import struct
import threading

from ....errors import ArgumentError, CudaError, KernelHangError, quote
from ... import driver
from ...driver import api, check
from ...hang import waiting
from ...launch.attributes import Attributes, prepared
from ...launch.params import Param
from .build import instrumented, names_in
from .events import SLOT_BYTES, Timeline, decode

__all__ = ["timeline", "record", "CAPACITY", "BUDGET", "MAX_CAPACITY", "STATE", "PROBE", "VERSION",
           "fit", "resolution", "state_address", "set_state", "tick_of", "sm_count"]

CAPACITY = 256             # events per warp by default
BUDGET = 256 << 20         # bytes the default capacity may take; cut to fit
MAX_CAPACITY = 1 << 24     # events per warp at most (the counts are 32-bit)
STATE = "cm_timeline"      # the header's __constant__ struct
PROBE = "cm_timeline_probe"
VERSION = 1                # CM_TIMELINE_VERSION: the layout the header writes
SAMPLES = 256              # probe samples per SM
_STATE_BYTES = 32
_LOCK = threading.Lock()   # one timeline launch at a time: the state is per build
_RESOLUTION: dict = {}     # device -> (tick ns or None, notes)


def _capacity(value, name: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_CAPACITY:
        raise ArgumentError(f"{name}.timeline: capacity={quote(value, 40)}: events per warp, "
                            f"an int from 1 to {MAX_CAPACITY:,} (default {CAPACITY}, cut to fit "
                            f"{BUDGET >> 20} MiB)")
    return value


def fit(capacity: int | None, warps: int, name: str) -> tuple[int, str]:
    """(slots per warp, a note or "") for ``warps`` warps: ``capacity`` as given, or the default
    cut to fit :data:`BUDGET`."""
    if capacity is not None:
        return capacity, ""
    most = BUDGET // (warps * SLOT_BYTES)
    if most < 1:
        raise ArgumentError(f"{name}.timeline: {warps:,} warps need {warps * SLOT_BYTES:,} bytes "
                            f"for one event each, more than the {BUDGET >> 20} MiB a timeline "
                            f"takes by default: give capacity= (events per warp) to allocate it "
                            f"anyway, or record a smaller grid")
    if most >= CAPACITY:
        return CAPACITY, ""
    return most, (f"capacity cut to {most} events per warp to fit {BUDGET >> 20} MiB "
                  f"({warps:,} warps); capacity= sets it")


def timeline(kernel, grid, block, *args, capacity: int | None = None, shared_mem: int = 0,
             cluster=None, cooperative: bool = False, pdl: bool = False) -> Timeline:
    """Launch the kernel once with its cell's marks recording; returns a :class:`Timeline`.

    The cell marks what to time (``#include <cuda_magic/timeline.h>``;
    ``CM_RANGE_BEGIN("name")`` ... ``CM_RANGE_END("name")``, ``CM_MARK("name")``: nothing at
    all in an ordinary build).  This builds the cell again with ``-DCUDA_MAGIC_TIMELINE``
    (cached; the Timeline's ``argv``), launches that build once with these arguments, as
    ``k.launch`` would (``shared_mem``, ``cluster``, ``cooperative``, ``pdl``; NumPy arrays
    copied there and back, CuPy/PyTorch by pointer), waits for it and reads the events: per
    warp, recorded by its lowest active lane, the name, block, warp, SM and %globaltimer ns.
    ``capacity``: events kept per warp (default 256, cut to fit 256 MiB); a warp's events
    past it are counted in ``lost``.  ``k.timeline[grid, block](*args, capacity=...)`` is the
    same call.  See docs/timeline.md.
    """
    name = kernel.name
    wanted = _capacity(capacity, name)
    _here(name)
    built = instrumented(kernel.result, name)
    ik = type(kernel)(name, kernel.params, built, kernel.symbol or built.symbol(name),
                      kernel.printf)
    ik.unavailable = kernel.unavailable
    dims, shared, attrs = prepared(ik, grid, block, shared_mem, Attributes.of(
        name, cluster=cluster, cooperative=cooperative, pdl=pdl))
    warps = dims[0] * dims[1] * dims[2] * ((dims[3] * dims[4] * dims[5] + 31) // 32)
    slots_per_warp, note = fit(wanted, warps, name)
    if driver.remote() is not None:     # recorded on the remote GPU, decoded here
        from ...helper import worker
        counts, slots, tick, probe_notes, sms = worker.call(
            ik, "timeline", dims, shared, tuple(args),
            {"capacity": slots_per_warp, "given": wanted is not None}, attrs)
        probe_notes = (*probe_notes, f"recorded on {driver.remote().gpu().label} "
                                     f"(cuda_magic.remote)")
    else:
        counts, slots, tick, probe_notes, sms = record(ik, built, dims, shared, attrs,
                                                       tuple(args), slots_per_warp,
                                                       wanted is not None)
    return decode(slots, counts, kernel=name, grid=dims[:3], block=dims[3:],
                  capacity=slots_per_warp, names=names_in(built), argv=built.argv,
                  resolution_ns=tick, sm_count=sms, notes=[n for n in (note,) if n]
                  + list(probe_notes))


def record(ik, built, dims, shared, attrs, args, capacity: int, given: bool) -> tuple:
    """The GPU's part of a timeline, in the process that launches (this one, or the remote
    GPU's helper: ``built`` is then the Program it was sent): one launch of the instrumented
    kernel ``ik`` recording ``capacity`` events per warp; ``(counts, slots, tick, notes,
    sm_count)``, decoded by :func:`timeline`."""
    warps = dims[0] * dims[1] * dims[2] * ((dims[3] * dims[4] * dims[5] + 31) // 32)
    ik.load()
    lib = driver.load(built.key, built.binary, built.format, built.arch)
    with _LOCK:
        counts, slots = _run(ik, lib, dims, shared, attrs, tuple(args), warps, capacity, given)
    tick, probe_notes = resolution(ik, built)
    return counts, slots, tick, tuple(probe_notes), sm_count()


def _here(name: str) -> None:
    """Timelines record in this process: not after a fault, not under ``isolate()``."""
    if driver.lost() is not None:
        raise CudaError(f"{name}.timeline: CUDA in this process ended with a fault "
                        f"({driver.lost()}); a timeline records in this process: restart the "
                        f"Python kernel", "CUDA_ERROR_LAUNCH_FAILED")
    if driver.remote() is not None:
        return                          # recorded by the remote GPU's helper (record)
    if driver.elsewhere():
        raise ArgumentError(f"{name}.timeline records in this process, and cuda_magic.isolate() "
                            f"is on: isolate(False) first")


def state_address(lib, name: str) -> int:
    """The device address of the header's ``cm_timeline`` in loaded library ``lib``."""
    where, size = check(api().cuLibraryGetGlobal(lib.handle, STATE.encode()),
                        f"cuLibraryGetGlobal({STATE!r})")
    if int(size) != _STATE_BYTES:
        raise CudaError(f"{name}.timeline: the build's {STATE} is {int(size)} bytes, not "
                        f"{_STATE_BYTES}: a <cuda_magic/timeline.h> of another version?",
                        "CUDA_ERROR_INVALID_VALUE")
    return int(where)


def set_state(where: int, slots: int, counts: int, capacity: int) -> None:
    """Point the header's state at the buffers, with a fresh nonce: a launch's shared-memory
    counters then never take another launch's for their own."""
    state = struct.pack("<QQQII", slots, counts, secrets.randbits(64), capacity, VERSION)
    check(api().cuMemcpyHtoD(where, state, len(state)), f"setting {STATE}")


def _run(ik, lib, dims, shared, attrs, args, warps, capacity, given):
    """Set the header's state, launch once, wait; (counts, slots) as arrays."""
    import numpy as np
    drv = api()
    where = state_address(lib, ik.name)
    count_bytes, slot_bytes = warps * 4, warps * capacity * SLOT_BYTES
    counts_ptr = _alloc(drv, count_bytes, ik.name, capacity, warps, given)
    hung = False
    try:
        slots_ptr = _alloc(drv, slot_bytes, ik.name, capacity, warps, given)
        try:
            check(drv.cuMemsetD8(counts_ptr, 0, count_bytes), "zeroing the timeline's counts")
            set_state(where, slots_ptr, counts_ptr, capacity)
            ik.launch_raw(dims, shared, 0, args, attrs)
            waiting.stream(0, waiting.Launch.of(ik, dims), f"running {ik.name} for its timeline")
            counts = np.empty(warps, np.uint32)
            slots = np.empty(slot_bytes, np.uint8)
            check(drv.cuMemcpyDtoH(counts.ctypes.data, counts_ptr, count_bytes),
                  "reading the timeline's counts")
            check(drv.cuMemcpyDtoH(slots.ctypes.data, slots_ptr, slot_bytes),
                  "reading the timeline's events")
            return counts, slots
        except KernelHangError:
            hung = True                 # the kernel still runs: freeing would wait for it
            raise
        finally:
            if not hung:
                drv.cuMemFree(slots_ptr)
    finally:
        if not hung:
            drv.cuMemFree(counts_ptr)


def _alloc(drv, nbytes: int, name: str, capacity: int, warps: int, given: bool) -> int:
    err, ptr = drv.cuMemAlloc(nbytes)
    if err != 0:
        what = f"capacity={capacity}" if given else f"the default capacity ({capacity})"
        try:
            check((err,), "cuMemAlloc")
        except CudaError as exc:
            raise ArgumentError(f"{name}.timeline: {what} x {warps:,} warps x {SLOT_BYTES} bytes "
                                f"= {warps * capacity * SLOT_BYTES:,} bytes could not be "
                                f"allocated ({exc.name}): a smaller capacity=") from None
    return int(ptr)


def sm_count() -> int | None:
    """The GPU's SMs (None where the driver does not say)."""
    try:
        drv = api()
        return int(check(drv.cuDeviceGetAttribute(
            drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, driver.device()),
            "cuDeviceGetAttribute"))
    except Exception:       # a figure for the views, not worth failing the timeline over
        return None


def resolution(ik, built) -> tuple[int | None, list[str]]:
    """``%globaltimer``'s tick in ns on this GPU (the smallest step the probe saw) and notes
    (an SM where it ran backwards against ``clock64``), measured once per process and GPU."""
    key = int(driver.device())
    if key not in _RESOLUTION:
        _RESOLUTION[key] = _probe(ik, built)
    tick, notes = _RESOLUTION[key]
    return tick, list(notes)


def _probe(ik, built) -> tuple[int | None, tuple[str, ...]]:
    import numpy as np
    blocks = sm_count() or 1
    params = (Param("out", "unsigned long long", 1), Param("samples", "unsigned int"))
    probe = type(ik)(PROBE, params, built, PROBE)
    out = np.zeros(blocks * (1 + 2 * SAMPLES), np.uint64)
    try:
        probe[blocks, 32](out, SAMPLES)
    except CudaError as exc:
        return None, (f"%globaltimer's resolution unknown: its probe failed ({exc.name})",)
    return tick_of(out.reshape(blocks, 1 + 2 * SAMPLES))


def tick_of(samples) -> tuple[int | None, tuple[str, ...]]:
    """(the smallest positive %globaltimer step, notes) from the probe's rows: per block its
    SM, then (globaltimer, clock64) pairs taken back to back."""
    import numpy as np
    sm = samples[:, 0]
    timer = samples[:, 1::2].astype(np.int64)
    clock = samples[:, 2::2].astype(np.int64)
    dt, dc = np.diff(timer, axis=1), np.diff(clock, axis=1)
    notes = []
    back = sorted({int(s) for s, bad in zip(sm, ((dt < 0) & (dc > 0)).any(axis=1)) if bad})
    if back:
        notes.append(f"%globaltimer ran backwards against clock64 on SM {', '.join(map(str, back[:8]))}"
                     f": order events of those SMs with care")
    steps = dt[dt > 0]
    if not steps.size:
        return None, tuple(notes + ["%globaltimer did not move during the probe: resolution "
                                    "unknown"])
    return int(steps.min()), tuple(notes)
