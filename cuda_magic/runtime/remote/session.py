"""The notebook's end of remote launches: :func:`remote` connects, :class:`Remote` sends.

``cuda_magic.remote(target)`` takes a ``distributed.Client``, a scheduler address
(``"tcp://host:8786"``; ``security=``: Dask's ``Security`` for TLS) or None (launches run here
again).  While it is set, every launch that would go to the local helper process (see
:mod:`..helper.worker`) goes to a GPU of the cluster instead: the message is the same (the
binary the notebook built, the NumPy arrays and values), the worker's :class:`~.host.Host`
actor forwards it to a helper process on its GPU, and the answer comes back the same way
(outputs copied into the caller's arrays only from a complete answer).  Actor calls go from
this process to the worker directly, not through the scheduler.

The binary crosses once per worker: a call names it by key, and the host asks for the bytes
only when it does not hold them.  With no ``--arch``, a cell compiles for the remote GPU
(:func:`~cuda_magic.compile.arch.set_target_gpu`, asked once); a build the GPU cannot load is
refused here, before anything is sent, naming both.

Ctrl-C while a call waits ends that GPU's helper on the worker (``client.run`` of
:func:`.host.stop`, which does not wait behind the call) and raises KeyboardInterrupt; a
worker or scheduler that goes away is a :class:`RemoteError` naming its address.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass

from ... import settings
from ...compile.arch import pick_arch, set_target_gpu
from ...errors import ArgumentError, CudaError, KernelHangError, RemoteError, clip
from .. import driver
from ..hang import waiting
from ..helper import worker
from . import host as _host
from .across import across as _across

__all__ = ["GPU", "Remote", "remote", "current", "remote_gpus", "CONNECT_TIMEOUT_S"]

CONNECT_TIMEOUT_S = 20.0     # a scheduler that does not answer in this long is an error
_state: dict = {"session": None, "from_setting": None}


@dataclass(frozen=True)
class GPU:
    """One GPU of the cluster: its worker's address, its index there, and what it is."""

    worker: str
    index: int
    name: str
    arch: str
    memory: int
    driver: str

    @property
    def label(self) -> str:
        return f"{self.name} (GPU {self.index} of worker {self.worker})"


