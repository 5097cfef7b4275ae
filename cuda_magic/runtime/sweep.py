"""Benchmark jobs in helper processes: one per GPU of this host, or on a Dask cluster.

A :class:`Job` is what one tune candidate needs on a GPU, as plain data: the binary
(**the bytes compiled in the notebook**), its kernels' symbols and parameters, the launches
to replay in order, the arrays by name (NumPy) and which of them are outputs, and
:func:`~cuda_magic.runtime.bench.options` for timing.  A helper process
(``python3 -m cuda_magic.runtime.sweep``) pinned to one GPU with ``CUDA_VISIBLE_DEVICES``
loads the bytes, replays the launches once on its own copies of the arrays (the outputs
come back to be checked), then times each launch with the same code as ``k.bench``.

A kernel fault ends only its helper: the :class:`Outcome` says ``fault`` and the next job
starts a fresh helper.  A job that runs past its time limit has its helper killed.
:class:`LocalPool` keeps one helper per GPU and gives each job to whichever is free;
:class:`DaskPool` runs the same jobs as Dask tasks, each worker with a helper of its own
(``dask-cuda``'s ``LocalCUDACluster`` pins one worker per GPU); the arrays travel to the
workers once (``client.scatter``), the binaries with their jobs.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait as _wait
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import Error

__all__ = ["Launch", "Job", "Outcome", "Helper", "LocalPool", "DaskPool", "run_job", "SweepError",
           "local_pool", "close_pools"]

START_TIMEOUT_S = 120.0      # a helper's start: Python, NumPy, CUDA's context
_FRAME = struct.Struct("<Q")


class SweepError(Error, RuntimeError):
    """The helper processes or the Dask cluster cannot run the jobs."""


@dataclass(frozen=True)
class Launch:
    """One recorded launch: ``kernel`` names an entry of :attr:`Job.kernels`; ``dims`` is grid
    + block (6 ints); each argument is ``("array", name)``, ``("value", v)``, ``("bytes", b)``
    or ``("null",)``."""

    kernel: str
    dims: tuple
    shared: int
    args: tuple


@dataclass
class Job:
    """Everything one candidate needs on a GPU (see the module's docstring)."""

    index: int
    binary: bytes
    format: str
    arch: str
    kernels: dict                 # name -> (symbol, params)
    launches: tuple               # of Launch
    outputs: tuple = ()           # names of the arrays to send back
    arrays: dict = field(default_factory=dict)   # this job's own arrays; the pool adds the shared ones
    bench: dict | None = None     # bench.options(...); None: replay once, time nothing
    timeout: float = 60.0         # seconds for the whole job on the GPU


@dataclass
class Outcome:
    """What a job came to: ``status`` is ``ok``, ``fault`` (a kernel fault: its helper ended),
    ``error`` (a launch or argument failed, the helper goes on) or ``timeout``."""

    index: int
    status: str
    message: str = ""
    error: str = ""               # the CUDA error's name, when there is one
    outputs: dict = field(default_factory=dict)
    timings: tuple = ()           # one Timing per launch
    gpu: str = ""                 # which GPU ran it ("GPU 1 (NVIDIA H200)")
    seconds: float = 0.0          # wall time of the job in its helper
    checked: bool = False         # the helper compared the outputs with the reference ...
    wrong: str | None = None      # ... and found this difference (None: they match)
    wall: float = 0.0             # seconds from sending the job to its answer (this process)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def median_ms(self) -> float | None:
        """The candidate's time: the sum of its launches' medians."""
        return sum(t.median_ms for t in self.timings) if self.timings else None


# ------------------------------------------------------------------------------- checking

_RTOL = {2: 1e-2, 4: 1e-4, 8: 1e-10}     # by the bytes of a real element


class Reference:
    """One expected array, ready to judge many outputs fast: the tolerance of each element is
    worked out once.  Floats match where ``|out - ref| <= atol + rtol * |ref|`` (NumPy's
    ``isclose``; ``rtol`` by precision, ``atol`` by default ``rtol`` x the largest magnitude
    of the reference, so a different summation order passes and a wrong result does not), NaN
    where the reference has NaN, infinities exactly; integers and the rest exactly."""

    def __init__(self, name: str, ref, rtol: float | None = None, atol: float | None = None):
        import numpy as np
        self.name, self.ref = name, np.ascontiguousarray(ref)
        ref = self.ref
        self.float = ref.dtype.kind in "fc"
        if self.float:
            size = ref.dtype.itemsize // (2 if ref.dtype.kind == "c" else 1)
            r = rtol if rtol is not None else _RTOL.get(size, 1e-4)
            finite = np.isfinite(ref)
            self.odd = None if finite.all() else ~finite      # NaN / inf: compared exactly
            scale = float(np.max(np.abs(ref[finite]))) if finite.any() else 0.0
            a = atol if atol is not None else r * max(scale, np.finfo(ref.dtype).tiny)
            self.tol = (a + r * np.abs(ref)).astype(np.abs(ref).dtype)

    def bad(self, out):
        """A mask of the elements that differ (None: none do)."""
        import numpy as np
        out = np.asarray(out)
        if self.float:
            with np.errstate(invalid="ignore", over="ignore"):      # inf - inf, NaN: see odd
                diff = np.subtract(out, self.ref)
                diff = np.abs(diff, out=diff) if diff.dtype.kind == "f" else np.abs(diff)
                ok = np.less_equal(diff, self.tol)
            if self.odd is not None:      # NaN matches NaN, an infinity itself
                same = (out == self.ref) | (np.isnan(out) & np.isnan(self.ref))
                ok[self.odd] = same[self.odd]
            if ok.all():
                return None
            return ~ok
        bad = out != self.ref
        return bad if bad.any() else None

    def why(self, out) -> str | None:
        """Why ``out`` is not the reference (None when it matches)."""
        import numpy as np
        out = np.asarray(out)
        name, ref = self.name, self.ref
        if out.shape != ref.shape:
            return f"{name} has shape {out.shape}, the reference {ref.shape}"
        bad = self.bad(out)
        if bad is None:
            return None
        count = int(np.count_nonzero(bad))
        first = np.unravel_index(int(np.argmax(bad)), bad.shape) if bad.ndim else ()
        where = f"[{', '.join(str(int(i)) for i in first)}]" if first else ""
        got, want = np.asarray(out[first]).item(), np.asarray(ref[first]).item()
        return (f"{name} differs at {count} of {bad.size} elements (first at {name}{where}: "
                f"{got!r}, expected {want!r})")


def differs(name: str, out, ref, rtol: float | None, atol: float | None) -> str | None:
    """Why ``out`` is not ``ref`` (None when it matches); see :class:`Reference`."""
    return Reference(name, ref, rtol, atol).why(out)


def references(arrays: Mapping[str, Any], rtol=None, atol=None) -> dict:
    """``{name: Reference}`` for the expected arrays."""
    return {name: Reference(name, a, rtol, atol) for name, a in arrays.items()}


def check(outputs: Mapping[str, Any], refs: Mapping[str, Reference]) -> str | None:
    """Why ``outputs`` are not the references (the first difference), or None."""
    for name, ref in refs.items():
        if name in outputs:
            why = ref.why(outputs[name])
            if why:
                return why
    return None


# ------------------------------------------------------------------------------- the job

class _DeviceArray:
    """A device buffer shaped like a NumPy array, passed to kernels by pointer
    (``__cuda_array_interface__``): filled from the host or from another buffer on the GPU."""

    def __init__(self, shape, dtype, source=None):
        import numpy as np
        from .driver import api, check
        drv = api()
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.ptr = check(drv.cuMemAlloc(max(self.nbytes, 1)), "allocating a sweep buffer")
        if isinstance(source, _DeviceArray):
            check(drv.cuMemcpyDtoD(self.ptr, source.ptr, self.nbytes), "copying a sweep buffer")
        elif source is not None and self.nbytes:
            host = np.ascontiguousarray(source)
            check(drv.cuMemcpyHtoD(self.ptr, host.ctypes.data, self.nbytes), "uploading an array")

    @classmethod
    def upload(cls, host) -> "_DeviceArray":
        return cls(host.shape, host.dtype, host)

    @classmethod
    def copy_of(cls, other: "_DeviceArray") -> "_DeviceArray":
        return cls(other.shape, other.dtype, other)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (int(self.ptr), False),
                "strides": None, "version": 3}

    def get(self):
        import numpy as np
        from .driver import api, check
        host = np.empty(self.shape, self.dtype)
        if self.nbytes:
            check(api().cuMemcpyDtoH(host.ctypes.data, self.ptr, self.nbytes), "reading an output")
        return host

    def free(self) -> None:
        from .driver import api
        if self.ptr is not None:
            api().cuMemFree(self.ptr)
            self.ptr = None


