"""Timing a kernel: warmup, L2 flush, CUDA graphs, events; the :class:`Timing` it returns.

``Kernel.bench(...)`` checks its keywords with :func:`.options.options`, calls
:func:`measure` and hands the :class:`Timing` to
:func:`~cuda_magic.runtime.measure.history.record`, which keeps it for
``cuda_magic.history(name)``.  Beside it: the statistics in :mod:`.stats`, the device's peaks
and clocks in :mod:`.peaks`, the timers in :mod:`.timers` (CUPTI's records: :mod:`.cupti`),
fresh inputs in :mod:`.fresh`, two kernels in turns in :mod:`.ab`, the session's history in
:mod:`.history`; how a Timing looks is in ``cuda_magic.display.timing`` (``cuda_magic.view(t)``,
``show(t)``).  Each name lives in one of those modules only.  Nothing here imports NumPy, and
nothing touches CUDA before ``measure`` is called.

One concept: one timed measurement, from the launches it queues to the Timing it returns.
"""

from __future__ import annotations

import ctypes
import dataclasses
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Sequence

from ...errors import BenchError
from .. import driver
from ..hang import waiting
from ..launch.staging import release
from ..driver import NoGPUError, api, check
from . import fresh, timers
from .options import GRAPH_LAUNCHES, PROTOCOLS, check_rules, options
from .peaks import Clocks, Device, clocks_after, device_info, nvml_reader, read_clock
from .stats import mean, median_ci, quartiles

__all__ = ["Timing", "BenchError", "options", "check_rules", "measure", "l2_state", "GRAPH_LAUNCHES",
           "WARMUP_MS", "WARMUP_MAX", "FLUSH_FACTOR", "BATCH"]


# ---- the flush buffer -------------------------------------------------------------------------

FLUSH_FACTOR = 2           # the scratch buffer written before each timed launch: 2x the L2
_SCRATCH: dict[tuple[int, int], tuple[Any, int]] = {}


def _scratch(dev, info: Device, size: int | None = None) -> tuple[Any, int]:
    """(device pointer, bytes) of this device's flush buffer of ``size`` bytes (None: twice
    the L2, 126 MB on an H200, whose L2 is 60 MiB): allocated on first use and kept for the
    session."""
    size = size or max(FLUSH_FACTOR * info.l2_bytes, 1 << 20)
    got = _SCRATCH.get((int(dev), size))
    if got is None:
        ptr = check(api().cuMemAlloc(size), f"allocating the {size >> 20} MB L2 flush buffer")
        got = _SCRATCH[(int(dev), size)] = (ptr, size)
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

WARMUP_MS = 25.0           # warmup=None: launch until about this much GPU time has passed
WARMUP_MAX = 10_000        # ... or this many launches


def measure(kernel, dims: tuple, args: Sequence, shared: int, stream: int, *, repeat: int,
            warmup: int | None, flush: bool, graph: int, nbytes, flops, dtype: str,
            timer: str = "events", fresh_inputs: bool = False, protocol: str | None = None,
            attrs=None) -> Timing:
    """Time ``kernel`` (already checked options, see :func:`options`): launches one by one or
    ``graph`` at a time in a CUDA graph, each timed with a pair of CUDA events; with ``flush``
    a memset of twice the L2 on the same stream before each timed launch, outside the events;
    queued BATCH at a time while the stream is held, so the GPU never waits for Python inside
    an event pair.  ``timer``: "cupti" (or "auto" with cupti-python installed) takes each
    kernel's own duration from CUPTI's activity records instead of the event pairs (which are
    still recorded).  ``fresh_inputs``: the timed launches rotate :data:`.fresh.FRESH_SETS` copies of
    the const pointer inputs, each shifted.  ``protocol``: its ``trials`` (one warmup, then
    each trial's runs) and its flush size.  ``attrs``: the launch's
    :class:`~..launch.attributes.Attributes` (None: none), each launch then a
    ``cuLaunchKernelEx``."""
    fixed = PROTOCOLS.get(protocol, {})
    kw = dict(repeat=repeat, flush=flush, graph=graph, nbytes=nbytes, flops=flops, dtype=dtype,
              timer=timer, fresh_inputs=fresh_inputs, attrs=attrs,
              flush_bytes=fixed.get("flush_bytes"))
    trials = [_measure(kernel, dims, args, shared, stream, warmup=warmup if t == 0 else 0, **kw)
              for t in range(fixed.get("trials", 1))]
    if len(trials) == 1:
        return trials[0]
    first = trials[0]
    said = (f"protocol {protocol!r}: {warmup} warm-up launches, then {len(trials)} trials of "
            f"{repeat} timed launches, {first.flush_bytes >> 20} MiB written to flush the L2 "
            f"before each, inputs shifted every launch")
    return dataclasses.replace(first, samples_ms=tuple(x for t in trials for x in t.samples_ms),
                               notes=(said,) + first.notes, protocol=protocol)


