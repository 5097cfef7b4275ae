"""The run time of an exported kernel: the CUDA driver through ctypes, and nothing else.

cuda-magic copies this file, unchanged, into every export (a torch package's ``_driver.py``;
the body of a cubin export's ``kernel.py``), so an exported kernel runs where there is a GPU
driver and Python: no NVRTC, no toolkit, no cuda-magic, no cuda-python.  Standard library only.

A :class:`LoadedKernel` holds the builds of one kernel (one per arch, each the bytes the notebook
compiled), picks the one for each GPU it runs on (:func:`pick`), loads it with
``cuLibraryLoadData`` (context-independent: one load serves every GPU that takes that build)
and launches with ``cuLaunchKernel`` on the stream it is given, its parameters packed by a
``struct`` format that follows the binary's parameter layout.
Its invalid-context retry is its own (not runtime.driver's): this file runs without cuda-magic.
"""

import ctypes
import re
import struct
import sys
import threading

__all__ = ["CudaError", "Build", "LoadedKernel", "pick", "dims", "bf16", "stream_handle", "pointer"]


class CudaError(RuntimeError):
    """A CUDA driver call failed, or no build fits the GPU: ``.name`` is the driver's error name."""

    def __init__(self, message, name=None):
        super().__init__(message)
        self.name = name


_lock = threading.Lock()
_state = {}          # "lib": the driver library (ctypes), once loaded and initialised
_P, _U, _I = ctypes.c_void_p, ctypes.c_uint, ctypes.c_int
_SIGNATURES = {
    "cuInit": (_U,),
    "cuDriverGetVersion": (ctypes.POINTER(_I),),
    "cuGetErrorName": (_I, ctypes.POINTER(ctypes.c_char_p)),
    "cuDeviceGet": (ctypes.POINTER(_I), _I),
    "cuDeviceGetAttribute": (ctypes.POINTER(_I), _I, _I),
    "cuCtxGetDevice": (ctypes.POINTER(_I),),
    "cuCtxSetCurrent": (_P,),
    "cuDevicePrimaryCtxRetain": (ctypes.POINTER(_P), _I),
    "cuLibraryLoadData": (ctypes.POINTER(_P), ctypes.c_char_p, _P, _P, _U, _P, _P, _U),
    "cuLibraryGetKernel": (ctypes.POINTER(_P), _P, ctypes.c_char_p),
    "cuKernelSetAttribute": (_I, _I, _P, _I),
    "cuLaunchKernel": (_P, _U, _U, _U, _U, _U, _U, _U, _P, _P, _P),
}
_MAJOR, _MINOR = 75, 76                   # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / MINOR
_MAX_DYNAMIC_SHARED = 8                   # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
_INVALID_CONTEXT = 201                    # CUDA_ERROR_INVALID_CONTEXT
_DEFAULT_SHARED = 48 * 1024               # dynamic shared memory a launch gets without asking


def _driver():
    lib = _state.get("lib")
    if lib is not None:
        return lib
    with _lock:
        if "lib" in _state:
            return _state["lib"]
        names = ("nvcuda.dll",) if sys.platform == "win32" else ("libcuda.so.1", "libcuda.so")
        for name in names:
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        else:
            raise CudaError(f"no CUDA driver here ({names[0]} cannot be loaded): an exported "
                            f"kernel needs an NVIDIA GPU and its driver", "CUDA_ERROR_NO_DEVICE")
        for fn, args in _SIGNATURES.items():
            f = getattr(lib, fn, None)
            if f is None:
                raise CudaError(f"the CUDA driver here has no {fn}: an exported kernel needs a "
                                f"CUDA 12.0 or newer driver", "CUDA_ERROR_NOT_SUPPORTED")
            f.argtypes, f.restype = args, _I
        _check(lib, lib.cuInit(0), "cuInit")
        _state["lib"] = lib
        return lib


def _error_name(lib, code):
    name = ctypes.c_char_p()
    if lib.cuGetErrorName(code, ctypes.byref(name)) == 0 and name.value:
        return name.value.decode()
    return f"CUDA error {code}"


