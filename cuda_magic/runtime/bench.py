"""Timing a kernel: warmup, L2 flush, CUDA graphs, robust statistics, peaks, clocks, history.

``Kernel.bench(...)`` calls :func:`measure` and returns a :class:`Timing`; every Timing is
also kept for the session (:func:`record`), per kernel name, and :func:`history` shows how a
kernel's time moved across edits.  This module holds the data; how a Timing or a History
looks is in ``cuda_magic.display.timing`` (``cuda_magic.view(t)``, ``show(t)``, and what a
notebook shows once the extension is loaded).  Nothing here
imports NumPy, and nothing touches CUDA before ``measure`` or ``device_info`` is called.
"""

from __future__ import annotations

import collections
import ctypes
import dataclasses
import hashlib
import math
import threading
import time
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, Mapping, Sequence

from ..errors import Error, quote
from . import driver
from .args import release
from .driver import NoGPUError, api, check

__all__ = ["Timing", "BenchResult", "BenchError", "History", "HistoryError", "Device", "Clocks",
           "device_info", "measure", "options", "record", "history", "clear_history",
           "median_ci", "quartiles", "FMA_PER_CLOCK", "UNSURE", "CI_LEVEL"]


class BenchError(Error, ValueError):
    """A ``bench`` setting out of range (``repeat``, ``warmup``, ``graph``, ``nbytes``, ...)."""


class HistoryError(Error, KeyError):
    """``history(name)`` for a kernel that was not benched in this session."""


# ---- statistics -------------------------------------------------------------------------------

CI_LEVEL = 0.95
_EXACT_CI_UP_TO = 2000     # samples: exact binomial sums up to here, the normal approximation above


def quartiles(xs: Sequence[float]) -> tuple[float, float, float]:
    """(q1, median, q3) of sorted ``xs``, interpolated linearly between order statistics
    (NumPy's default, ``statistics.quantiles(method="inclusive")``)."""
    def q(p: float) -> float:
        h = (len(xs) - 1) * p
        lo = math.floor(h)
        hi = min(lo + 1, len(xs) - 1)
        return xs[lo] + (h - lo) * (xs[hi] - xs[lo])
    return q(0.25), q(0.5), q(0.75)