def _measure(kernel, dims: tuple, args: Sequence, shared: int, stream: int, *, repeat: int,
             warmup: int | None, flush: bool, graph: int, nbytes, flops, dtype: str,
             timer: str, fresh_inputs: bool, attrs, flush_bytes: int | None) -> Timing:
    """One trial of :func:`measure`."""
    timer, recorder, timer_note = timers.choose(timer)
    try:
        handle, packer = kernel.handle_and_packer(shared)
    except NoGPUError as exc:
        raise NoGPUError(f"{kernel.name}.bench: {exc}", exc.name, exc.code) from None
    drv = api()
    dev = driver.device()
    info = device_info()
    what = f"launching {kernel.name}[grid={dims[:3]}, block={dims[3:]}, shared_mem={shared}]"
    if attrs is not None:
        what += " with " + ", ".join(attrs.words())
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
        sets = fresh.sets(kernel, args) if fresh_inputs else [args]
        packers = [packer] + [kernel.spare_packer() for _ in sets[1:]]
        launchers = [_launcher(drv, kernel, handle, dims, shared, p.pack(a, staged), attrs)
                     for p, a in zip(packers, sets)]
        launch = launchers[0]
        if fresh_inputs:
            notes.append(fresh.note(kernel, args, len(sets)))
        # what made the arguments (CuPy, PyTorch, on any stream) is finished before timing
        waiting.everything(None, f"waiting for the GPU before timing {kernel.name}")
        if graph:
            if s in (0, 1, 2):          # the legacy and per-thread default streams cannot capture
                s = check(drv.cuStreamCreate(drv.CUstream_flags.CU_STREAM_NON_BLOCKING),
                          "cuStreamCreate")
                owned.append((drv.cuStreamDestroy, s))
            step = _capture(drv, launch, s, graph, what, owned)
        else:
            def step():
                err = launch(s)
                if err != 0:
                    check((err,), what)
        warmed = _warm(drv, step, s, warmup, event, lambda: waiting.Launch.of(kernel, dims))
        scratch = _scratch(dev, info, flush_bytes) if flush else None
        if recorder is not None:
            recorder, timer_note = timers.start(recorder)
        reader = nvml_reader(dev)
        before = None if isinstance(reader, str) else read_clock(reader)
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
                    if len(launchers) > 1:
                        err = launchers[i % len(launchers)](s)
                        if err != 0:
                            check((err,), what)
                    else:
                        step()
                    check(drv.cuEventRecord(end, s), "cuEventRecord")
            finally:
                if held is not None:
                    _release(gate, held)
        for _, end in pairs:     # each launch within the launch time limit (polled waits)
            waiting.event(end, waiting.Launch.of(kernel, dims), f"running {kernel.name}")
        clocks = clocks_after(reader, before)
        per = graph or 1
        samples = tuple(float(check(drv.cuEventElapsedTime(a, z), "cuEventElapsedTime")) / per
                        for a, z in pairs)
        used = "events"
        if recorder is not None:
            kernel_ms, timer_note = timers.stop(recorder, kernel, repeat * per)
            if kernel_ms is not None:       # one sample per timed repetition, as the events give
                samples = tuple(sum(kernel_ms[i * per:(i + 1) * per]) / per
                                for i in range(repeat))
                used = "cupti"
                recorder = None
    finally:
        if recorder is not None:
            timers.abandon(recorder)
        # nothing the GPU still uses is freed; once CUDA here is lost (a fault, a hang) nothing
        # is freed at all: after a hang, freeing would wait for the kernel
        if driver.lost() is None:
            try:
                waiting.everything()
            except Exception:
                pass
        if driver.lost() is None:
            for e in events:
                drv.cuEventDestroy(e)
            for destroy, h in reversed(owned):
                destroy(h)
            if staged:
                release(staged, stream, copy_back=False)
    if attrs is not None:
        notes.append(f"each launch with {', '.join(attrs.words(values=True))} (cuLaunchKernelEx)")
    if timer_note:
        notes.append(timer_note)
    if graph and stream in (0, 1, 2):
        notes.append("captured on a private non-blocking stream (the default streams cannot be "
                     "captured)")
    return Timing(kernel.name, tuple(dims), samples, nbytes=nbytes, flops=flops, dtype=dtype,
                  flush=flush, flush_bytes=scratch[1] if scratch else 0, graph=graph,
                  warmup=warmed, shared_mem=shared, device=info, clocks=clocks, notes=tuple(notes),
                  timer=used)


