"""The notebook's end of a sweep: a :class:`Helper` per GPU, and the pools that give out jobs.

:class:`LocalPool` keeps one helper per GPU of this host and gives each job to whichever is
free; :class:`DaskPool` runs the same jobs as Dask tasks, each worker with a helper of its own
(``dask-cuda``'s ``LocalCUDACluster`` pins one worker per GPU); the arrays travel to the
workers once (``client.scatter``), the binaries with their jobs.  A helper that dies or hangs
becomes its job's Outcome (``fault``, ``timeout``), and the next job starts a fresh one.

Ending a sweep (Ctrl-C) ends what it started: :meth:`LocalPool.close` ends its helpers all at
once (their input closed together, one grace period for all, then killed), and
:meth:`DaskPool.close` cancels the sweep's tasks and ends the helper of every worker (a task
still waiting on its helper then returns at once).  A helper also ends on its own when the
notebook is gone (:func:`~.protocol.watch`).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait as _wait
from typing import Any, Mapping, Sequence

from ..helper import transport
from .jobs import Job, Outcome, SweepError
from .protocol import ARRAYS, READY, REFERENCE

__all__ = ["Helper", "LocalPool", "DaskPool", "local_pool", "close_pools", "dask_task",
           "START_TIMEOUT_S", "GRACE_S", "MODULE"]

START_TIMEOUT_S = 120.0      # a helper's start: Python, NumPy, CUDA's context
GRACE_S = 2.0                # a helper's time to end after its input closes, before it is killed
MODULE = "cuda_magic.runtime.sweep"


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
            transport.send(self.proc.stdin.fileno(), (ARRAYS, dict(arrays)))
            self._shared, self._reference = token, None

    def refer(self, token, reference: tuple | None) -> None:
        """Send the reference outputs (arrays, rtol, atol, formats), once per process and sweep: later
        jobs are checked there and send back a verdict, not their outputs."""
        if reference is not None and token != self._reference:
            transport.send(self.proc.stdin.fileno(), (REFERENCE, reference))
            self._reference = token

    def start(self) -> "Helper":
        """Start the process now (it readies CUDA while the caller goes on)."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        env = transport.child_env(**({"CUDA_VISIBLE_DEVICES": self.gpu} if self.gpu is not None
                                     else {}))
        self._log = tempfile.TemporaryFile()
        self.proc = transport.spawn(MODULE, env, stderr=self._log)
        self.label = ""
        self._shared = self._reference = None      # a new process holds no arrays yet
        return self

    def _ready(self) -> None:
        if self.label:
            return
        try:
            kind, text = transport.recv(self.proc.stdout.fileno(), time.monotonic() + START_TIMEOUT_S)
        except (EOFError, TimeoutError, OSError) as exc:
            tail = self._tail()
            self.close()
            raise SweepError(f"a helper process for GPU {self.gpu or 0} did not start"
                             f"{' in time' if isinstance(exc, TimeoutError) else ''}"
                             + (f": {tail}" if tail else "")) from None
        if kind != READY:
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
            transport.send(self.proc.stdin.fileno(), job)
            outcome = transport.recv(self.proc.stdout.fileno(), began + job.timeout)
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

    def kill(self) -> None:
        """Kill the process now, from any thread: a call waiting on it (:meth:`run`) then
        returns at once, and cleans up."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                proc.kill()
            except OSError:
                pass

    def end(self):
        """Ask the process to end (its input closes) and forget it; :func:`finish` waits for it.
        Returns what :func:`finish` takes."""
        proc, self.proc = self.proc, None
        log, self._log = self._log, None
        self._shared = self._reference = None
        self.label = ""
        if proc is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        return proc, log

    def close(self) -> None:
        finish([self.end()])


def finish(ended, grace: float | None = None) -> None:
    """Wait for helpers that :meth:`Helper.end` asked to end, ``grace`` seconds for all of them
    together (not each in turn), then kill those still running."""
    deadline = time.monotonic() + (GRACE_S if grace is None else grace)
    for proc, _ in ended:
        if proc is None:
            continue
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
    for proc, log in ended:
        if proc is not None:
            try:
                proc.wait()
                proc.stdout.close()
            except OSError:
                pass
        if log is not None:
            log.close()


class LocalPool:
    """One helper per GPU of this host (``gpus``: device ordinals as this process counts them);
    jobs go to whichever helper is free.  Helpers start at once, in the background, and stay
    for the next sweep (:func:`local_pool`); :meth:`begin` gives a sweep its arrays."""

    kind = "local"

    def __init__(self, gpus: Sequence[int], arrays: Mapping[str, Any] | None = None):
        self.gpus = tuple(gpus)
        self.begin(arrays)
        self.helpers = [Helper(transport.visible_device(i)).start() for i in gpus]
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

    def set_reference(self, arrays: Mapping[str, Any], rtol, atol, formats=None) -> None:
        """The outputs every later job is compared with, in its helper (``formats``: the
        number format of each array of bit patterns, by name)."""
        self.reference = (dict(arrays), rtol, atol, dict(formats or {}))

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
        finish([h.end() for h in self.helpers])      # together: one grace period for all
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


_worker: dict = {"helper": None, "lock": threading.Lock(), "reference": (None, None),
                 "stopped": set()}


def _dask_stop(token: str | None = None) -> None:
    """On each worker (``client.run``, and at the worker's exit): sweep ``token`` is over, so
    its tasks still queued there start no helper, and the worker's helper process is killed now
    (without the task lock: a task waiting on that helper returns at once)."""
    if token is not None:
        _worker["stopped"].add(token)
    helper = _worker["helper"]
    if helper is not None:
        helper.kill()


def _dask_reference(token: str, reference: tuple) -> None:
    """On each worker (``client.run``): the reference outputs of sweep ``token``."""
    _worker["reference"] = (token, reference)


def dask_task(job: Job, arrays: Mapping[str, Any], token: str) -> Outcome:
    """One job on a Dask worker: through that worker's own helper process (started once,
    restarted after a fault), so a faulting kernel never takes the worker down; the sweep's
    arrays (``token``) go to that process once."""
    with _worker["lock"]:
        if token in _worker["stopped"]:
            return Outcome(job.index, "error", "the sweep was stopped", "SweepError")
        if _worker["helper"] is None:
            _worker["helper"] = Helper(None)
            atexit.register(_dask_stop)
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
        self._futures: list = []

    def describe(self) -> str:
        return f"Dask, {self.workers} worker{'s' * (self.workers != 1)}"

    def submit(self, job: Job):
        future = self.client.submit(dask_task, job, self._arrays, self._token, pure=False)
        self._futures.append(future)
        return future

    def set_reference(self, arrays: Mapping[str, Any], rtol, atol, formats=None) -> None:
        """The outputs later tasks are compared with on their worker (sent to every worker)."""
        self.client.run(_dask_reference, self._token, (dict(arrays), rtol, atol, dict(formats or {})))

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
        """End the sweep now (Ctrl-C): cancel its tasks, and on every worker mark it stopped and
        kill that worker's helper process, so a task already running returns at once and no
        queued one starts a helper.  A cluster that is gone or broken is left as it is."""
        futures, self._futures = self._futures, []
        if futures:
            try:
                self.client.cancel(futures, force=True)
            except Exception:
                pass
        try:
            self.client.run(_dask_stop, self._token)
        except Exception:
            pass