def _arg(a, arrays):
    kind = a[0]
    if kind == "array":
        return arrays[a[1]]
    if kind in ("value", "bytes"):
        return a[1]
    return None


def run_job(job: Job, gpu: str = "", shared: Mapping[str, _DeviceArray] | None = None,
            reference: tuple | None = None) -> Outcome:
    """Replay ``job``'s launches once, then time each (in this process: the helper's side).

    The arrays live on the GPU for the whole job: fresh buffers copied on the GPU from
    ``shared`` (the arrays every job of the sweep uses, uploaded once) or uploaded from the
    job's own; the outputs are read back after the replay, and the timing reuses the buffers.
    With ``reference`` (``{name: Reference}``) holding every output, the outputs are compared
    here and only the verdict goes back; otherwise the outputs do."""
    from . import bench, driver
    from .kernel import Kernel
    started = time.perf_counter()

    class _Binary:
        key = "sweep:" + hashlib.sha256(job.binary).hexdigest()
        binary, format, arch, source = job.binary, job.format, job.arch, ""

    result = _Binary()
    timings = []
    buffers: dict = {}
    try:
        kernels = {name: Kernel(name, params, result, symbol) for name, (symbol, params)
                   in job.kernels.items()}
        names = {a[1] for launch in job.launches for a in launch.args if a[0] == "array"}
        for name in sorted(names):
            own = job.arrays.get(name)
            buffers[name] = _DeviceArray.upload(own) if own is not None else \
                _DeviceArray.copy_of((shared or {})[name])
        for launch in job.launches:
            kernels[launch.kernel]._run(tuple(launch.dims), launch.shared, 0,
                                        tuple(_arg(a, buffers) for a in launch.args))
        driver.synchronize()
        outputs = {name: buffers[name].get() for name in job.outputs}
        if job.bench is not None:
            for launch in job.launches:
                args = [_arg(a, buffers) for a in launch.args]
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
                       checked=True, wrong=check(outputs, reference))
    return Outcome(job.index, "ok", outputs=outputs, timings=tuple(timings), gpu=gpu,
                   seconds=seconds)