def _launcher(drv, kernel, handle, dims, shared: int, params, attrs):
    """``launch(stream) -> CUresult``: one launch of the packed ``params``, with ``attrs``
    through ``cuLaunchKernelEx`` (:func:`..launch.attributes.config`, made once per stream)."""
    if attrs is None:
        return lambda s: drv.cuLaunchKernel(handle, *dims, shared, s, params, 0)[0]
    from ..launch import attributes as launch_attrs

    def launch(s):
        cfg, func = launch_attrs.config(kernel, handle, dims, shared, s, attrs)
        return drv.cuLaunchKernelEx(cfg, func, params, 0)[0]
    return launch


def _capture(drv, launch, s, n: int, what: str, owned: list):
    """Capture ``n`` launches on ``s`` into a CUDA graph; returns a function launching it."""
    mode = drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
    check(drv.cuStreamBeginCapture(s, mode), "cuStreamBeginCapture")
    err = 0
    try:
        for _ in range(n):
            err = launch(s)
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


def _warm(drv, step, s, warmup: int | None, event, launch) -> int:
    """Run ``warmup`` steps, or (None) batches doubling in size until about WARMUP_MS of GPU
    time or WARMUP_MAX steps; returns the number run."""
    if warmup is not None:
        for _ in range(warmup):
            step()
        waiting.stream(s, launch(), "warming up")
        return warmup
    start, end = event(), event()
    done, batch, total = 0, 1, 0.0
    while total < WARMUP_MS and done < WARMUP_MAX:
        check(drv.cuEventRecord(start, s), "cuEventRecord")
        for _ in range(batch):
            step()
        check(drv.cuEventRecord(end, s), "cuEventRecord")
        waiting.event(end, launch(), "warming up")
        total += float(check(drv.cuEventElapsedTime(start, end), "cuEventElapsedTime"))
        done += batch
        batch = min(batch * 2, WARMUP_MAX - done)
    return done


# ---- the result -------------------------------------------------------------------------------

