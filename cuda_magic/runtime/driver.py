"""The CUDA driver, used lazily: context, errors, faults, in-memory module loading.

Nothing here runs at import.  The first launch initialises the driver and
makes device 0's primary context current (the one CuPy and PyTorch share;
``CUDA_VISIBLE_DEVICES`` picks the GPU).

A kernel fault (illegal address and the like) ends CUDA in the whole process:
measured on driver 580, after ``cuDevicePrimaryCtxReset`` even a new context
fails with the same error, as NVIDIA documents ("the process must be
terminated").  So the first such error is recorded (:func:`lost`), and the
runtime launches later kernels in a helper process (see ``worker``).
"""

from __future__ import annotations

import os
import sys
import threading

from ..compile.arch import detect_arch
from ..errors import CudaError, NoGPUError

__all__ = ["CudaError", "NoGPUError", "api", "context", "check", "synchronize", "load",
           "Library", "driver_version", "lost", "devices"]


_LOCK = threading.RLock()
_local = threading.local()
_state: dict = {"lost": None, "isolated": False}

# Errors after which the context cannot be used again (CUDA calls them "sticky").
_STICKY = {"CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_MISALIGNED_ADDRESS",
           "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ASSERT",
           "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_LAUNCH_TIMEOUT",
           "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_TENSOR_MEMORY_LEAK", "CUDA_ERROR_CONTAINED"}


def api():
    """``cuda.bindings.driver``, imported on first use; :class:`NoGPUError` if it cannot load."""
    drv = _state.get("api")
    if drv is None:
        try:
            from cuda.bindings import driver as drv
            drv.cuDriverGetVersion()  # loads libcuda; raises without one
        except Exception as exc:  # no libcuda.so: cuda.bindings raises a RuntimeError subclass
            raise NoGPUError(f"launching kernels needs an NVIDIA GPU and driver, and none was found "
                             f"({type(exc).__name__}: {exc}). Compiling and inspecting work without one.",
                             "NO_DRIVER") from None
        _state["api"] = drv
    return drv


def _error(drv, err, what: str) -> CudaError:
    if isinstance(err, int) and not hasattr(err, "name"):
        err = drv.CUresult(err)
    name = getattr(err, "name", str(err))
    _, text = drv.cuGetErrorString(err)
    text = text.decode() if isinstance(text, bytes) else str(text)
    return CudaError(f"{what}: {name} ({text})", name, int(err))


def check(result, what: str):
    """Unpack a ``cuda.bindings`` result tuple; raise :class:`CudaError` naming ``what`` on failure.

    A sticky error (a kernel faulted) is recorded: CUDA in this process is lost.
    """
    err = result[0]
    if err != 0:  # CUresult is an int enum; CUDA_SUCCESS == 0
        drv = api()
        exc = _error(drv, err, what)
        if exc.name in _STICKY:
            if _state["lost"] is None:
                _state["lost"] = str(exc)
            exc.args = (exc.args[0] + LOST_NOTE,)
        raise exc
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


LOST_NOTE = (". A kernel fault ends CUDA in this process for good (the driver allows no "
             "recovery; device memory from before, CuPy's and PyTorch's too, is gone). Later "
             "launches run in a helper process, with NumPy arguments; restart the Python kernel to "
             "launch in this process again.")


def int_launch():
    """CuPy's ``cupy.cuda.driver.launchKernel`` where CuPy is loaded in this process already,
    for the launch plan: cuLaunchKernel from Cython, its arguments plain ints (raises
    ``CUDADriverError`` on an error); on the H200 0.4-0.8 µs less per launch than
    cuda.bindings' ``cuLaunchKernel``, whose wrapper converts each argument
    (docs/performance.md).  None where CuPy is not imported (it is not imported for this), is
    a ROCm build, the driver is not cuda.bindings' (``benchmarks/fake_driver.py`` puts its
    stand-in here) or cuda.bindings launches on the per-thread default stream
    (``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM``: CuPy's call would take stream 0 as the
    legacy one)."""
    fn = _state.get("int_launch")
    if fn is not None or "int_launch" in _state:
        return fn
    if "cupy" not in sys.modules or getattr(api(), "__name__", "") != "cuda.bindings.driver":
        return None
    if os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "0") not in ("", "0"):
        return None
    try:
        from cupy.cuda import driver as cupy_driver, runtime as cupy_runtime
        if getattr(cupy_runtime, "is_hip", False):
            return None
        fn = cupy_driver.launchKernel
    except Exception:       # CuPy half-imported, or without it
        return None
    _state["int_launch"] = fn
    return fn


