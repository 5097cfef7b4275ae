"""Argument marshalling: Python values -> one kernel-parameter buffer, by the parsed signature.

Scalars are packed with :mod:`struct` at the declared type (never a guessed
width; out-of-range values raise).  Pointers take NumPy arrays (staged on the
device, copied back for non-const pointees), objects with
``__cuda_array_interface__`` (CuPy, PyTorch, Numba: by pointer, no copy),
cuda.core Buffers, or ``None`` (a null pointer).  Structs by value take bytes
or a NumPy structured scalar of the kernel's parameter size.  References
(``const int& n``: an address in the ABI) take a device array holding the value,
function pointers an int device address, and declarations the parser could not
read only raw bytes of the compiled parameter's size.
"""

from __future__ import annotations

import ctypes
import numbers
import operator
import struct
from typing import Sequence

from ..config import Error
from .driver import api, check
from .types import Param, Scalar

__all__ = ["Packer", "ArgumentError", "ArgumentRangeError", "natural_layout", "release"]


class ArgumentError(Error, TypeError):
    """A kernel argument of the wrong count or type; the message names the parameter."""


class ArgumentRangeError(Error, OverflowError):
    """A number that does not fit the parameter's declared C type."""

_PTR = Scalar("Q", "uintp", 8)


def natural_layout(params: Sequence[Param]) -> list[tuple[int, int]]:
    """(offset, size) per parameter with C alignment; for when the driver cannot tell us."""
    out, off = [], 0
    for p in params:
        size = p.size
        if size is None:
            what = "struct" if p.kind == "struct" else "unparsed"
            raise ArgumentError(f"the size of {what} parameter '{p.name}' ({p.type}) is known only "
                                f"after loading the kernel")
        off = (off + size - 1) // size * size
        out.append((off, size))
        off += size
    return out


class Packer:
    """Packs one kernel's arguments into a reusable buffer; ``pack`` returns the ``void**`` address."""

    def __init__(self, kernel: str, params: Sequence[Param], layout: Sequence[tuple[int, int]]):
        self.kernel, self.params = kernel, tuple(params)
        if len(layout) != len(self.params):
            raise ArgumentError(f"{kernel}: the cell declares {len(self.params)} parameters but the "
                            f"compiled kernel takes {len(layout)}")
        fmt, pos, self.convs = ["="], 0, []
        for i, (p, (off, size)) in enumerate(zip(self.params, layout)):
            fmt.append("x" * (off - pos))
            fast: dict = {}   # argument type -> a one-argument check, for device arrays seen before
            kind = p.kind
            if kind == "unknown":
                code, conv = f"{size}s", _unknown(self, p, size)
            elif kind == "function":
                code, conv = "Q", _function(self, p)
            elif kind == "reference":
                code, conv = "Q", _reference(self, p, fast)
            elif kind == "pointer":
                code, conv = "Q", _pointer(self, p, fast)
            elif kind == "scalar":
                code, conv = p.scalar.code, _SCALAR_CONVS.get(p.type, lambda s, p: None)(self, p)
            else:
                code, conv = f"{size}s", _struct(self, p, size)
            if struct.calcsize("=" + code) != size:
                raise ArgumentError(f"{self._where(p)} is {struct.calcsize('=' + code)} bytes as parsed "
                                f"but the compiled kernel takes {size} bytes")
            fmt.append(code)
            pos = off + size
            if conv is not None:
                self.convs.append((i, fast, conv))
        self.struct = struct.Struct("".join(fmt))
        self.buffer = ctypes.create_string_buffer(max(self.struct.size, 1))
        base = ctypes.addressof(self.buffer)
        self.pointers = (ctypes.c_void_p * max(len(layout), 1))(*[base + off for off, _ in layout])
        self.address = ctypes.addressof(self.pointers) if layout else 0
        self.n = len(self.params)

    def _where(self, p: Param) -> str:
        return f"{self.kernel}(): parameter '{p.name}' ({p})"

    def pack(self, args: Sequence, staged: list) -> int:
        """Write ``args`` into the buffer; NumPy arrays are staged on the device into ``staged``."""
        if len(args) != self.n:
            raise ArgumentError(f"{self.kernel}() takes {self.n} argument{'s' * (self.n != 1)} "
                            f"({', '.join(str(p) for p in self.params)}), got {len(args)}")
        if self.convs:
            args = list(args)
            for i, fast, conv in self.convs:
                a = args[i]
                f = fast.get(type(a))
                args[i] = f(a) if f is not None else conv(a, staged)
            if staged:  # every argument checked: now copy NumPy arrays to the GPU
                _stage(staged, args, self.params)
        try:
            self.struct.pack_into(self.buffer, 0, *args)
        except (struct.error, TypeError, OverflowError, ValueError):
            self._diagnose(args)
            raise
        return self.address

    def _diagnose(self, args) -> None:
        for p, v in zip(self.params, args):
            if p.kind != "scalar":
                continue
            try:
                struct.pack("=" + p.scalar.code, v)
            except OverflowError:
                raise ArgumentRangeError(f"{self._where(p)}: {v!r} is out of range for {p.type}") from None
            except struct.error as exc:
                if "range" in str(exc) or "format requires" in str(exc):
                    raise ArgumentRangeError(f"{self._where(p)}: {v!r} is out of range for {p.type}") from None
                raise ArgumentError(f"{self._where(p)}: expected {_kind(p)}, got "
                                f"{type(v).__name__} {v!r}") from None