def l2_state(flush: bool, graph: int) -> str:
    """How the L2 stood at the timed launches, as :attr:`Timing.l2` says it.  With ``graph``
    the flush runs before each graph launch only: inside a graph every launch but the first
    finds what the one before left in L2 (a flush between them would lie inside the graph's
    event pair, and be timed)."""
    if not flush:
        return "warm: not flushed"
    if graph > 1:
        return f"warm after the first launch of each graph of {graph}"
    return "cold: flushed before each timed launch"


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
    compares runs with the same launch setup.  ``l2`` says how the L2 stood at the timed
    launches (:func:`l2_state`): ``cold: flushed before each timed launch``, ``warm after the
    first launch of each graph of 20`` (``graph=True``: the flush runs before each graph
    launch only) or ``warm: not flushed``.
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
    l2: str = ""                             # how the L2 stood (l2_state); "": from flush, graph
    ran_on: str = ""                         # the remote GPU that ran it (remote()); "": here
    timer: str = "events"                    # what timed the samples: "events" or "cupti"
    protocol: str | None = None              # the protocol= that fixed the options
    check: Any = None                        # check=: the Verdict of the outputs after timing

    def __post_init__(self):
        self.samples_ms = tuple(float(x) for x in self.samples_ms)
        if not self.samples_ms:
            raise BenchError("a Timing needs at least one sample")
        if not self.l2:
            self.l2 = l2_state(self.flush, self.graph)

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
        return mean(self.samples_ms)

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

    # -- speed of light --------------------------------------------------------------------
    @property
    def bound_ms(self) -> float | None:
        """The roofline bound of one launch on this GPU: the longer of ``nbytes`` at the DRAM
        peak and ``flops`` at the ``dtype`` FMA peak (None without either or without peaks)."""
        times = []
        if self.nbytes and self.peak_gbps:
            times.append(self.nbytes / (self.peak_gbps * 1e9) * 1e3)
        if self.flops and self.peak_tflops:
            times.append(self.flops / (self.peak_tflops * 1e12) * 1e3)
        return max(times) if times else None

    @property
    def sol(self) -> float | None:
        """Speed of light reached: :attr:`bound_ms` over the median time (1.0: at the bound)."""
        bound = self.bound_ms
        return bound / self.median_ms if bound else None

    @property
    def bound_by(self) -> str | None:
        """What sets :attr:`bound_ms`: "memory" or "compute"."""
        if self.bound_ms is None:
            return None
        mem = self.nbytes / (self.peak_gbps * 1e9) * 1e3 if self.nbytes and self.peak_gbps else 0
        return "memory" if mem >= self.bound_ms else "compute"

    @property
    def peaks_source(self) -> str:
        """Where the peaks come from."""
        return ("DRAM: the driver's memory clock x bus width x 2; FMA: SMs x clock x FMA per "
                "clock (CUDA C++ Programming Guide, arithmetic instruction throughput); "
                "no tensor cores")

    @property
    def wrong(self) -> bool:
        """``check=`` ran and the outputs after timing failed it."""
        return self.check is not None and not bool(self.check)

    def to_dict(self) -> dict:
        """Plain data (JSON-able): the fields and the statistics."""
        d = dataclasses.asdict(dataclasses.replace(self, check=None))
        d["check"] = None if self.check is None else {"passed": bool(self.check),
                                                      "words": str(self.check)}
        d["samples_ms"] = list(self.samples_ms)
        d.update(n=self.n, median_ms=self.median_ms, min_ms=self.min_ms, mean_ms=self.mean_ms,
                 q1_ms=self.q1_ms, q3_ms=self.q3_ms, ci_ms=list(self.ci_ms),
                 ci_coverage=self.ci_coverage, gbps=self.gbps, tflops=self.tflops,
                 gbps_of_peak=self.gbps_of_peak, tflops_of_peak=self.tflops_of_peak,
                 bound_ms=self.bound_ms, sol=self.sol)
        return d

    def __repr__(self) -> str:
        lo, hi = self.ci_ms
        bw = f", {self.gbps:.1f} GB/s" if self.gbps else ""
        return (f"<Timing {self.kernel}: median {self.median_ms * 1e3:.2f} µs (95% CI "
                f"{lo * 1e3:.2f}–{hi * 1e3:.2f}) over {self.n} launches{bw}; cuda_magic.show(t) "
                f"for the table>")


def __getattr__(name: str):
    """``BenchResult``: the name ``Timing`` had, kept as a deprecated alias."""
    if name == "BenchResult":
        import warnings
        warnings.warn("cuda_magic BenchResult is Timing: use cuda_magic.Timing", DeprecationWarning,
                      stacklevel=2)
        return Timing
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