def lost() -> str | None:
    """The error that ended CUDA in this process, or None while it is usable."""
    return _state["lost"]


def remote():
    """The ``cuda_magic.remote()`` session launches go to, or None (they run here)."""
    return _state.get("remote")


def elsewhere() -> bool:
    """Whether launches go to a helper process (CUDA here is lost, ``isolate()`` is on, or
    ``remote()``: a GPU of a Dask cluster)."""
    return _state["lost"] is not None or _state["isolated"]


def context():
    """Make device 0's primary context current in this thread (initialising CUDA once)."""
    st = _state
    if getattr(_local, "ready", False):
        return st["ctx"]
    drv = api()
    with _LOCK:
        if "ctx" not in st:
            err, = drv.cuInit(0)
            if err != 0:
                raise _no_device(drv, err)
            err, count = drv.cuDeviceGetCount()
            if err != 0 or count == 0:
                raise NoGPUError("launching kernels needs an NVIDIA GPU; the driver found none"
                                 " (check CUDA_VISIBLE_DEVICES)", "NO_DEVICE")
            st["device"] = check(drv.cuDeviceGet(0), "cuDeviceGet")
            st["ctx"] = check(drv.cuDevicePrimaryCtxRetain(st["device"]), "cuDevicePrimaryCtxRetain")
        check(drv.cuCtxSetCurrent(st["ctx"]), "cuCtxSetCurrent")
        _local.ready = True
        return st["ctx"]


INVALID_CONTEXT = 201     # CUDA_ERROR_INVALID_CONTEXT


def call_in_context(call, *args, err=0):
    """The error code of the driver call ``call(*args)`` (its result's first item); where that is
    CUDA_ERROR_INVALID_CONTEXT (a thread that has not used CUDA yet) the primary context is made
    current (:func:`context`) and the call made again.  ``err``: the code of that call made
    already (0: not made yet)."""
    if not err:
        err = call(*args)[0]
    if int(err) == INVALID_CONTEXT:
        context()
        err = call(*args)[0]
    return err


def _no_device(drv, err) -> NoGPUError:
    exc = _error(drv, err, "cuInit")
    return NoGPUError(f"launching kernels needs an NVIDIA GPU: {exc}", exc.name, exc.code)


def device():
    context()
    return _state["device"]


def synchronize() -> None:
    """Wait for all work on the GPU; raises :class:`CudaError` if a kernel faulted.

    Once CUDA is lost here, launches run in the helper process and finish
    before they return, so there is nothing to wait for.
    """
    if _state["lost"] is not None:
        return
    context()
    check(api().cuCtxSynchronize(), "cuCtxSynchronize")


def driver_version() -> tuple[int, int]:
    """The CUDA version the driver supports, e.g. ``(13, 0)``."""
    v = check(api().cuDriverGetVersion(), "cuDriverGetVersion")
    return v // 1000, (v % 1000) // 10


def devices() -> list[dict]:
    """Every GPU this process sees, in ordinal order: ``index``, ``name``, ``arch`` (e.g.
    ``sm_90a``), ``memory`` (bytes), ``driver`` (the CUDA version it supports, ``"13.0"``) and
    ``sms`` (its multiprocessors);
    :class:`NoGPUError` without a driver.  No context is made (what ``remote_gpus()`` asks a
    worker)."""
    from ..compile.arch import arch_for
    drv = api()
    check(drv.cuInit(0), "cuInit")
    major, minor = driver_version()
    attr = drv.CUdevice_attribute
    out = []
    for i in range(int(check(drv.cuDeviceGetCount(), "cuDeviceGetCount"))):
        dev = check(drv.cuDeviceGet(i), "cuDeviceGet")
        cc = [int(check(drv.cuDeviceGetAttribute(getattr(attr, f"CU_DEVICE_ATTRIBUTE_COMPUTE_"
                                                             f"CAPABILITY_{part}"), dev),
                        "cuDeviceGetAttribute"))
              for part in ("MAJOR", "MINOR")]
        raw = check(drv.cuDeviceGetName(256, dev), "cuDeviceGetName")
        name = raw.split(b"\0")[0].decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        sms = check(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
                    "cuDeviceGetAttribute")
        out.append({"index": i, "name": name, "arch": arch_for(*cc),
                    "memory": int(check(drv.cuDeviceTotalMem(dev), "cuDeviceTotalMem")),
                    "driver": f"{major}.{minor}", "sms": int(sms)})
    return out