def _label() -> str:
    from .bench import device_info
    name = device_info().name
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return f"GPU {visible or 0} ({name})"


# ------------------------------------------------------------------------- the protocol

def _send(fd: int, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_FRAME.pack(len(data)) + data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, left = [], n
    while left:
        if deadline is not None:
            wait_s = deadline - time.monotonic()
            if wait_s <= 0 or not select.select([fd], [], [], wait_s)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _recv(fd: int, deadline: float | None = None):
    (n,) = _FRAME.unpack(_read(fd, _FRAME.size, deadline))
    return pickle.loads(_read(fd, n, deadline))


def serve(inp: int, out: int) -> None:
    """The helper's loop: a ready message with its GPU, then one Outcome per Job (an
    ``("arrays", {...})`` message sets the arrays every later job shares); it exits after a
    fault (CUDA is over for this process) or at end of input."""
    from . import driver
    try:
        gpu = _label()
    except Exception as exc:
        _send(out, ("failed", f"{type(exc).__name__}: {exc}"))
        return
    _send(out, ("ready", gpu))
    shared: dict = {}
    reference = None
    failed = ""
    while True:
        try:
            job = _recv(inp)
        except EOFError:
            return
        if isinstance(job, tuple) and job[0] == "reference":
            reference = references(*job[1])
            continue
        if isinstance(job, tuple) and job[0] == "arrays":
            for buf in shared.values():
                buf.free()
            shared, failed, reference = {}, "", None
            try:
                for name, a in job[1].items():
                    shared[name] = _DeviceArray.upload(a)
            except Exception as exc:     # out of memory: each job then fails, saying why
                failed = f"the sweep's arrays could not be put on the GPU: {exc}"
            continue
        outcome = run_job(job, gpu, shared, reference) if not failed else \
            Outcome(job.index, "error", failed, "SweepError", gpu=gpu)
        _send(out, outcome)
        if driver.lost() is not None:
            return


def main() -> int:
    # The protocol owns the original stdout; anything the kernels or libraries print goes to
    # stderr, so it cannot corrupt a frame.
    out = os.dup(1)
    os.dup2(2, 1)
    serve(0, out)
    return 0


# ------------------------------------------------------------------------- one helper

class Helper:
    """One helper process on one GPU (``gpu``: its ``CUDA_VISIBLE_DEVICES`` value; None keeps
    this process's).  :meth:`run` starts it when needed and restarts it after a fault."""

    def __init__(self, gpu: str | None = None):
        self.gpu = gpu
        self.proc: subprocess.Popen | None = None
        self.label = ""
        self._log = None
        self._shared = None         # the token of the arrays this process holds
        self._reference = None      # the token of its reference outputs

    def share(self, token, arrays: Mapping[str, Any]) -> None:
        """Send the arrays every job of a sweep uses, once per process (``token`` names them)."""
        self.start()
        self._ready()
        if token != self._shared:
            _send(self.proc.stdin.fileno(), ("arrays", dict(arrays)))
            self._shared, self._reference = token, None

    def refer(self, token, reference: tuple | None) -> None:
        """Send the reference outputs (arrays, rtol, atol), once per process and sweep: later
        jobs are checked there and send back a verdict, not their outputs."""
        if reference is not None and token != self._reference:
            _send(self.proc.stdin.fileno(), ("reference", reference))
            self._reference = token

    def start(self) -> "Helper":
        """Start the process now (it readies CUDA while the caller goes on)."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        from .launcher import child_env
        env = child_env(**({"CUDA_VISIBLE_DEVICES": self.gpu} if self.gpu is not None else {}))
        self._log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "cuda_magic.runtime.sweep"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log, env=env)
        self.label = ""
        return self

    def _ready(self) -> None:
        if self.label:
            return
        try:
            kind, text = _recv(self.proc.stdout.fileno(), time.monotonic() + START_TIMEOUT_S)
        except (EOFError, TimeoutError, OSError) as exc:
            tail = self._tail()
            self.close()
            raise SweepError(f"a helper process for GPU {self.gpu or 0} did not start"
                             f"{' in time' if isinstance(exc, TimeoutError) else ''}"
                             + (f": {tail}" if tail else "")) from None
        if kind != "ready":
            self.close()
            raise SweepError(f"the helper process for GPU {self.gpu or 0} has no GPU: {text}")
        self.label = text

    def _tail(self) -> str:
        if self._log is None:
            return ""
        try:
            self._log.seek(0)
            lines = [ln for ln in self._log.read().decode(errors="replace").splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        return "; ".join(lines[-3:])[-600:]

    def run(self, job: Job) -> Outcome:
        """Run ``job`` here; a dead or hung helper becomes the job's Outcome."""
        self.start()
        self._ready()
        began = time.monotonic()
        try:
            _send(self.proc.stdin.fileno(), job)
            outcome = _recv(self.proc.stdout.fileno(), began + job.timeout)
        except TimeoutError:
            self.close()
            return Outcome(job.index, "timeout", f"still running after {job.timeout:g} s: the "
                           f"helper process was ended", gpu=self.label,
                           seconds=time.monotonic() - began)
        except (EOFError, OSError):
            tail = self._tail()
            label = self.label
            self.close()
            return Outcome(job.index, "fault", f"the helper process ended{': ' + tail if tail else ''}",
                           gpu=label, seconds=time.monotonic() - began)
        except Exception as exc:       # an answer that cannot be read: this helper is done
            label = self.label
            self.close()
            return Outcome(job.index, "error", f"unreadable answer from the helper process: "
                           f"{type(exc).__name__}: {str(exc)[:300]}", type(exc).__name__,
                           gpu=label, seconds=time.monotonic() - began)
        outcome.wall = time.monotonic() - began
        if outcome.status == "fault":
            self.close()
        return outcome

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                proc.stdin.close()
                proc.wait(2)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
            proc.stdout.close()
        self._shared = self._reference = None
        if self._log is not None:
            self._log.close()
            self._log = None
        self.label = ""


# ------------------------------------------------------------------------- pools

def _visible(count: int) -> list[str]:
    """``CUDA_VISIBLE_DEVICES`` values naming each of this process's ``count`` GPUs."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        return [str(i) for i in range(count)]
    names = [n.strip() for n in env.split(",") if n.strip()]
    return names[:count]


class LocalPool:
    """One helper per GPU of this host (``gpus``: device ordinals as this process counts them);
    jobs go to whichever helper is free.  Helpers start at once, in the background, and stay
    for the next sweep (:func:`local_pool`); :meth:`begin` gives a sweep its arrays."""

    kind = "local"

    def __init__(self, gpus: Sequence[int], arrays: Mapping[str, Any] | None = None):
        self.gpus = tuple(gpus)
        self.begin(arrays)
        names = _visible(max(gpus) + 1 if gpus else 0)
        self.helpers = [Helper(names[i]).start() for i in gpus]
        self._free = list(self.helpers)
        self._lock = threading.Condition()
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(self.helpers)),
                                        thread_name_prefix="cuda-magic sweep")

    def begin(self, arrays: Mapping[str, Any] | None) -> "LocalPool":
        """A new sweep: its arrays go to each helper once, before its first job there."""
        self.arrays = dict(arrays or {})
        self.token = os.urandom(8).hex()
        self.reference = None
        return self

    def set_reference(self, arrays: Mapping[str, Any], rtol, atol) -> None:
        """The outputs every later job is compared with, in its helper."""
        self.reference = (dict(arrays), rtol, atol)

    def describe(self) -> str:
        return f"{len(self.helpers)} GPU{'s' * (len(self.helpers) != 1)} of this host"

    def submit(self, job: Job):
        return self._pool.submit(self._run, job)

    def _run(self, job: Job) -> Outcome:
        with self._lock:
            while not self._free:
                self._lock.wait()
            helper = self._free.pop(0)
        try:
            try:
                helper.share(self.token, self.arrays)
                helper.refer(self.token, self.reference)
            except (OSError, EOFError):     # it died since: start it again
                helper.close()
                helper.share(self.token, self.arrays)
                helper.refer(self.token, self.reference)
            return helper.run(job)
        finally:
            with self._lock:
                self._free.append(helper)
                self._lock.notify()

    @staticmethod
    def wait(pending, timeout: float):
        done, rest = _wait(pending, timeout=timeout, return_when=FIRST_COMPLETED)
        return done, rest

    @staticmethod
    def outcome(future, job: Job) -> Outcome:
        try:
            return future.result()
        except SweepError as exc:
            return Outcome(job.index, "error", str(exc), "SweepError")

    def close(self) -> None:
        """End the helpers now (a sweep was interrupted, or the session ends)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        for h in self.helpers:
            h.close()
        if _pools.get(self.gpus) is self:
            del _pools[self.gpus]


_pools: dict = {}        # gpus -> the LocalPool kept between sweeps


def local_pool(gpus: Sequence[int]) -> LocalPool:
    """The helpers for ``gpus``: the ones the last sweep on these GPUs used (they keep their CUDA
    context, so the next sweep starts at once), else new ones."""
    key = tuple(gpus)
    pool = _pools.get(key)
    if pool is None:
        for other in list(_pools.values()):     # one set of helpers per GPU at a time
            if set(other.gpus) & set(key):
                other.close()
        pool = _pools[key] = LocalPool(key)
    return pool


def close_pools() -> None:
    """End every helper process kept between sweeps (they hold a CUDA context on their GPU)."""
    for pool in list(_pools.values()):
        pool.close()


atexit.register(close_pools)


_worker: dict = {"helper": None, "lock": threading.Lock(), "reference": (None, None)}


def _dask_reference(token: str, reference: tuple) -> None:
    """On each worker (``client.run``): the reference outputs of sweep ``token``."""
    _worker["reference"] = (token, reference)


def dask_task(job: Job, arrays: Mapping[str, Any], token: str) -> Outcome:
    """One job on a Dask worker: through that worker's own helper process (started once,
    restarted after a fault), so a faulting kernel never takes the worker down; the sweep's
    arrays (``token``) go to that process once."""
    with _worker["lock"]:
        if _worker["helper"] is None:
            _worker["helper"] = Helper(None)
        helper = _worker["helper"]
        try:
            helper.share(token, arrays)
            ref_token, reference = _worker["reference"]
            if ref_token == token:
                helper.refer(token, reference)
        except (SweepError, OSError, EOFError) as exc:
            helper.close()
            return Outcome(job.index, "error", f"the helper process could not start: {exc}",
                           "SweepError")
        outcome = helper.run(job)
    try:
        from distributed import get_worker
        outcome.gpu = f"{get_worker().address} {outcome.gpu}".strip()
    except (ImportError, ValueError):
        pass
    return outcome


class DaskPool:
    """The jobs as tasks on a Dask cluster (``client``: a ``distributed.Client``).  The arrays
    are scattered to every worker once; each task ships its binary as bytes."""

    kind = "dask"

    def __init__(self, client, arrays: Mapping[str, Any]):
        try:
            import distributed
        except ImportError:
            raise SweepError("client= needs Dask: pip install 'cuda-magic[dask]' "
                             "(dask, distributed; dask-cuda for LocalCUDACluster)") from None
        if not isinstance(client, distributed.Client):
            raise SweepError(f"client= takes a dask.distributed.Client, not {type(client).__name__}")
        self.client = client
        self._distributed = distributed
        workers = client.scheduler_info().get("workers", {})
        if not workers:
            raise SweepError("the Dask cluster has no workers")
        self.workers = len(workers)
        self._arrays = client.scatter(dict(arrays), broadcast=True) if arrays else {}
        self._token = os.urandom(8).hex()

    def describe(self) -> str:
        return f"Dask, {self.workers} worker{'s' * (self.workers != 1)}"

    def submit(self, job: Job):
        return self.client.submit(dask_task, job, self._arrays, self._token, pure=False)

    def set_reference(self, arrays: Mapping[str, Any], rtol, atol) -> None:
        """The outputs later tasks are compared with on their worker (sent to every worker)."""
        self.client.run(_dask_reference, self._token, (dict(arrays), rtol, atol))

    def wait(self, pending, timeout: float):
        try:
            done, rest = self._distributed.wait(list(pending), timeout=timeout,
                                                return_when="FIRST_COMPLETED")
        except TimeoutError:
            return set(), set(pending)
        return set(done), set(rest)

    @staticmethod
    def outcome(future, job: Job) -> Outcome:
        try:
            return future.result()
        except Exception as exc:   # the task or its worker failed
            return Outcome(job.index, "error", f"the Dask task failed: {type(exc).__name__}: "
                           f"{str(exc)[:500]}", type(exc).__name__)

    def close(self) -> None:
        pass


if __name__ == "__main__":
    # run as the package's module, not as __main__, so what it pickles names cuda_magic's classes
    from cuda_magic.runtime import sweep as _sweep
    sys.exit(_sweep.main())
