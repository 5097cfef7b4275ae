"""Waiting for the GPU without blocking in the driver, so Ctrl-C works and a hang is an error.

Every wait cuda-magic does (the end of a launch on NumPy arrays, device printf, ``k.bench``,
``k.verify``, a synchronize on the user's behalf) polls ``cuStreamQuery``/``cuEventQuery``
instead of calling the blocking ``cu*Synchronize``: first busily for :data:`SPIN` seconds
(a short kernel's wait costs about what the driver's own spinning wait costs:
``benchmarks/bench_wait.py``), then sleeping between polls, never longer than a fiftieth of
the time waited so far nor :data:`STEP`.  The query returns the work's error, if any, as the
blocking call would (a printf kernel's wait then synchronises once, which flushes what it
printed: ``Kernel._printed``).

Past the launch time limit (``settings.launch_timeout``, :func:`set_launch_timeout`), or on
Ctrl-C during the wait, :func:`hung` reads where the warps wait (:mod:`.gdb`,
:mod:`.diagnosis`) and raises :class:`KernelHangError`.  A kernel cannot be stopped from the
process that launched it: CUDA here is then marked lost, as after a fault (later launches go
to the helper process); in the helper process the helper ends, which frees the GPU.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from ... import settings
from ...errors import KernelHangError
from .. import driver

__all__ = ["Launch", "poll", "stream", "event", "everything", "synchronize", "hung",
           "set_launch_timeout",
           "launch_timeout", "KernelHangError", "NOT_READY"]

NOT_READY = 600         # CUDA_ERROR_NOT_READY
SPIN = 0.005            # seconds polled without sleeping
STEP = 0.0002           # the longest sleep between two polls
_state = {"helper": False}   # True in the helper process (worker_main): its hang ends it


def set_launch_timeout(seconds: float | None) -> None:
    """A kernel still running after ``seconds`` is a hang: the wait raises
    :class:`KernelHangError` listing where its warps wait (``None`` or ``0``: no limit;
    default 60 s).  Sets ``cuda_magic.settings.launch_timeout``, overriding
    ``CUDA_MAGIC_LAUNCH_TIMEOUT`` for this process.  Ctrl-C ends any wait, limit or not."""
    settings.put("launch_timeout", seconds, by="set_launch_timeout")


def launch_timeout() -> float | None:
    """The launch time limit in force, in seconds (None: no limit)."""
    return settings.launch_timeout


@dataclass
class Launch:
    """What a wait waits for: a kernel's launch (``kernel`` None: the GPU's queued work)."""
    kernel: object = None
    dims: tuple = ()
    started: float = 0.0        # time.monotonic() when it was launched
    pid: int | None = None      # the process it runs in (None: this one)

    @classmethod
    def of(cls, kernel, dims) -> "Launch":
        return cls(kernel, tuple(dims), time.monotonic())

    @property
    def label(self) -> str:
        if self.kernel is None:
            return "the GPU's work"
        d = self.dims
        return (f"{self.kernel.name}[grid=({d[0]},{d[1]},{d[2]}), block=({d[3]},{d[4]},{d[5]})]"
                if len(d) == 6 else self.kernel.name)


def poll(query, handle=None, launch: Launch | None = None) -> int:
    """Call ``query(handle)`` (a cuda.bindings ``cu*Query``, returning ``(CUresult,)``) until
    it is not ``CUDA_ERROR_NOT_READY``; return that result as an int.  Past the launch time
    limit, counted from ``launch.started``, or on Ctrl-C: :func:`hung`'s KernelHangError."""
    err = query(handle)[0]
    if err != NOT_READY:
        return int(err)
    limit = settings.launch_timeout
    start = time.monotonic()
    since = launch.started if launch is not None and launch.started else start
    try:
        while True:
            now = time.monotonic()
            waited = now - start
            if waited > SPIN:
                time.sleep(min(waited / 50, STEP))
            err = query(handle)[0]
            if err != NOT_READY:
                return int(err)
            if limit is not None and now - since > limit:
                raise hung(launch, now - since, interrupted=False)
    except KeyboardInterrupt:
        if query(handle)[0] != NOT_READY:    # it ended meanwhile: an ordinary interrupt
            raise
        raise hung(launch, time.monotonic() - since, interrupted=True) from None


def stream(handle: int, launch: Launch | None = None, what: str = "waiting for the kernel") -> None:
    """Wait for the work queued on stream ``handle`` (0: the legacy default stream)."""
    if driver.lost() is not None:
        return
    err = poll(driver.api().cuStreamQuery, handle, launch)
    if err:
        driver.check((err,), what)


def event(ev, launch: Launch | None = None, what: str = "waiting for the kernel") -> None:
    """Wait for event ``ev`` to complete."""
    err = poll(driver.api().cuEventQuery, ev, launch)
    if err:
        driver.check((err,), what)


