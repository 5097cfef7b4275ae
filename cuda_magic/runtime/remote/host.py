"""The worker's end of remote launches: :class:`Host`, a Dask actor on one worker.

It keeps one helper process per GPU of its worker (the same process ``isolate()`` starts in
the notebook's host, :mod:`..helper.main`, pinned to its GPU with ``CUDA_VISIBLE_DEVICES``),
and the binaries it was sent, by their key, so that each binary crosses the network once per
worker.  A call forwards the notebook's message to the GPU's helper and returns its answer;
a helper that faults, hangs or dies is ended here (its GPU freed) and the next call starts a
fresh one: the Dask worker itself never touches CUDA, so nothing a kernel does ends it.

A hang is read here, where the helper runs: cuda-gdb attaches to the helper (which allows
its parent to) and the answer carries its snapshot of the warps, which the notebook places on
the kernel's build (the SASS and the cell's lines are there).  :func:`stop` (a function that
``client.run`` calls, so that it runs while a call is waiting) ends a GPU's helper: Ctrl-C in
the notebook.

Calls are coroutines: the actor answers ``stop`` and calls for its other GPUs while one GPU's
call waits in a thread.
"""

from __future__ import annotations

import asyncio
import select
import subprocess
import threading
import time
from collections import OrderedDict
from dataclasses import replace

from ..helper import transport
from ..helper.worker import GRACE, MODULE

__all__ = ["Host", "stop", "KEEP"]

KEEP = 64            # binaries a host keeps (least recently used out first)
_HOSTS: dict[str, "Host"] = {}     # token -> the Host actor in this worker process


class Host:
    """One Dask worker's GPUs: a helper process per GPU, started on first use, and the
    binaries sent to it by key (``token``: the notebook session's, for :func:`stop`)."""

    def __init__(self, token: str):
        self.token = token
        self.helpers: dict[int, subprocess.Popen] = {}
        self.locks: dict[int, threading.Lock] = {}
        self.programs: OrderedDict = OrderedDict()
        self.sms: dict[int, int] = {}            # GPU -> its SMs (cuda-gdb reads each)
        _HOSTS[token] = self

    # -- what the notebook calls ----------------------------------------------------------
    async def devices(self) -> list[dict]:
        """Every GPU this worker sees (:func:`..driver.devices`, asked in a helper process)."""
        return await asyncio.to_thread(self._devices)

    async def call(self, device: int, sent: tuple, program=None) -> tuple:
        """Forward ``sent`` (a message of :func:`..helper.worker.message` whose program is
        replaced by its key, and the kernel's Entry after it) to GPU ``device``'s helper: its
        answer, or ``("need", key)`` when this host does not hold that binary (send it again
        with ``program``).  One binary holds several kernels: each call names its own."""
        return await asyncio.to_thread(self._call, int(device), sent, program)

    def held(self) -> list[str]:
        """The keys of the binaries this host holds."""
        return list(self.programs)

    # -- in the worker's threads ----------------------------------------------------------
    def _devices(self) -> list[dict]:
        listed = self._listed()
        self.sms = {d["index"]: d.get("sms", 192) for d in listed}
        return listed

    def _listed(self) -> list[dict]:
        proc = transport.spawn(MODULE, transport.child_env(tool_child=False),
                               stderr=subprocess.DEVNULL)
        try:
            transport.send(proc.stdin.fileno(), ("devices", None, None, None, None))
            status, value = transport.recv(proc.stdout.fileno(), time.monotonic() + 120)
        except (EOFError, OSError) as exc:
            raise RuntimeError(f"the GPU helper on this worker could not list its GPUs "
                               f"({exc})") from None
        finally:
            _end(proc)
        if status != "ok":
            if value[0] == "NoGPUError":        # a worker with no GPU (or no driver) has none
                return []
            raise RuntimeError(f"{value[0]}: {value[1]}")
        return value[0]

    def _call(self, device: int, sent: tuple, program) -> tuple:
        op, key, name, payload, limit, entry = sent
        if program is not None:
            self.programs[key] = program
        held = self.programs.get(key)
        if held is None:
            return ("need", key)
        if name not in held.kernels:          # another kernel of the same binary
            held = self.programs[key] = replace(held, kernels={**held.kernels, name: entry})
        self.programs.move_to_end(key)
        while len(self.programs) > KEEP:
            self.programs.popitem(last=False)
        with self.locks.setdefault(device, threading.Lock()):
            proc = self._helper(device)
            started = time.monotonic()
            try:
                transport.send(proc.stdin.fileno(), (op, held, name, payload, limit))
                if not _answered(proc, limit):      # the helper itself stopped answering
                    snapshot = _snapshot(proc.pid, self.sms.get(device, 192))
                    self.end(device, at_once=True)
                    return ("hang", (time.monotonic() - started, snapshot, ""))
                status, value = transport.recv(proc.stdout.fileno())
            except (EOFError, OSError) as exc:
                self.end(device)
                code = proc.poll()
                why = "it was stopped (Ctrl-C)" if code is not None and code < 0 else \
                    f"it died ({exc.__class__.__name__}, exit code {code})"
                return ("err", ("CudaError", f"the GPU helper process on this worker ended: "
                                f"{why}; the next launch starts a new one", "", True, None))
            if status == "err" and value[0] == "KernelHangError":
                snapshot = _snapshot(proc.pid, self.sms.get(device, 192))
                self.end(device, at_once=True)
                return ("hang", (value[4] or 0.0, snapshot, value[2]))
            if status == "err" and value[3]:        # sticky: CUDA there is gone
                self.end(device, at_once=True)
            return (status, value)

    def _helper(self, device: int) -> subprocess.Popen:
        proc = self.helpers.get(device)
        if proc is None or proc.poll() is not None:
            if proc is not None:
                _end(proc)
            proc = self.helpers[device] = transport.spawn(
                MODULE, transport.child_env(tool_child=False,
                                            CUDA_VISIBLE_DEVICES=transport.visible_device(device)))
        return proc

    def end(self, device: int | None = None, at_once: bool = False) -> None:
        """End GPU ``device``'s helper (None: every helper of this host); ``at_once``: killed,
        not given time to finish (its kernel still runs, or its CUDA is gone)."""
        for d in ([device] if device is not None else list(self.helpers)):
            proc = self.helpers.pop(d, None)
            if proc is not None:
                if at_once:
                    proc.kill()
                _end(proc)


