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
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ..errors import Error

__all__ = ["Launch", "Job", "Outcome", "Helper", "LocalPool", "DaskPool", "run_job", "SweepError"]

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

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def median_ms(self) -> float | None:
        """The candidate's time: the sum of its launches' medians."""
        return sum(t.median_ms for t in self.timings) if self.timings else None


# ------------------------------------------------------------------------------- the job

def _arg(a, arrays):
    kind = a[0]
    if kind == "array":
        return arrays[a[1]]
    if kind in ("value", "bytes"):
        return a[1]
    return None


def run_job(job: Job, gpu: str = "") -> Outcome:
    """Replay ``job``'s launches once, then time each (in this process: the helper's side)."""
    from . import bench, driver
    from .kernel import Kernel
    started = time.perf_counter()

    class _Binary:
        key = "sweep:" + hashlib.sha256(job.binary).hexdigest()
        binary, format, arch, source = job.binary, job.format, job.arch, ""

    result = _Binary()
    kernels = {name: Kernel(name, params, result, symbol) for name, (symbol, params)
               in job.kernels.items()}
    arrays = {name: a.copy() for name, a in job.arrays.items()}
    timings = []
    try:
        for launch in job.launches:
            k = kernels[launch.kernel]
            k._run(tuple(launch.dims), launch.shared, 0, tuple(_arg(a, arrays) for a in launch.args))
        driver.synchronize()
        outputs = {name: arrays[name] for name in job.outputs}
        if job.bench is not None:
            for launch in job.launches:
                k = kernels[launch.kernel]
                args = [_arg(a, arrays) for a in launch.args]
                timings.append(bench.measure(k, tuple(launch.dims), args, launch.shared, 0,
                                             **job.bench))
    except Exception as exc:
        name = getattr(exc, "name", "") or type(exc).__name__
        message = str(exc).replace(getattr(driver, "LOST_NOTE", "\0"), "")
        status = "fault" if driver.lost() is not None else "error"
        return Outcome(job.index, status, message[:2000], name, gpu=gpu,
                       seconds=time.perf_counter() - started)
    return Outcome(job.index, "ok", outputs=outputs, timings=tuple(timings), gpu=gpu,
                   seconds=time.perf_counter() - started)


def _label() -> str:
    from . import driver
    from .driver import api, check
    dev = driver.device()
    name = check(api().cuDeviceGetName(100, dev), "cuDeviceGetName")
    name = name.split(b"\0", 1)[0].decode(errors="replace") if isinstance(name, bytes) else str(name)
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
    """The helper's loop: a ready message with its GPU, then one Outcome per Job; it exits
    after a fault (CUDA is over for this process) or at end of input."""
    from . import driver
    try:
        gpu = _label()
    except Exception as exc:
        _send(out, ("failed", f"{type(exc).__name__}: {exc}"))
        return
    _send(out, ("ready", gpu))
    while True:
        try:
            job = _recv(inp)
        except EOFError:
            return
        outcome = run_job(job, gpu)
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

    def start(self) -> "Helper":
        """Start the process now (it readies CUDA while the caller goes on)."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        env["CUDA_MAGIC_TOOL_CHILD"] = "1"
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.gpu
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
    jobs go to whichever helper is free.  Helpers start at once, in the background."""

    kind = "local"

    def __init__(self, gpus: Sequence[int], arrays: Mapping[str, Any] | None = None):
        self.arrays = dict(arrays or {})      # sent with every job
        names = _visible(max(gpus) + 1 if gpus else 0)
        self.helpers = [Helper(names[i]).start() for i in gpus]
        self._free = list(self.helpers)
        self._lock = threading.Condition()
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(self.helpers)),
                                        thread_name_prefix="cuda-magic sweep")

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
            return helper.run(replace(job, arrays={**self.arrays, **job.arrays}))
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
        self._pool.shutdown(wait=False, cancel_futures=True)
        for h in self.helpers:
            h.close()


_worker: dict = {"helper": None, "lock": threading.Lock()}


def dask_task(job: Job, arrays: Mapping[str, Any]) -> Outcome:
    """One job on a Dask worker: through that worker's own helper process (started once,
    restarted after a fault), so a faulting kernel never takes the worker down."""
    with _worker["lock"]:
        if _worker["helper"] is None:
            _worker["helper"] = Helper(None)
        outcome = _worker["helper"].run(replace(job, arrays={**arrays, **job.arrays}))
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

    def describe(self) -> str:
        return f"Dask, {self.workers} worker{'s' * (self.workers != 1)}"

    def submit(self, job: Job):
        return self.client.submit(dask_task, job, self._arrays, pure=False)

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
    sys.exit(main())