class Library:
    """One binary loaded with ``cuLibraryLoadData`` (no files); owns the handle."""

    def __init__(self, handle, image: bytes, jit_note: str = ""):
        self.handle, self.image, self.jit_note = handle, image, jit_note

    def kernel(self, symbol: str):
        return check(api().cuLibraryGetKernel(self.handle, symbol.encode()),
                     f"cuLibraryGetKernel({symbol!r})")

    def symbols(self) -> list[str]:
        drv = api()
        n = check(drv.cuLibraryGetKernelCount(self.handle), "cuLibraryGetKernelCount")
        kernels = check(drv.cuLibraryEnumerateKernels(n, self.handle), "cuLibraryEnumerateKernels")
        out = []
        for k in kernels:
            name = check(drv.cuKernelGetName(k), "cuKernelGetName")
            out.append(name.decode() if isinstance(name, bytes) else str(name))
        return out

    def __del__(self):
        try:
            _state["api"].cuLibraryUnload(self.handle)
        except Exception:  # interpreter shutdown
            pass


_LIBRARIES: dict[str, Library] = {}


def load(key: str, binary: bytes, fmt: str, arch: str) -> Library:
    """Load ``binary`` (cubin, fatbin or PTX) in memory; cached by ``key``.

    PTX the driver refuses as too new is compiled to cubin with nvJitLink;
    if that fails too, the error names both versions.
    """
    lib = _LIBRARIES.get(key)
    if lib is not None:
        return lib
    context()
    drv = api()
    image = binary + b"\0" if fmt == "ptx" and not binary.endswith(b"\0") else binary
    err, handle = _load_now(drv, image)
    note = ""
    if err != 0 and fmt == "ptx" and getattr(err, "name", "") == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION":
        image, note = _jit_link(binary, arch)
        err, handle = _load_now(drv, image)
    if err != 0:
        exc = _error(drv, err, f"loading the {fmt} for {arch}")
        if exc.name in ("CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_INVALID_IMAGE",
                        "CUDA_ERROR_INVALID_PTX"):
            gpu = detect_arch()
            exc.args = (exc.args[0] + f"; the GPU is {gpu}: compile for it (arch: {gpu}) or use "
                        f"--compile-only to inspect other GPUs' code",)
        raise exc
    lib = Library(handle, image, note)
    _LIBRARIES[key] = lib
    return lib


def _load_now(drv, image: bytes):
    """``cuLibraryLoadData``, then ``cuLibraryGetModule`` so that lazy loading (the default)
    cannot postpone a refusal (PTX too new, no code for this GPU) to the first launch."""
    err, handle = drv.cuLibraryLoadData(image, None, None, 0, None, None, 0)
    if err == 0:
        err = drv.cuLibraryGetModule(handle)[0]
        if err != 0:
            drv.cuLibraryUnload(handle)
    return err, handle


def _jit_link(ptx: bytes, arch: str) -> tuple[bytes, str]:
    """PTX -> cubin with nvJitLink, for PTX newer than the driver."""
    drv_major, drv_minor = driver_version()
    ptx_version = _ptx_isa(ptx)
    try:
        from cuda.bindings import nvjitlink
        ver = nvjitlink.version()
        handle = nvjitlink.create(1, [f"-arch={arch}"])
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, ptx, len(ptx), "cell.ptx")
            nvjitlink.complete(handle)
            size = nvjitlink.get_linked_cubin_size(handle)
            cubin = bytearray(size)
            nvjitlink.get_linked_cubin(handle, cubin)
        except Exception as exc:
            log = ""
            try:
                n = nvjitlink.get_error_log_size(handle)
                buf = bytearray(n)
                nvjitlink.get_error_log(handle, buf)
                log = buf.rstrip(b"\0").decode(errors="replace").strip()
            except Exception:
                pass
            raise RuntimeError(f"{exc}{': ' + log if log else ''}") from None
        finally:
            nvjitlink.destroy(handle)
    except Exception as exc:
        raise CudaError(
            f"the PTX (ISA {ptx_version}) is newer than the CUDA {drv_major}.{drv_minor} driver "
            f"accepts, and nvJitLink could not turn it into cubin either ({exc}). Compile to cubin "
            f"(target_format: cubin) or use a compiler no newer than the driver.",
            "CUDA_ERROR_UNSUPPORTED_PTX_VERSION") from None
    return bytes(cubin), (f"PTX ISA {ptx_version} is newer than the CUDA {drv_major}.{drv_minor} "
                          f"driver; compiled to cubin with nvJitLink {ver[0]}.{ver[1]}")


def _ptx_isa(ptx: bytes) -> str:
    import re
    m = re.search(rb"^\s*\.version\s+(\S+)", ptx, re.M)
    return m.group(1).decode() if m else "?"