def _check(lib, code, what):
    if code:
        name = _error_name(lib, code)
        raise CudaError(f"{what} failed: {name}", name)


def compute_capability(device):
    """``(major, minor)`` of GPU ``device`` (an ordinal)."""
    lib = _driver()
    dev, major, minor = _I(), _I(), _I()
    _check(lib, lib.cuDeviceGet(ctypes.byref(dev), device), f"cuDeviceGet({device})")
    _check(lib, lib.cuDeviceGetAttribute(ctypes.byref(major), _MAJOR, dev), "cuDeviceGetAttribute")
    _check(lib, lib.cuDeviceGetAttribute(ctypes.byref(minor), _MINOR, dev), "cuDeviceGetAttribute")
    return major.value, minor.value


_ARCH = re.compile(r"sm_(\d+)(\d)([af]?)")


def pick(archs, major, minor, ptx=()):
    """Which of ``archs`` (``"sm_90a"``...) runs on a GPU of compute capability
    ``major.minor``, or None: its own compute capability first (any suffix), then machine code
    of the same major version and a lower minor (not ``a`` builds: those run only on their
    own), the highest first; then the archs in ``ptx`` (builds of PTX, which the driver
    compiles for any newer GPU), the highest first."""
    ranked = []
    for arch in archs:
        m = _ARCH.fullmatch(arch)
        if m is None:
            continue
        a, b, suffix = int(m[1]), int(m[2]), m[3]
        if (a, b) == (major, minor):
            ranked.append((0, 0, arch))
        elif suffix != "a" and a == major and b < minor:
            ranked.append((1, -b, arch))
        elif arch in ptx and suffix != "a" and (a, b) < (major, minor):
            ranked.append((2, -(a * 10 + b), arch))
    return min(ranked)[2] if ranked else None


class Build:
    """One binary of a kernel: its arch (``"sm_90a"``), format (``"cubin"``, ``"fatbin"`` or
    ``"ptx"``) and a function returning its bytes (read when first needed)."""

    def __init__(self, arch, fmt, read):
        self.arch, self.format, self.read = arch, fmt, read
        self.library = None


def _load(build):
    with _lock:
        if build.library is None:
            lib = _driver()
            data = build.read()
            if build.format == "ptx" and not data.endswith(b"\0"):
                data += b"\0"
            handle = _P()
            _check(lib, lib.cuLibraryLoadData(ctypes.byref(handle), data, None, None, 0, None,
                                              None, 0), f"cuLibraryLoadData({build.arch})")
            build.library = handle
    return build.library