def _kind(p: Param) -> str:
    return "a float" if p.scalar.dtype.startswith(("float", "bfloat")) else "an integer"


# --- scalars that struct cannot take as they are --------------------------------------------

def _bool(packer: Packer, p: Param):
    def conv(v, staged):
        if v is True or v is False or (type(v).__name__ in ("bool_", "bool") and v in (0, 1)):
            return bool(v)
        if isinstance(v, int) and v in (0, 1):
            return bool(v)
        raise ArgumentError(f"{packer._where(p)}: expected a bool, got {type(v).__name__} {v!r}")
    return conv


def _bfloat16(packer: Packer, p: Param):
    f32 = struct.Struct("=f")
    u32 = struct.Struct("=I")

    def conv(v, staged):
        try:
            bits = u32.unpack(f32.pack(v))[0]
        except OverflowError:
            raise ArgumentRangeError(f"{packer._where(p)}: {v!r} is out of range for bfloat16") from None
        except (struct.error, TypeError):
            raise ArgumentError(f"{packer._where(p)}: expected a float, got {type(v).__name__} {v!r}") from None
        if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:
            return 0x7FC0 | ((bits >> 16) & 0x8000)  # NaN stays NaN
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF  # round to nearest even
    return conv


def _char(packer: Packer, p: Param):
    def conv(v, staged):
        if isinstance(v, (bytes, str)) and len(v) == 1:
            return ord(v)
        return v
    return conv


_SCALAR_CONVS = {"bool": _bool, "__nv_bfloat16": _bfloat16, "char": _char}


def _raw(v) -> bytes | None:
    """The bytes of a bytes-like object or a NumPy structured scalar; None for anything else."""
    if hasattr(v, "dtype") and getattr(v.dtype, "names", None) is not None:  # NumPy structured
        v = v.tobytes()
    if isinstance(v, (int, float, complex, str)) or v is None:
        return None
    try:
        return bytes(memoryview(v))
    except TypeError:
        return None


def _struct(packer: Packer, p: Param, size: int):
    return _exact_bytes(packer, p, size, f" is a struct passed by value: give bytes or a NumPy "
                                         f"structured scalar of {size} bytes")


def _unknown(packer: Packer, p: Param, size: int):
    return _exact_bytes(packer, p, size, f": this declaration could not be read, so its value "
                                         f"cannot be converted; pass its {size} bytes (bytes or a "
                                         f"NumPy structured scalar), or declare the parameter with "
                                         f"a plain type")


def _exact_bytes(packer: Packer, p: Param, size: int, what: str):
    """A parameter passed as its raw bytes (``size`` of them); ``what`` says why, for the error."""
    def conv(v, staged):
        data = _raw(v)
        if data is None:
            raise ArgumentError(f"{packer._where(p)}{what}, not {type(v).__name__}")
        if len(data) != size:
            raise ArgumentError(f"{packer._where(p)} is {size} bytes; got {len(data)} bytes")
        return data
    return conv


def _function(packer: Packer, p: Param):
    def conv(v, staged):
        if v is None:
            return 0
        if not isinstance(v, bool) and type(v).__name__ not in ("bool_", "bool"):
            try:
                address = operator.index(v)
            except TypeError:
                pass
            else:
                if not 0 <= address < 2**64:
                    raise ArgumentRangeError(f"{packer._where(p)}: {v!r} is no device address")
                return address
        raise ArgumentError(f"{packer._where(p)} is a function pointer: pass the function's device "
                            f"address as an int (e.g. copied from a __device__ variable that holds "
                            f"it), or None for a null pointer, not {type(v).__name__}")
    return conv