def everything(launch: Launch | None = None, what: str = "cuCtxSynchronize") -> None:
    """Wait for all work on the GPU (``cuCtxSynchronize``): the legacy default stream is
    polled first, which waits behind every blocking stream; work on non-blocking streams is
    then waited for by the driver (the watchdog reports a hang there)."""
    if driver.lost() is not None:
        return
    driver.context()
    drv = driver.api()
    err = poll(drv.cuStreamQuery, 0, launch)
    driver.check((err,) if err else drv.cuCtxSynchronize(), what)


def synchronize() -> None:
    """Wait for all work on the GPU (polled: Ctrl-C works; past the launch time limit a
    :class:`KernelHangError`); raises :class:`CudaError` if a kernel faulted.  Once CUDA is
    lost here, launches run in the helper process and finish before they return: nothing to
    wait for."""
    everything(None, "cuCtxSynchronize")


# ---- a hang -------------------------------------------------------------------------------

def _sm_count() -> int:
    try:
        drv = driver.api()
        return int(driver.check(drv.cuDeviceGetAttribute(
            drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, driver.device()),
            "cuDeviceGetAttribute"))
    except Exception:
        return 192


def read_warps(launch: Launch | None, snapshot: tuple | None = None):
    """``(Diagnosis or None, why not)`` for ``launch``'s kernel, read with cuda-gdb; never
    raises, never hangs (cuda-gdb runs under a time limit); Ctrl-C ends it.  ``snapshot``:
    ``(Snapshot or None, why not)`` already read elsewhere (a remote GPU's worker), put on
    this kernel's build here."""
    from . import diagnosis, gdb
    pid = launch.pid if launch is not None and launch.pid else os.getpid()
    if snapshot is not None:
        snap, why = snapshot
        if snap is None:
            return None, why
    else:
        try:
            snap = gdb.snapshot(pid, _sm_count())
        except gdb.Unavailable as exc:
            return None, str(exc)
        except KeyboardInterrupt:
            return None, "reading it was interrupted (Ctrl-C)"
    k = launch.kernel if launch is not None else None
    if k is None:
        return None, "no kernel of cuda-magic's was waited for"
    result = getattr(k, "result", None)

    def placed():
        from ...inspect.lines import placed as place
        return place(result, k.symbol)
    try:
        return diagnosis.diagnose(snap, k.name, k.symbol, launch.dims or None,
                                  placed if result is not None and k.symbol else None,
                                  getattr(result, "source", "") or ""), ""
    except KeyboardInterrupt:
        return None, "reading it was interrupted (Ctrl-C)"


HERE = ("A kernel cannot be stopped from the process that launched it: the GPU runs it until "
        "this Python kernel restarts (JupyterLab: Kernel > Restart Kernel; or run "
        "`import os; os._exit(0)` and Jupyter starts a fresh one). Until then CUDA here counts "
        "as lost, as after a fault: later launches run in a helper process (NumPy arguments); "
        "variables and compiled modules stay usable. For a kernel under development, launch "
        "in a helper process (cuda_magic.isolate(True), or k.launch(..., isolate=True)): a "
        "hang then ends only the helper, and the GPU is freed.")
HELPER = ("The helper process that ran it ends now, which frees the GPU; the next launch "
          "starts a new one.")


def hung(launch: Launch | None, seconds: float, *, interrupted: bool,
         helper: bool | None = None, snapshot: tuple | None = None) -> KernelHangError:
    """The KernelHangError for ``launch``, still running after ``seconds``: where its warps
    wait, and what now.  In this process (not the helper's, ``helper``): CUDA is marked lost.
    In the helper process itself nothing is read: the notebook, which has the kernel's build,
    reads the helper's warps before it ends it (:func:`..worker.call`); a remote GPU's worker
    reads them and the notebook places them (``snapshot``, see :func:`read_warps`)."""
    if _state["helper"] and (launch is None or launch.pid is None):
        diag, why = None, "the notebook reads it"
    else:
        diag, why = read_warps(launch, snapshot)
    helper = _state["helper"] or (launch is not None and launch.pid is not None) \
        if helper is None else helper
    cause = ("the wait was interrupted (Ctrl-C)" if interrupted else
             f"past the launch time limit of {settings.launch_timeout:g} s "
             f"(cuda_magic.set_launch_timeout(seconds or None), "
             f"{settings.TABLE['launch_timeout'].env})")
    label = launch.label if launch is not None else "the GPU's work"
    where = diag.text() if diag is not None else f"Where its warps wait is not known: {why}."
    after = HELPER if helper else HERE
    message = f"{label} still running after {seconds:.1f} s: {cause}.\n{where}\n{after}"
    if not helper and driver._state["lost"] is None:
        driver._state["lost"] = f"{label} hung (still running on the GPU)"
    d = launch.dims if launch is not None and len(launch.dims) == 6 else (None,) * 6
    return KernelHangError(message, kernel=getattr(getattr(launch, "kernel", None), "name", ""),
                           grid=d[:3], block=d[3:], seconds=seconds, diagnosis=diag,
                           why_not=why, interrupted=interrupted)