class Remote:
    """A connection to a Dask cluster whose GPUs run this notebook's launches."""

    def __init__(self, client, address: str, owned: bool):
        self.client, self.address, self.owned = client, address, owned
        self.token = uuid.uuid4().hex
        self.hosts: dict[str, object] = {}      # worker address -> its Host actor
        self.held: set[tuple[str, str]] = set()  # (worker, program key) sent there
        self.sent_bytes = 0                      # binary bytes sent (bench_remote reads it)
        self._gpus: list[GPU] | None = None
        self._lock = threading.RLock()           # the GPU list and the actors: made once
        self._local = threading.local()          # .gpu: the GPU this thread's launches use

    def __repr__(self) -> str:
        return f"<cuda_magic.remote {self.address}: {len(self.gpus())} GPU(s)>"

    # -- the cluster's GPUs ---------------------------------------------------------------
    def gpus(self) -> list[GPU]:
        """Every GPU of every worker (asked once; :meth:`refresh` asks again)."""
        with self._lock:
            if self._gpus is None:
                found = []
                workers = sorted(self._call(lambda: self.client.scheduler_info(),
                                            "the scheduler")["workers"])
                for w in workers:
                    listed = self._result(self.host(w).devices(), w)
                    found.extend(GPU(w, d["index"], d["name"], d["arch"], d["memory"],
                                     d["driver"]) for d in listed)
                if not found:
                    raise RemoteError(f"the Dask cluster at {self.address} has no GPU: its "
                                      f"{len(workers)} worker(s) see none")
                self._gpus = found
            return list(self._gpus)

    def refresh(self) -> list[GPU]:
        self._gpus = None
        return self.gpus()

    def gpu(self) -> GPU:
        """The GPU this thread's launches go to (the cluster's first, unless :meth:`using`)."""
        return getattr(self._local, "gpu", None) or self.gpus()[0]

    def using(self, gpu: GPU):
        """A context in which this thread's launches go to ``gpu``."""
        session = self

        class _Using:
            def __enter__(self):
                self.saved = getattr(session._local, "gpu", None)
                session._local.gpu = gpu

            def __exit__(self, *exc):
                session._local.gpu = self.saved
        return _Using()

    def host(self, worker_address: str):
        """The Host actor on ``worker_address`` (made on first use)."""
        actor = self.hosts.get(worker_address)
        if actor is not None:
            return actor
        with self._lock:                         # on= threads: one actor per worker
            actor = self.hosts.get(worker_address)
            if actor is not None:
                return actor
            future = self._call(lambda: self.client.submit(
                _host.Host, self.token, actor=True, workers=[worker_address],
                allow_other_workers=False, pure=False), worker_address)
            with self.client.as_current():    # the actor binds to this client, default or not
                actor = self.hosts[worker_address] = self._result(future, worker_address)
            return actor

    def across(self, kernel, method: str, on, *args, **kwargs):
        """``kernel.method(*args, **kwargs)`` on each GPU ``on`` names (``k.bench(...,
        on="all")``): an :class:`~.across.Across` table."""
        return _across(self, kernel, method, on, *args, **kwargs)

    # -- a call ---------------------------------------------------------------------------
    def call(self, kernel, op: str, *payload):
        """What :func:`..helper.worker.call` does, on this thread's GPU of the cluster."""
        gpu = self.gpu()
        kernel = image_for(kernel, gpu)
        where = f"on {gpu.label}"
        sent = worker.message(kernel, op, *payload, where=f"on the remote GPU {gpu.label}")
        op_, program, name, payload_, limit = sent
        light = (op_, program.key, name, payload_, limit, program.kernels[name])
        try:
            actor = self.host(gpu.worker)
        except RemoteError:
            self._forget(gpu)
            raise
        shipped = (gpu.worker, program.key) in self.held
        reply = self._wait(lambda: actor.call(gpu.index, light, None if shipped else program),
                           gpu)
        if reply[0] == "need":          # the host restarted, or let the binary go
            reply = self._wait(lambda: actor.call(gpu.index, light, program), gpu)
            shipped = False
        if not shipped:
            self.sent_bytes += len(program.binary)
        self.held.add((gpu.worker, program.key))

        if reply[0] == "hang":          # read on the worker, placed on this kernel's build
            seconds, snapshot, out = reply[1]
            if out:
                print(out, end="")
            exc = waiting.hung(waiting.Launch(kernel, tuple(worker.dims_of(op, payload)),
                                              pid=0), seconds, interrupted=False, helper=True,
                               snapshot=snapshot)
            exc.args = (f"{exc.args[0]} [{where}]",)
            raise exc

        def hung(seconds):              # the helper's own hang report: answered as "hang"
            return KernelHangError(f"{kernel.name} hung [{where}]", kernel=kernel.name)
        result = worker.answer(reply, worker.args_of(op, payload), hung, ended=lambda: None,
                               where=f"{where}, whose helper ended; the next launch starts a "
                                     f"new one")
        if result is not None and hasattr(result, "__dict__"):
            try:
                result.ran_on = gpu.label     # the Timing, the report: which GPU ran it
            except AttributeError:
                pass
        return result

    def _wait(self, call, gpu: GPU):
        """The answer of the actor call ``call()`` makes; Ctrl-C ends the GPU's helper on the
        worker first; a worker or cluster gone is a RemoteError naming it."""
        try:
            return call().result()
        except KeyboardInterrupt:
            try:
                self.client.run(_host.stop, self.token, gpu.index, workers=[gpu.worker])
            except Exception:
                pass
            raise
        except Exception as exc:
            self._forget(gpu)
            raise RemoteError(f"the Dask worker {gpu.worker} ({gpu.name}, GPU {gpu.index}) "
                              f"did not answer: {type(exc).__name__}: {clip(str(exc), 300)}; "
                              f"nothing was written into your arrays") from None

    def _forget(self, gpu: GPU) -> None:
        """After ``gpu``'s worker failed a call: its actor, its binaries and the GPU list are
        asked again next time."""
        self.hosts.pop(gpu.worker, None)
        self._gpus = None
        self.held = {h for h in self.held if h[0] != gpu.worker}

    def _result(self, future, where: str):
        try:
            return future.result()
        except Exception as exc:
            raise RemoteError(f"the Dask worker {where} did not answer: "
                              f"{type(exc).__name__}: {clip(str(exc), 300)}") from None

    def _call(self, fn, where: str):
        try:
            return fn()
        except Exception as exc:
            raise RemoteError(f"{where} of the Dask cluster at {self.address} did not answer: "
                              f"{type(exc).__name__}: {clip(str(exc), 300)}") from None

    def close(self) -> None:
        """End every helper this session started on the cluster; close the client if it was
        made here."""
        try:
            self.client.run(_host.stop, self.token)
        except Exception:
            pass
        if self.owned:
            try:
                self.client.close()
            except Exception:
                pass