def _reference(packer: Packer, p: Param, fast: dict):
    inner = _pointer(packer, p, fast, p.scalar if not p.pointer else None)

    def conv(v, staged):
        if v is None:
            raise ArgumentError(f"{packer._where(p)} is a reference and cannot be null: pass a device "
                                f"array holding the value")
        if isinstance(v, numbers.Number) or (type(v).__module__ == "numpy"    # a NumPy scalar
                                             and type(v).__name__ != "ndarray"):
            raise ArgumentError(f"{packer._where(p)} is a reference: the kernel reads it through a "
                                f"pointer; pass a device array holding the value, or take it by value")
        return inner(v, staged)
    return conv


# --- pointers -----------------------------------------------------------------------------

def _pointer(packer: Packer, p: Param, fast: dict, pointee=False):
    """The full check of a pointer argument; it leaves a quick one in ``fast`` for device arrays.
    ``pointee``: the Scalar pointed to (None: any), if not ``p``'s own."""
    want = _Want((p.scalar if p.pointer == 1 else None) if pointee is False else pointee)
    writes = not p.const

    def conv(a, staged):
        handler = _HANDLERS.get(type(a))
        if handler is None:
            handler = _handler_for(type(a))
        ptr = handler(a, packer, p, want, writes, staged)
        if handler in _FAST:
            fast[type(a)] = _FAST[handler](packer, p, want, writes)
        return ptr
    return conv


class _Want:
    """A pointer parameter's pointee, with the verdict on each dtype seen."""

    __slots__ = ("scalar", "seen")

    def __init__(self, scalar: Scalar | None):
        self.scalar, self.seen = scalar, {}

    def accepts(self, key, name) -> bool:
        """Whether dtype ``key`` (a NumPy or torch dtype, or a typestr) may be passed; ``name()`` names it."""
        ok = self.seen.get(key)
        if ok is None:
            ok = self.seen[key] = _dtype_ok(self.scalar, name())
        return ok


def _dtype_ok(want: Scalar | None, name: str) -> bool:
    """Whether an array of dtype ``name`` may be passed as a pointer to ``want``."""
    if want is None:
        return True
    if want.dtype.startswith("float"):
        return name == want.dtype
    import numpy as np
    if name == "bfloat16":
        kind, size = "bf", 2
    else:
        try:
            d = np.dtype(name)
            kind, size = d.kind, d.itemsize
        except TypeError:
            kind, size = "?", 0
    if want.dtype == "bfloat16":
        return kind == "bf" or (kind in "iu" and size == 2)
    return kind in "iub" and size == want.size  # integers and bool: same size, either signedness


def _wrong_dtype(packer, p, want, name):
    verb = "refers" if p.reference else "points"
    return ArgumentError(f"{packer._where(p)} {verb} to {p.type} ({want.scalar.dtype}); got a {name} "
                         f"array")


def _numpy(a, packer, p, want, writes, staged):
    d = a.dtype
    if not want.accepts(d, lambda: d.name) or not d.isnative:
        raise _wrong_dtype(packer, p, want, d.str if not d.isnative else d.name)
    if not a.flags.c_contiguous:
        raise ArgumentError(f"{packer._where(p)}: the NumPy array is not C-contiguous; pass "
                        f"np.ascontiguousarray(...)")
    if writes and not a.flags.writeable:
        raise ArgumentError(f"{packer._where(p)}: the NumPy array is read-only but the kernel may write "
                        f"it (declare the parameter const if it does not)")
    if a.nbytes == 0:
        return 0
    staged.append([0, a, writes, packer.params.index(p)])
    return 0


def _stage(staged: list, args: list, params) -> None:
    drv = api()
    for entry in staged:
        _, a, _, i = entry
        name = params[i].name
        entry[0] = int(check(drv.cuMemAlloc(a.nbytes), f"allocating {a.nbytes} bytes for '{name}'"))
        check(drv.cuMemcpyHtoD(entry[0], a.ctypes.data, a.nbytes), f"copying '{name}' to the GPU")
        args[i] = entry[0]