def stop(token: str, device: int | None = None) -> bool:
    """End the helper of GPU ``device`` (None: all) of session ``token``'s host in this worker
    process; what ``client.run`` calls on Ctrl-C.  Whether there was a host."""
    host = _HOSTS.get(token)
    if host is None:
        return False
    for d in ([device] if device is not None else list(host.helpers)):
        proc = host.helpers.get(d)
        if proc is not None and proc.poll() is None:
            proc.kill()          # the waiting call sees the pipe end and returns
    return True


def _answered(proc: subprocess.Popen, limit) -> bool:
    """Wait for the helper's answer, polled; False well past the launch time limit (the
    helper's own waits report a hang at the limit: this is the backstop)."""
    fd = proc.stdout.fileno()
    started = time.monotonic()
    while not select.select([fd], [], [], 0.05)[0]:
        if proc.poll() is not None:
            return True         # the read that follows sees the pipe end
        if limit and time.monotonic() - started > 2 * limit + GRACE:
            return False
    return True


def _snapshot(pid: int, sms: int) -> tuple:
    """``(Snapshot or None, why not)``: the helper's resident warps, read here with cuda-gdb
    (only this worker can attach to its helper; the notebook places them on its build)."""
    from ..hang import gdb
    try:
        return gdb.snapshot(pid, sms), ""
    except gdb.Unavailable as exc:
        return None, f"{exc} (on the worker)"
    except Exception as exc:          # never lose the hang's report over its diagnosis
        return None, f"cuda-gdb on the worker failed: {type(exc).__name__}: {exc}"


def _end(proc: subprocess.Popen) -> None:
    try:
        proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(GRACE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for f in (proc.stdout,):
        if f is not None:
            f.close()