def image_for(kernel, gpu: GPU):
    """``kernel``, or the same kernel over its module's build that ``gpu`` runs (an arch
    list); a CudaError naming both archs when none runs there, before anything is sent."""
    r = kernel.result
    ptx = getattr(r, "format", "") == "ptx"
    if pick_arch([r.arch], gpu.arch, ptx=ptx) is not None:
        return kernel
    module = getattr(kernel, "module", None)
    archs = getattr(module, "archs", ())
    arch = pick_arch(list(archs), gpu.arch, ptx=ptx) if len(archs) > 1 else None
    if arch is not None:
        return module.kernel_for(kernel.name, arch)
    raise CudaError(f"{kernel.name}: built for {r.arch}, and {gpu.label} is {gpu.arch}: it "
                    f"cannot load that build (compile with --arch {gpu.arch}, or leave --arch "
                    f"out: under remote() a cell compiles for the remote GPU)",
                    "CUDA_ERROR_NO_BINARY_FOR_GPU")


def remote(target=None, *, security=None):
    """Run this notebook's launches on a GPU of a Dask cluster, or here again (``None``).

    ``target``: a ``distributed.Client``, or a scheduler address (``"tcp://gpu-box:8786"``,
    ``"tls://..."`` with ``security=``, Dask's ``distributed.Security``).  While set,
    ``k[grid, block](...)``, ``k.launch``, ``k.bench``, ``k.verify``, ``k.profile`` and
    ``k.check`` run on the cluster's first GPU (``k.bench(..., on="all")``: on each), with
    NumPy arrays and numbers (outputs come back into your arrays); CuPy and torch arrays are
    refused (they live on this machine's GPU).  With no ``--arch`` a cell compiles for that GPU.
    Whoever controls the cluster runs code: cuda-magic sends only the binary and the arrays.
    Returns the :class:`Remote` (its ``gpus()``), or None.  See docs/remote.md."""
    old = _state["session"]
    if target is None:
        _state["session"] = None
        driver._state["remote"] = None
        driver._state["isolated"] = bool(driver._state.get("isolate_asked", False))
        set_target_gpu(None)
        if old is not None:
            old.close()
        return None
    session = connect(target, security)
    try:
        session.gpus()                       # the cluster answers, and has a GPU
    except BaseException:
        session.close()
        raise
    _state["session"] = session
    if old is not None and old is not session:
        old.close()
    driver._state["remote"] = session
    driver._state["isolated"] = True         # the launch fast paths step aside
    set_target_gpu(lambda: session.gpu().arch)
    return session


def connect(target, security=None) -> Remote:
    """A :class:`Remote` over ``target`` (a Client or an address)."""
    try:
        import distributed
    except ImportError:
        raise RemoteError("remote GPUs need Dask: pip install 'cuda-magic[dask]' (dask, "
                          "distributed)") from None
    if isinstance(target, distributed.Client):
        return Remote(target, str(target.scheduler.address), owned=False)
    if not isinstance(target, str) or "://" not in target and ":" not in target:
        raise ArgumentError(f"remote({target!r}): a distributed.Client, a scheduler address "
                            f"such as 'tcp://gpu-box:8786', or None")
    try:
        client = distributed.Client(target, security=security, timeout=CONNECT_TIMEOUT_S,
                                    set_as_default=False, direct_to_workers=True)
    except Exception as exc:
        raise RemoteError(f"no Dask scheduler answered at {target}: {type(exc).__name__}: "
                          f"{clip(str(exc), 300)}") from None
    return Remote(client, target, owned=True)


def current() -> Remote | None:
    """The session in force: :func:`remote`'s, else the ``remote`` setting's
    (``CUDA_MAGIC_REMOTE``), connected on first use."""
    if _state["session"] is not None:
        return _state["session"]
    address = settings.remote
    if address:
        remote(address)
        return _state["session"]
    return None


def remote_gpus() -> list[GPU]:
    """The GPUs of the cluster that :func:`remote` connected to: worker, index, name, arch,
    memory and driver of each."""
    session = current()
    if session is None:
        raise RemoteError("no remote cluster: cuda_magic.remote('tcp://host:8786') first")
    return session.refresh()