def _c_contiguous(shape, strides, itemsize) -> bool:
    if strides is None:
        return True
    expect = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def _cai(a, packer, p, want, writes, staged):
    cai = a.__cuda_array_interface__
    import numpy as np
    d = np.dtype(cai["typestr"])
    if not want.accepts(d, lambda: d.name):
        raise _wrong_dtype(packer, p, want, d.name)
    if not _c_contiguous(cai["shape"], cai.get("strides"), d.itemsize):
        raise ArgumentError(f"{packer._where(p)}: the device array is not C-contiguous")
    return cai["data"][0] or 0


def _cupy(a, packer, p, want, writes, staged):
    d = a.dtype
    if not want.accepts(d, lambda: d.name):
        raise _wrong_dtype(packer, p, want, d.name)
    if not a._c_contiguous:
        raise ArgumentError(f"{packer._where(p)}: the CuPy array is not C-contiguous")
    return a.data.ptr


def _cupy_fast(packer, p, want, writes):
    ok = want.seen

    def f(a):
        if ok.get(a.dtype) and a._c_contiguous:
            return a.data.ptr
        return _cupy(a, packer, p, want, writes, None)  # raises the full error
    return f


def _torch_fast(packer, p, want, writes):
    ok = want.seen

    def f(a):
        if a.is_cuda and ok.get(a.dtype) and a.is_contiguous():
            return a.data_ptr()
        return _torch(a, packer, p, want, writes, None)
    return f


def _cupy_flags(a, packer, p, want, writes, staged):  # a CuPy without the _c_contiguous field
    if not a.flags.c_contiguous:
        raise ArgumentError(f"{packer._where(p)}: the CuPy array is not C-contiguous")
    return _cai(a, packer, p, want, writes, staged)


def _torch(a, packer, p, want, writes, staged):
    if not a.is_cuda:
        raise ArgumentError(f"{packer._where(p)}: the tensor is on the CPU; move it with .cuda() "
                        f"or pass .numpy()")
    d = a.dtype
    if not want.accepts(d, lambda: _torch_name(d)):
        raise _wrong_dtype(packer, p, want, _torch_name(d))
    if not a.is_contiguous():
        raise ArgumentError(f"{packer._where(p)}: the tensor is not contiguous; pass .contiguous()")
    return a.data_ptr()


def _torch_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _null(a, packer, p, want, writes, staged):
    return 0


def _buffer(a, packer, p, want, writes, staged):  # cuda.core Buffer
    return int(a.handle)


def _bad(a, packer, p, want, writes, staged):
    if p.reference:
        raise ArgumentError(f"{packer._where(p)} is a reference: pass a device array holding the value "
                            f"(CuPy, PyTorch, Numba) or a NumPy array, not {type(a).__name__}")
    raise ArgumentError(f"{packer._where(p)} is a pointer: pass a NumPy array, a device array "
                    f"(CuPy, PyTorch, Numba) or None, not {type(a).__name__}")


_HANDLERS: dict = {type(None): _null}


def _handler_for(t: type):
    mod = t.__module__.split(".")[0]
    if mod == "numpy" and t.__name__ == "ndarray":
        h = _numpy
    elif mod == "cupy" and hasattr(t, "data") and hasattr(t, "__cuda_array_interface__"):
        h = _cupy if hasattr(t, "_c_contiguous") else _cupy_flags
    elif mod == "torch" and hasattr(t, "data_ptr") and hasattr(t, "is_cuda"):
        h = _torch
    elif hasattr(t, "__cuda_array_interface__"):
        h = _cai
    elif mod == "cuda" and t.__name__ == "Buffer" and hasattr(t, "handle"):
        h = _buffer
    else:
        return _instance  # not cached: the interface may be set per object
    _HANDLERS[t] = h
    return h


def _instance(a, packer, p, want, writes, staged):
    if hasattr(a, "__cuda_array_interface__"):
        return _cai(a, packer, p, want, writes, staged)
    return _bad(a, packer, p, want, writes, staged)


_FAST = {_cupy: _cupy_fast, _torch: _torch_fast}


def release(staged: list, stream, copy_back: bool) -> None:
    """Copy written NumPy arrays back (after the stream finished) and free their device memory."""
    drv = api()
    try:
        if copy_back:
            check(drv.cuStreamSynchronize(stream), "waiting for the kernel")
            for ptr, a, writes, _ in staged:
                if writes and ptr:
                    check(drv.cuMemcpyDtoH(a.ctypes.data, ptr, a.nbytes), "copying results back")
    finally:
        for ptr, _, _, _ in staged:
            if ptr:
                drv.cuMemFree(ptr)