def median_ci(xs: Sequence[float], level: float = CI_LEVEL) -> tuple[float, float, float]:
    """A distribution-free confidence interval for the median of sorted ``xs``:
    ``(low, high, coverage)``.

    The number of samples below the true median is Binomial(n, 1/2) whatever the
    distribution of the times, so ``[x(k), x(n+1-k)]`` (1-based order statistics) covers it
    with probability ``1 - 2 P(B <= k-1)``.  ``k`` is the largest rank that keeps the
    coverage at least ``level``; ``coverage`` is what that interval really has (e.g. 97.3% for
    21 samples: ranks 6 and 16).  Exact sums up to 2,000 samples, the normal approximation
    above.  Fewer than 6 samples cannot reach 95%: the interval is then ``[min, max]`` and its
    coverage says how much less it is.
    """
    n = len(xs)
    if n == 0:
        raise BenchError("no samples")
    tail = Fraction(1 - level).limit_denominator(10 ** 6) / 2          # alpha / 2
    if n <= _EXACT_CI_UP_TO:
        total, below, k, c = 2 ** n, 0, 0, 1          # c = comb(n, j)
        for j in range(n // 2 + 1):                   # P(B <= j) = (below + c) / 2^n
            if below + c > tail * total:
                break
            below, k = below + c, j + 1
            c = c * (n - j) // (j + 1)
        if k == 0:                                    # n < 6 at 95%: the widest interval
            return xs[0], xs[-1], 1 - 2 / 2 ** n
        return xs[k - 1], xs[n - k], 1 - 2 * below / total
    z = _z(float(1 - tail))
    k = max(1, math.floor((n - z * math.sqrt(n)) / 2))
    cover = 1 - 2 * _phi((k - 0.5 - n / 2) / (math.sqrt(n) / 2))
    return xs[k - 1], xs[n - k], cover


def _phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def _z(p: float) -> float:
    """The standard normal quantile, by bisection (p in (0.5, 1))."""
    lo, hi = 0.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _phi(mid) < p else (lo, mid)
    return (lo + hi) / 2


# ---- peaks ------------------------------------------------------------------------------------
#
# FMA results per clock per SM, from NVIDIA's CUDA C++ Programming Guide, "Arithmetic
# Instructions", table "Throughput of Native Arithmetic Instructions (operations per clock
# cycle per multiprocessor)"; an FMA is 2 FLOP.  (major, minor) entries first, then
# (major, None) for a whole family.  FP16 is the non-tensor rate of packed half2 FMA, counted
# per half result.  UNSURE marks entries not read from that table: checked against NVIDIA's
# whitepaper figures instead (A100: 78 TFLOP/s FP16 = 4x FP32; H100 SXM: 134 = 2x FP32 at 256
# per SM; GA102 and AD102: FP16 = FP32, 128 per SM; the guide's FP16 column says 256 for 8.6),
# or taken from the family rule.  Tensor cores are not counted.
FMA_PER_CLOCK: dict[str, dict[tuple, int]] = {
    "float32": {(7, None): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128,
                (10, None): 128, (12, None): 128},
    "float64": {(7, 0): 32, (7, 2): 32, (7, 5): 2, (8, 0): 32, (8, 6): 2, (8, 7): 2, (8, 9): 2,
                (9, 0): 64, (10, 0): 64, (12, None): 2},
    "float16": {(7, None): 128, (8, 0): 256, (8, 6): 128, (8, 7): 256, (8, 9): 128, (9, 0): 256,
                (10, 0): 256, (12, None): 128},
}
UNSURE: set[tuple[str, tuple]] = {("float64", (7, 2)), ("float16", (8, 6)), ("float16", (8, 7)),
                                  ("float16", (8, 9)), ("float16", (10, 0)),
                                  ("float16", (12, None))}

_DTYPES = {"float32": "float32", "fp32": "float32", "f32": "float32", "float": "float32",
           "single": "float32", "float64": "float64", "fp64": "float64", "f64": "float64",
           "double": "float64", "float16": "float16", "fp16": "float16", "f16": "float16",
           "half": "float16"}


def _dtype(dtype) -> str:
    """'float32', 'float64' or 'float16' from a name or a NumPy/PyTorch/CuPy dtype."""
    name = dtype if isinstance(dtype, str) else \
        getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or str(dtype)
    name = str(name).lower().removeprefix("torch.")
    if name not in _DTYPES:
        raise BenchError(f"dtype={quote(dtype)}: the FLOP type for the peak, one of float32, "
                         f"float64, float16")
    return _DTYPES[name]


@dataclass(frozen=True)
class Device:
    """What the peaks come from, as the driver reports it (``CU_DEVICE_ATTRIBUTE_*``)."""

    name: str
    cc: tuple[int, int]            # compute capability
    sms: int                       # MULTIPROCESSOR_COUNT
    sm_clock_khz: int              # CLOCK_RATE: the maximum SM clock
    mem_clock_khz: int             # MEMORY_CLOCK_RATE
    bus_width_bits: int            # GLOBAL_MEMORY_BUS_WIDTH
    l2_bytes: int                  # L2_CACHE_SIZE

    ATTRIBUTES = {"cc_major": "COMPUTE_CAPABILITY_MAJOR", "cc_minor": "COMPUTE_CAPABILITY_MINOR",
                  "sms": "MULTIPROCESSOR_COUNT", "sm_clock_khz": "CLOCK_RATE",
                  "mem_clock_khz": "MEMORY_CLOCK_RATE", "bus_width_bits": "GLOBAL_MEMORY_BUS_WIDTH",
                  "l2_bytes": "L2_CACHE_SIZE"}

    @classmethod
    def from_attributes(cls, attrs: Mapping[str, int], name: str = "") -> "Device":
        """From ``{"MULTIPROCESSOR_COUNT": 132, ...}`` (names without ``CU_DEVICE_ATTRIBUTE_``)."""
        a = {key: int(attrs[attr]) for key, attr in cls.ATTRIBUTES.items()}
        return cls(name, (a.pop("cc_major"), a.pop("cc_minor")), **a)

    @property
    def arch(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}"

    @property
    def peak_gbps(self) -> float:
        """DRAM bandwidth: 2 (double data rate) x memory clock x bus width / 8, in GB/s (1e9)."""
        return 2 * self.mem_clock_khz * 1e3 * self.bus_width_bits / 8 / 1e9

    def fma_per_clock(self, dtype: str = "float32") -> tuple[int | None, bool]:
        """(FMA results per clock per SM for ``dtype``, whether the table is sure of it)."""
        table = FMA_PER_CLOCK[_dtype(dtype)]
        for key in (self.cc, (self.cc[0], None)):
            if key in table:
                return table[key], (_dtype(dtype), key) not in UNSURE
        return None, False

    def peak_tflops(self, dtype: str = "float32") -> float | None:
        """SMs x max SM clock x FMA per clock per SM x 2, in TFLOP/s (1e12); None if the
        table has no figure for this architecture."""
        per, _ = self.fma_per_clock(dtype)
        return None if per is None else self.sms * self.sm_clock_khz * 1e3 * per * 2 / 1e12


_DEVICES: dict[int, Device] = {}


def device_info() -> Device:
    """The current GPU's :class:`Device` (cached); :class:`NoGPUError` without one."""
    dev = driver.device()
    got = _DEVICES.get(int(dev))
    if got is None:
        drv = api()
        attrs = {}
        for attr in Device.ATTRIBUTES.values():
            enum = getattr(drv.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{attr}")
            attrs[attr] = check(drv.cuDeviceGetAttribute(enum, dev), f"cuDeviceGetAttribute({attr})")
        raw = check(drv.cuDeviceGetName(256, dev), "cuDeviceGetName")
        name = raw.split(b"\0")[0].decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        got = _DEVICES[int(dev)] = Device.from_attributes(attrs, name)
    return got


# ---- clocks -----------------------------------------------------------------------------------

THROTTLE_DROP = 0.05       # an SM clock 5% below the one before, or below the max, is a note

# NVML's clocks event reasons (nvml.h, nvmlClocksEventReason*), the ones that slow a kernel.
_REASONS = {0x2: "applications clocks setting", 0x4: "software power cap",
            0x8: "hardware slowdown", 0x10: "sync boost", 0x20: "software thermal slowdown",
            0x40: "hardware thermal slowdown", 0x80: "hardware power brake",
            0x200: "board limit", 0x400: "reliability"}


@dataclass(frozen=True)
class Clocks:
    """The SM clock (MHz, from NVML) right before and right after the timed launches."""

    before_mhz: int | None = None
    after_mhz: int | None = None
    max_mhz: int | None = None
    reasons: tuple[str, ...] = ()      # NVML's clocks event reasons after the run
    note: str = ""                     # why there is no figure, when there is none

    @property
    def throttled(self) -> bool:
        """The clock fell by more than 5% during the run, or ended more than 5% below its max."""
        if self.before_mhz is None or self.after_mhz is None:
            return False
        fell = self.after_mhz < self.before_mhz * (1 - THROTTLE_DROP)
        low = self.max_mhz is not None and self.after_mhz < self.max_mhz * (1 - THROTTLE_DROP)
        return fell or low


_NVML: dict = {}


def _nvml_reader(dev):
    """(sm_mhz(), max_mhz(), reasons()) for ``dev`` from NVML (cuda.bindings.nvml, else
    pynvml), or a str saying why there is none.  Cached per process."""
    key = int(dev)
    if key in _NVML:
        return _NVML[key]
    bus = check(api().cuDeviceGetPCIBusId(32, dev), "cuDeviceGetPCIBusId")
    bus = bus.split(b"\0")[0].decode() if isinstance(bus, bytes) else str(bus)
    try:
        try:
            from cuda.bindings import nvml
            nvml.init_v2()
            h = nvml.device_get_handle_by_pci_bus_id_v2(bus)
            sm = nvml.ClockType.CLOCK_SM
            reader = (lambda: nvml.device_get_clock_info(h, sm),
                      lambda: nvml.device_get_max_clock_info(h, sm),
                      lambda: nvml.device_get_current_clocks_event_reasons(h))
        except ImportError:
            try:
                import pynvml
            except ImportError:
                raise ImportError("no NVML bindings: cuda.bindings.nvml (cuda-bindings 13.x) or "
                                  "pynvml (nvidia-ml-py)") from None
            pynvml.nvmlInit()
            h = pynvml.nvmlDeviceGetHandleByPciBusId(bus)
            sm = pynvml.NVML_CLOCK_SM
            reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
            reader = (lambda: pynvml.nvmlDeviceGetClockInfo(h, sm),
                      lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, sm), lambda: reasons(h))
        reader[0]()
    except Exception as exc:                # no NVML library, no permission, a MIG slice...
        reader = f"SM clock not read ({type(exc).__name__}: {str(exc)[:120]})"
    _NVML[key] = reader
    return reader


def _clock(reader) -> int | None:
    try:
        return int(reader[0]())
    except Exception:
        return None


def _clocks(reader, before: int | None) -> Clocks:
    if isinstance(reader, str):
        return Clocks(note=reader)
    after = _clock(reader)
    try:
        top = int(reader[1]())
    except Exception:
        top = None
    try:
        bits = int(reader[2]())
        reasons = tuple(text for bit, text in _REASONS.items() if bits & bit)
    except Exception:
        reasons = ()
    return Clocks(before, after, top, reasons)


# ---- the flush buffer -------------------------------------------------------------------------

FLUSH_FACTOR = 2           # the scratch buffer written before each timed launch: 2x the L2
_SCRATCH: dict[int, tuple[Any, int]] = {}


def _scratch(dev, info: Device) -> tuple[Any, int]:
    """(device pointer, bytes) of this device's flush buffer: allocated on first use and kept
    for the session (126 MB on an H200, whose L2 is 60 MiB)."""
    got = _SCRATCH.get(int(dev))
    if got is None:
        size = max(FLUSH_FACTOR * info.l2_bytes, 1 << 20)
        ptr = check(api().cuMemAlloc(size), f"allocating the {size >> 20} MB L2 flush buffer")
        got = _SCRATCH[int(dev)] = (ptr, size)
    return got


# ---- holding the stream while a batch is queued -----------------------------------------------
#
# CUDA events time the GPU, not Python, but only while the GPU is busy: if it runs out of work
# between a start event and the launch that follows, the event pair measures Python's launch
# time (measured on the H200: 8.7 us for an empty kernel, against 3.5 us queued). So each
# batch of BATCH timed repetitions is queued while the stream waits on a flag in pinned host
# memory (cuStreamWaitValue32), and the flag is set once the batch is queued: the GPU then
# runs the whole batch back to back.  The wait lies outside every event pair.

BATCH = 32                 # timed repetitions queued behind one flag (~130 commands)
_GATES: dict[int, Any] = {}


def _gate(dev):
    """[host address, device pointer, last value] of this device's flag, or None if pinned
    mapped memory is not available.  Allocated once and kept."""
    key = int(dev)
    if key not in _GATES:
        drv = api()
        try:
            flags = drv.CU_MEMHOSTALLOC_DEVICEMAP | drv.CU_MEMHOSTALLOC_PORTABLE
            host = int(check(drv.cuMemHostAlloc(8, flags), "cuMemHostAlloc"))
            dptr = check(drv.cuMemHostGetDevicePointer(host, 0), "cuMemHostGetDevicePointer")
            ctypes.c_uint32.from_address(host).value = 0
            _GATES[key] = [host, dptr, 0]
        except Exception:
            _GATES[key] = None
    return _GATES[key]


_GATE_LOCK = threading.Lock()


def _hold(drv, gate, s) -> int | None:
    """Make stream ``s`` wait until the flag reaches a new value; that value, or None if the
    stream cannot wait."""
    geq = drv.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ
    with _GATE_LOCK:
        value = gate[2] + 1
        if drv.cuStreamWaitValue32(s, gate[1], value, int(geq))[0] != 0:
            return None
        gate[2] = value
    return value


def _release(gate, value: int) -> None:
    """Set the flag to ``value`` unless another thread set it higher (it only grows, so no
    stream waits on a value that was passed)."""
    with _GATE_LOCK:
        flag = ctypes.c_uint32.from_address(gate[0])
        flag.value = max(flag.value, value)


# ---- measuring --------------------------------------------------------------------------------

GRAPH_LAUNCHES = 20        # launches per graph for graph=True
WARMUP_MS = 25.0           # warmup=None: launch until about this much GPU time has passed
WARMUP_MAX = 10_000        # ... or this many launches


def _count(value, name: str, low: int, what: str, allow_none: bool = False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise BenchError(f"{name}={str(value)[:40]}: {what}")
    return value


def _amount(value, name: str, what: str):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 \
            or value == float("inf"):
        raise BenchError(f"{name}={str(value)[:40]}: {what}, a number > 0")
    return value


def options(repeat=100, warmup=None, flush=True, graph=False, nbytes=None, flops=None,
            dtype="float32") -> dict:
    """``bench``'s keywords, checked (:class:`BenchError` naming the one that is wrong) and
    normalised: ``graph`` becomes the number of launches per graph (0: none)."""
    out = {"repeat": _count(repeat, "repeat", 1, "the number of timed launches, an int >= 1"),
           "warmup": _count(warmup, "warmup", 0, "launches before timing, an int >= 0 (None: "
                            "about 25 ms of launches)", allow_none=True)}
    if not isinstance(flush, bool):
        raise BenchError(f"flush={str(flush)[:40]}: True (write a buffer of twice the L2 before "
                         f"each timed launch) or False")
    if graph is True:
        graph = GRAPH_LAUNCHES
    elif graph is False or graph is None:
        graph = 0
    else:
        graph = _count(graph, "graph", 1, "True, False or the number of launches per CUDA graph")
    out.update(flush=flush, graph=graph,
               nbytes=_amount(nbytes, "nbytes", "bytes one launch reads and writes"),
               flops=_amount(flops, "flops", "floating-point operations one launch does"),
               dtype=_dtype(dtype))
    return out


def measure(kernel, dims: tuple, args: Sequence, shared: int, stream: int, *, repeat: int,
            warmup: int | None, flush: bool, graph: int, nbytes, flops, dtype: str) -> Timing:
    """Time ``kernel`` (already checked options, see :func:`options`): launches one by one or
    ``graph`` at a time in a CUDA graph, each timed with a pair of CUDA events; with ``flush``
    a memset of twice the L2 on the same stream before each timed launch, outside the events;
    queued BATCH at a time while the stream is held, so the GPU never waits for Python inside
    an event pair."""
    try:
        b = kernel._bind()
    except NoGPUError as exc:
        raise NoGPUError(f"{kernel.name}.bench: {exc}", exc.name, exc.code) from None
    handle, packer = b[1], b[2]
    if shared > kernel._max_dynamic:
        kernel._allow_shared(handle, shared)
    drv = api()
    dev = driver.device()
    info = device_info()
    what = f"launching {kernel.name}[grid={dims[:3]}, block={dims[3:]}, shared_mem={shared}]"
    staged: list = []
    events: list = []
    owned: list = []            # (destroy function, handle), destroyed in reverse order
    s = stream
    notes = []

    def event():
        e = check(drv.cuEventCreate(0), "cuEventCreate")
        events.append(e)
        return e

    try:
        params = packer.pack(args, staged)
        # what made the arguments (CuPy, PyTorch, on any stream) is finished before timing
        check(drv.cuCtxSynchronize(), f"waiting for the GPU before timing {kernel.name}")
        if graph:
            if s in (0, 1, 2):          # the legacy and per-thread default streams cannot capture
                s = check(drv.cuStreamCreate(drv.CUstream_flags.CU_STREAM_NON_BLOCKING),
                          "cuStreamCreate")
                owned.append((drv.cuStreamDestroy, s))
            step = _capture(drv, handle, dims, shared, s, params, graph, what, owned)
        else:
            def step():
                err = drv.cuLaunchKernel(handle, *dims, shared, s, params, 0)[0]
                if err != 0:
                    check((err,), what)
        warmed = _warm(drv, step, s, warmup, event)
        scratch = _scratch(dev, info) if flush else None
        reader = _nvml_reader(dev)
        before = None if isinstance(reader, str) else _clock(reader)
        pairs = [(event(), event()) for _ in range(repeat)]
        gate = _gate(dev)
        for first in range(0, repeat, BATCH):
            held = _hold(drv, gate, s) if gate is not None else None
            if gate is not None and held is None:
                gate = None
                notes.append("the stream could not be held (cuStreamWaitValue32 failed): launches "
                             "were not queued ahead, so a kernel shorter than a Python launch "
                             "measures the launch")
            try:
                for i in range(first, min(first + BATCH, repeat)):
                    start, end = pairs[i]
                    if scratch is not None:
                        check(drv.cuMemsetD8Async(scratch[0], i & 0xFF, scratch[1], s),
                              "flushing the L2")
                    check(drv.cuEventRecord(start, s), "cuEventRecord")
                    step()
                    check(drv.cuEventRecord(end, s), "cuEventRecord")
            finally:
                if held is not None:
                    _release(gate, held)
        check(drv.cuEventSynchronize(pairs[-1][1]), f"running {kernel.name}")
        clocks = _clocks(reader, before)
        per = graph or 1
        samples = tuple(float(check(drv.cuEventElapsedTime(a, z), "cuEventElapsedTime")) / per
                        for a, z in pairs)
    finally:
        try:
            drv.cuCtxSynchronize()      # nothing the GPU still uses is freed below
        except Exception:
            pass
        for e in events:
            drv.cuEventDestroy(e)
        for destroy, h in reversed(owned):
            destroy(h)
        if staged:
            release(staged, stream, copy_back=False)
    if graph and stream in (0, 1, 2):
        notes.append("captured on a private non-blocking stream (the default streams cannot be "
                     "captured)")
    return Timing(kernel.name, tuple(dims), samples, nbytes=nbytes, flops=flops, dtype=dtype,
                  flush=flush, flush_bytes=scratch[1] if scratch else 0, graph=graph,
                  warmup=warmed, shared_mem=shared, device=info, clocks=clocks, notes=tuple(notes))


def _capture(drv, handle, dims, shared, s, params, n: int, what: str, owned: list):
    """Capture ``n`` launches on ``s`` into a CUDA graph; returns a function launching it."""
    mode = drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
    check(drv.cuStreamBeginCapture(s, mode), "cuStreamBeginCapture")
    err = 0
    try:
        for _ in range(n):
            err = drv.cuLaunchKernel(handle, *dims, shared, s, params, 0)[0]
            if err != 0:
                break
    finally:
        ended = drv.cuStreamEndCapture(s)
    if err != 0:
        if ended[0] == 0 and ended[1]:
            drv.cuGraphDestroy(ended[1])
        check((err,), f"{what} (capturing a CUDA graph)")
    g = check(ended, "cuStreamEndCapture")
    owned.append((drv.cuGraphDestroy, g))
    ex = check(drv.cuGraphInstantiate(g, 0), "cuGraphInstantiate")
    owned.append((drv.cuGraphExecDestroy, ex))

    def step():
        e = drv.cuGraphLaunch(ex, s)[0]
        if e != 0:
            check((e,), f"{what} (a CUDA graph of {n} launches)")
    return step


def _warm(drv, step, s, warmup: int | None, event) -> int:
    """Run ``warmup`` steps, or (None) batches doubling in size until about WARMUP_MS of GPU
    time or WARMUP_MAX steps; returns the number run."""
    if warmup is not None:
        for _ in range(warmup):
            step()
        check(drv.cuStreamSynchronize(s), "warming up")
        return warmup
    start, end = event(), event()
    done, batch, total = 0, 1, 0.0
    while total < WARMUP_MS and done < WARMUP_MAX:
        check(drv.cuEventRecord(start, s), "cuEventRecord")
        for _ in range(batch):
            step()
        check(drv.cuEventRecord(end, s), "cuEventRecord")
        check(drv.cuEventSynchronize(end), "warming up")
        total += float(check(drv.cuEventElapsedTime(start, end), "cuEventElapsedTime"))
        done += batch
        batch = min(batch * 2, WARMUP_MAX - done)
    return done


# ---- the result -------------------------------------------------------------------------------

@dataclass(repr=False)
class Timing:
    """One ``bench``: per-launch times in milliseconds (CUDA events) and what they mean.

    ``samples_ms`` holds one time per timed repetition, per launch (in graph mode the
    graph's time divided by its launches).  Statistics: ``median_ms``, ``min_ms``,
    ``mean_ms``, ``q1_ms``/``q3_ms``/``iqr_ms``, ``ci_ms`` (a distribution-free 95%
    confidence interval for the median, see :func:`median_ci`) and ``n``.  Given ``nbytes``
    or ``flops``: ``gbps``/``tflops`` at the median and, as a fraction of the device's peak,
    ``gbps_of_peak``/``tflops_of_peak``.  ``clocks`` is the SM clock before and after.
    ``config_hash``/``source_hash`` identify the build, ``launch_hash`` the launch setup
    (grid, block, shared memory, flush, graph, argument shapes and values); :func:`history`
    compares runs with the same launch setup.
    """

    kernel: str
    dims: tuple                              # grid (3) + block (3)
    samples_ms: tuple
    nbytes: float | None = None
    flops: float | None = None
    dtype: str = "float32"
    flush: bool = False
    flush_bytes: int = 0                     # bytes written to flush the L2 before each sample
    graph: int = 0                           # launches per CUDA graph; 0: launched one by one
    warmup: int = 0                          # warmup steps run (graph launches in graph mode)
    shared_mem: int = 0
    device: Device | None = None
    clocks: Clocks | None = None
    notes: tuple = ()
    when: float = field(default_factory=time.time)
    config_hash: str = ""
    source_hash: str = ""
    launch_hash: str = ""

    def __post_init__(self):
        self.samples_ms = tuple(float(x) for x in self.samples_ms)
        if not self.samples_ms:
            raise BenchError("a Timing needs at least one sample")

    @classmethod
    def from_samples(cls, samples_ms: Sequence[float], kernel: str = "kernel",
                     dims: tuple = (1, 1, 1, 1, 1, 1), **kw) -> "Timing":
        """A Timing from times you have (for tests, or times measured elsewhere)."""
        return cls(kernel, tuple(dims), tuple(samples_ms), **kw)

    # -- statistics --------------------------------------------------------------------------
    @cached_property
    def _sorted(self) -> tuple:
        return tuple(sorted(self.samples_ms))

    @cached_property
    def _quartiles(self) -> tuple:
        return quartiles(self._sorted)

    @cached_property
    def _ci(self) -> tuple:
        return median_ci(self._sorted)

    @property
    def n(self) -> int:
        return len(self.samples_ms)

    @property
    def times_ms(self) -> list:
        """The samples as a list (the name ``BenchResult`` had)."""
        return list(self.samples_ms)

    @property
    def median_ms(self) -> float:
        return self._quartiles[1]

    @property
    def min_ms(self) -> float:
        return self._sorted[0]

    @property
    def max_ms(self) -> float:
        return self._sorted[-1]

    @property
    def mean_ms(self) -> float:
        return math.fsum(self.samples_ms) / self.n

    @property
    def q1_ms(self) -> float:
        return self._quartiles[0]

    @property
    def q3_ms(self) -> float:
        return self._quartiles[2]

    @property
    def iqr_ms(self) -> float:
        return self.q3_ms - self.q1_ms

    @property
    def ci_ms(self) -> tuple[float, float]:
        """95% confidence interval for the median (order statistics; see :func:`median_ci`)."""
        return self._ci[0], self._ci[1]

    @property
    def ci_coverage(self) -> float:
        """The interval's true coverage (>= 0.95 from 6 samples on; less below)."""
        return self._ci[2]

    # -- throughput --------------------------------------------------------------------------
    @property
    def gbps(self) -> float | None:
        """Bytes moved per second at the median time, in GB/s (1e9), given ``nbytes``."""
        return None if not self.nbytes else self.nbytes / (self.median_ms * 1e-3) / 1e9

    @property
    def tflops(self) -> float | None:
        """FLOP per second at the median time, in TFLOP/s (1e12), given ``flops``."""
        return None if not self.flops else self.flops / (self.median_ms * 1e-3) / 1e12

    @property
    def peak_gbps(self) -> float | None:
        return self.device.peak_gbps if self.device else None

    @property
    def peak_tflops(self) -> float | None:
        return self.device.peak_tflops(self.dtype) if self.device else None

    @property
    def gbps_of_peak(self) -> float | None:
        """``gbps`` as a fraction of the device's DRAM bandwidth."""
        g, p = self.gbps, self.peak_gbps
        return g / p if g and p else None

    @property
    def tflops_of_peak(self) -> float | None:
        """``tflops`` as a fraction of the device's ``dtype`` FMA peak (no tensor cores)."""
        t, p = self.tflops, self.peak_tflops
        return t / p if t and p else None

    def to_dict(self) -> dict:
        """Plain data (JSON-able): the fields and the statistics."""
        d = dataclasses.asdict(self)
        d["samples_ms"] = list(self.samples_ms)
        d.update(n=self.n, median_ms=self.median_ms, min_ms=self.min_ms, mean_ms=self.mean_ms,
                 q1_ms=self.q1_ms, q3_ms=self.q3_ms, ci_ms=list(self.ci_ms),
                 ci_coverage=self.ci_coverage, gbps=self.gbps, tflops=self.tflops,
                 gbps_of_peak=self.gbps_of_peak, tflops_of_peak=self.tflops_of_peak)
        return d

    def __repr__(self) -> str:
        lo, hi = self.ci_ms
        bw = f", {self.gbps:.1f} GB/s" if self.gbps else ""
        return (f"<Timing {self.kernel}: median {self.median_ms * 1e3:.2f} µs (95% CI "
                f"{lo * 1e3:.2f}–{hi * 1e3:.2f}) over {self.n} launches{bw}; cuda_magic.show(t) "
                f"for the table>")


BenchResult = Timing       # the name bench's result had before Timing


# ---- history ----------------------------------------------------------------------------------

HISTORY_RUNS = 100         # runs kept per kernel name (the oldest go first)
HISTORY_KERNELS = 200      # kernel names kept (the least recently benched go first)
REGRESSION = 0.03          # a change must also exceed 3% to be marked

_HISTORY: "collections.OrderedDict[str, collections.deque]" = collections.OrderedDict()
_HLOCK = threading.Lock()


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _arg_signature(args: Sequence) -> tuple:
    """What about the arguments changes a kernel's time: array shapes and dtypes, scalar values."""
    out = []
    for a in args:
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            out.append(("array", tuple(int(x) for x in a.shape), str(a.dtype).removeprefix("torch.")))
        elif a is None or isinstance(a, (bool, int, float, complex, str)):
            out.append(repr(a)[:100])
        elif isinstance(a, (bytes, bytearray)):
            out.append(("bytes", _hash(bytes(a).hex())))
        else:
            out.append(type(a).__name__)
    return tuple(out)


def record(kernel, timing: Timing, args: Sequence = ()) -> Timing:
    """Keep ``timing`` in the session's history of ``kernel.name``; returns it with its build
    (config, source) and launch-setup hashes filled in."""
    result = getattr(kernel, "result", None)
    config = getattr(result, "config", None)
    config_json = config.json() if hasattr(config, "json") else ""
    launch = repr((tuple(timing.dims), timing.shared_mem, timing.flush, timing.graph,
                   _arg_signature(args)))
    timing = dataclasses.replace(timing, config_hash=_hash(config_json),
                                 source_hash=_hash(getattr(result, "source", "") or ""),
                                 launch_hash=_hash(launch))
    with _HLOCK:
        runs = _HISTORY.pop(timing.kernel, None) or collections.deque(maxlen=HISTORY_RUNS)
        runs.append(timing)
        _HISTORY[timing.kernel] = runs
        while len(_HISTORY) > HISTORY_KERNELS:
            _HISTORY.popitem(last=False)
    return timing


def clear_history(kernel=None) -> None:
    """Forget the history of ``kernel`` (a Kernel or its name), or of every kernel."""
    with _HLOCK:
        if kernel is None:
            _HISTORY.clear()
        else:
            _HISTORY.pop(getattr(kernel, "name", kernel), None)


def history(kernel) -> "History":
    """Every ``bench`` of ``kernel`` (a Kernel or its name) in this session, oldest first.

    Kernels are keyed by name, so the same ``k`` edited and re-run in a new cell continues
    its history; each run carries the hashes of the build's config and source.
    """
    name = getattr(kernel, "name", kernel)
    if not isinstance(name, str):
        raise HistoryError(f"history(kernel): give a Kernel or a kernel's name, not {quote(kernel)}")
    with _HLOCK:
        runs = list(_HISTORY.get(name, ()))
        known = list(_HISTORY)
    if not runs:
        hint = (f"; benched so far: {', '.join(known[-10:])}" if known
                else "; time it with k.bench(grid, block, *args) first")
        raise HistoryError(f"no bench of {quote(name)} in this session{hint}")
    return History(name, runs)


@dataclass(frozen=True)
class Mark:
    """How a run compares with the previous run of the same launch setup."""

    kind: str = ""                      # "regression", "improvement", "" (within noise or first)
    change: float | None = None         # median / previous median - 1
    against: int | None = None          # index of the run compared with


def marks(runs: Sequence[Timing]) -> list[Mark]:
    """A run whose median is above the previous comparable run's CI upper bound and more than
    3% slower is a regression; below its CI lower bound and more than 3% faster, an
    improvement.  Comparable: the same ``launch_hash``."""
    out, last = [], {}
    for i, t in enumerate(runs):
        j = last.get(t.launch_hash)
        last[t.launch_hash] = i
        if j is None:
            out.append(Mark())
            continue
        base = runs[j]
        change = t.median_ms / base.median_ms - 1
        lo, hi = base.ci_ms
        kind = ("regression" if t.median_ms > hi and change > REGRESSION else
                "improvement" if t.median_ms < lo and change < -REGRESSION else "")
        out.append(Mark(kind, change, j))
    return out


class History:
    """A kernel's timings in this session, with regressions and improvements marked."""

    def __init__(self, kernel: str, runs: Sequence[Timing]):
        self.kernel = kernel
        self.runs = tuple(runs)
        self.marks = marks(self.runs)

    def __len__(self) -> int:
        return len(self.runs)

    def __getitem__(self, i):
        return self.runs[i]

    def __iter__(self):
        return iter(self.runs)

    @property
    def latest(self) -> Timing:
        return self.runs[-1]

    @property
    def regressions(self) -> list[int]:
        return [i for i, m in enumerate(self.marks) if m.kind == "regression"]

    @property
    def improvements(self) -> list[int]:
        return [i for i, m in enumerate(self.marks) if m.kind == "improvement"]

    def __repr__(self) -> str:
        return (f"<History {self.kernel}: {len(self.runs)} runs, {len(self.regressions)} "
                f"regressions, {len(self.improvements)} improvements; cuda_magic.show(h) for the "
                f"table>")