def _current_context(device):
    """Make GPU ``device``'s primary context current on this thread (what the CUDA runtime,
    PyTorch's included, uses), when a launch found no context current."""
    lib = _driver()
    ctx = _P()
    _check(lib, lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device), "cuDevicePrimaryCtxRetain")
    _check(lib, lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


def _device():
    """The GPU of the context current on this thread; 0 where none is."""
    lib = _driver()
    dev = _I()
    return dev.value if lib.cuCtxGetDevice(ctypes.byref(dev)) == 0 else 0


def dims(v, what="grid"):
    """A launch's grid or block as three ints, from an int or a tuple of 1 to 3 positive ints."""
    if type(v) is int and 0 < v < 1 << 32:
        return (v, 1, 1)
    t = (v,) if isinstance(v, int) else tuple(v) if isinstance(v, (tuple, list)) else ()
    try:
        t = tuple(int(x) for x in t)
    except (TypeError, ValueError):
        t = ()
    if not 1 <= len(t) <= 3 or min(t) < 1 or max(t) >= 1 << 32:
        raise ValueError(f"{what} must be a positive int or 1 to 3 positive ints, not {v!r}")
    return t + (1,) * (3 - len(t))


def bf16(x, name="value"):
    """The bits of ``x`` as a bfloat16, rounded to nearest even (what ``__float2bfloat16`` does;
    through float32, as the notebook's launch converts it).  Beyond float32's range it is an
    OverflowError naming parameter ``name``, as in the notebook."""
    try:
        (u,) = struct.unpack("<I", struct.pack("<f", x))
    except OverflowError:
        raise OverflowError(f"parameter '{name}': {x!r} is out of range for bfloat16") from None
    if (u & 0x7F800000) == 0x7F800000 and u & 0x7FFFFF:
        return 0x7FC0 | ((u >> 16) & 0x8000)        # NaN stays NaN (the quiet one, its sign)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def stream_handle(s):
    """A stream's handle as an int: from None/0 (the legacy default stream), an int, or an
    object with ``cuda_stream`` (PyTorch), ``ptr`` (CuPy) or ``__cuda_stream__`` (cuda.core)."""
    if s is None:
        return 0
    if isinstance(s, int):
        return s
    for attr in ("cuda_stream", "ptr"):
        if hasattr(s, attr):
            return int(getattr(s, attr))
    if hasattr(s, "__cuda_stream__"):
        return int(s.__cuda_stream__()[1])
    return int(s)


def pointer(v, name):
    """A device address from an int, a PyTorch tensor (``data_ptr()``) or an object with
    ``__cuda_array_interface__`` (CuPy, Numba); None is the null pointer."""
    if v is None:
        return 0
    if isinstance(v, int):
        return v
    cai = getattr(v, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    if hasattr(v, "data_ptr"):
        return int(v.data_ptr())
    raise TypeError(f"parameter '{name}': give a device address (an int), a CUDA tensor or an "
                    f"array with __cuda_array_interface__, not {type(v).__name__}")


class LoadedKernel:
    """One exported kernel: ``name`` (as the notebook named it), ``symbol`` (its entry in the
    binary), ``signature`` (its C parameters, for messages), ``fmt`` (the ``struct`` format of
    its parameter buffer, offsets included), ``params`` (their names, in order), ``builds``
    and ``kinds`` (per parameter, how a launch converts what it is given: ``"p"`` a device
    address, ``"b"`` a bfloat16, ``"s<size>"`` raw bytes, ``"v"`` the value as it is).

    ``k[grid, block](*args)`` or ``k[grid, block, shared_bytes, stream](*args)`` launches it on
    the current context's GPU (GPU 0 where none is current), pointers given as ints or as
    arrays (PyTorch, CuPy, Numba).  ``launch(device, gx, gy, gz, bx, by, bz, shared, stream,
    *values)`` is the direct way: GPU ``device`` (an ordinal: the build for that GPU is picked
    and loaded at its first launch there), values already in the buffer's form."""

    def __init__(self, name, symbol, signature, fmt, offsets, params, builds, kinds=None):
        self.name, self.symbol, self.signature = name, symbol, signature
        self.params, self.builds = tuple(params), tuple(builds)
        self.kinds = tuple(kinds) if kinds is not None else ("v",) * len(self.params)
        self._struct = struct.Struct(fmt)
        self._buffer = ctypes.create_string_buffer(max(self._struct.size, 1))
        base = ctypes.addressof(self._buffer)
        self._pointers = (_P * max(len(offsets), 1))(*[base + off for off in offsets])
        self._address = ctypes.addressof(self._pointers) if offsets else None
        self._handles = {}          # device ordinal -> CUkernel
        self._shared = {}           # device ordinal -> dynamic shared bytes allowed
        self._lock = threading.Lock()

    def build_for(self, device):
        """The build that runs on GPU ``device``, or a CudaError saying which archs there are."""
        major, minor = compute_capability(device)
        ptx = tuple(b.arch for b in self.builds if b.format == "ptx")
        arch = pick([b.arch for b in self.builds], major, minor, ptx)
        if arch is None:
            have = ", ".join(b.arch + (" (PTX)" if b.format == "ptx" else "") for b in self.builds)
            raise CudaError(f"{self.name}: no build runs on GPU {device} (compute capability "
                            f"{major}.{minor}, sm_{major}{minor}); it was built for {have}: export "
                            f"again with this GPU's arch in the list (--arch)",
                            "CUDA_ERROR_NO_BINARY_FOR_GPU")
        return next(b for b in self.builds if b.arch == arch)

    def handle(self, device):
        """The CUkernel of the build for GPU ``device``, loaded now if it is not."""
        h = self._handles.get(device)
        if h is None:
            lib = _driver()
            build = self.build_for(device)
            library = _load(build)
            k = _P()
            _check(lib, lib.cuLibraryGetKernel(ctypes.byref(k), library, self.symbol.encode()),
                   f"cuLibraryGetKernel({self.symbol})")
            h = self._handles[device] = k.value
        return h

    def _allow_shared(self, device, shared):
        lib = _driver()
        dev = _I()
        _check(lib, lib.cuDeviceGet(ctypes.byref(dev), device), "cuDeviceGet")
        _check(lib, lib.cuKernelSetAttribute(_MAX_DYNAMIC_SHARED, shared, self.handle(device),
                                             dev), f"{self.name}: allowing {shared} bytes of "
               f"dynamic shared memory (cuKernelSetAttribute)")
        self._shared[device] = shared

    def launch(self, device, gx, gy, gz, bx, by, bz, shared, stream, *values):
        f = self._handles.get(device) or self.handle(device)
        if shared > self._shared.get(device, _DEFAULT_SHARED):
            self._allow_shared(device, shared)
        lib = _state["lib"]
        with self._lock:
            try:
                self._struct.pack_into(self._buffer, 0, *values)
            except (struct.error, OverflowError):
                raise self._bad_values(values) from None
            err = lib.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, self._address, None)
            if err == _INVALID_CONTEXT:             # a thread that never used this GPU
                _current_context(device)
                err = lib.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, self._address,
                                         None)
        if err:
            name = _error_name(lib, err)
            raise CudaError(f"{self.name}[({gx}, {gy}, {gz}), ({bx}, {by}, {bz}), {shared}]: "
                            f"cuLaunchKernel failed: {name}", name)

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if not 2 <= len(key) <= 4:
            raise TypeError(f"launch as {self.name}[grid, block](*args) or "
                            f"{self.name}[grid, block, shared_bytes, stream](*args)")
        g, b = dims(key[0], "grid"), dims(key[1], "block")
        shared = key[2] if len(key) > 2 else 0
        s = stream_handle(key[3] if len(key) > 3 else None)

        def run(*args):
            self.launch(_device(), *g, *b, shared, s, *self.values(args))
        return run

    def values(self, args):
        """``args`` in the parameter buffer's form: device addresses of arrays, bfloat16 bits."""
        if len(args) != len(self.params):
            raise TypeError(f"{self.name}({self.signature}) takes {len(self.params)} arguments, "
                            f"given {len(args)}")
        out = []
        for name, kind, v in zip(self.params, self.kinds, args):
            if kind == "p":
                v = pointer(v, name)
            elif kind == "b":
                v = bf16(v, name)
            elif kind[0] == "s":                       # "s16": a struct of 16 bytes
                v = bytes(v)
                if len(v) != int(kind[1:]):
                    raise TypeError(f"{self.name}({self.signature}): parameter '{name}' takes "
                                    f"{kind[1:]} bytes (the struct as the kernel lays it out), "
                                    f"given {len(v)}")
            out.append(v)
        return out

    def _bad_values(self, values):
        codes = re.findall(r"(\d*)([a-zA-Z?])", self._struct.format)
        codes = [c for c in codes if c[1] != "x"]
        for name, value, (n, code) in zip(self.params, values, codes):
            try:
                if code == "s" and len(value) != int(n):
                    raise struct.error(f"it is {len(value)} bytes; the kernel takes {n}")
                struct.pack("=" + n + code, value)
            except (struct.error, TypeError, OverflowError) as e:
                return TypeError(f"{self.name}({self.signature}): parameter '{name}' cannot take "
                                 f"{value!r}: {e}")
        return TypeError(f"{self.name}({self.signature}): takes {len(self.params)} values, "
                         f"given {len(values)}")
