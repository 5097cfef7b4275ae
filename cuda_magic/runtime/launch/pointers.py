"""Pointer and reference arguments: which array a value is (NumPy, CuPy, PyTorch,
``__cuda_array_interface__``, a cuda.core Buffer, ``None``), its full check (dtype against the
pointee, contiguity, live memory; the errors name the parameter), and the quick check a passing
device array leaves for the launch plan of repeat launches (:meth:`~.packer.Packer.learn`).

NumPy arrays are not resolved to a pointer here: they are queued in ``staged`` for
:mod:`.staging` to copy to the device once every argument passed.
"""

from __future__ import annotations

import numbers

from ...errors import ArgumentError
from .params import Param, Scalar

__all__ = ["pointer_arg", "reference_arg", "unseen"]


def reference_arg(packer, p: Param, i: int):
    inner = pointer_arg(packer, p, i, p.scalar if not p.pointer else None)

    def conv(v, staged):
        if v is None:
            raise ArgumentError(f"{packer.where(p)} is a reference and cannot be null: pass a device "
                                f"array holding the value")
        if isinstance(v, numbers.Number) or (type(v).__module__ == "numpy"    # a NumPy scalar
                                             and type(v).__name__ != "ndarray"):
            raise ArgumentError(f"{packer.where(p)} is a reference: the kernel reads it through a "
                                f"pointer; pass a device array holding the value, or take it by value")
        return inner(v, staged)
    return conv


def pointer_arg(packer, p: Param, i: int, pointee=False):
    """The full check of pointer argument ``i``; once it passes for a device array, the quick
    check for that array's type and dtype goes to the launch plan (``Packer.learn``).
    ``pointee``: the Scalar pointed to (None: any), if not ``p``'s own."""
    want = _Want((p.scalar if p.pointer == 1 else None) if pointee is False else pointee)
    writes = not p.const
    seen: dict = {}     # __cuda_array_interface__ (typestr, shape, strides) that passed -> non-empty

    def conv(a, staged):
        handler = _HANDLERS.get(type(a))
        if handler is None:
            handler = _handler_for(type(a))
        packer.full_checks += 1
        ptr = handler(a, packer, p, want, writes, staged)
        learn = _LEARN.get(handler)
        if learn is not None and not (a is None and p.reference):
            check = learn[1](a, seen)
            if check is not None:
                packer.learn(i, learn[0], a, check)
        return ptr
    return conv


# --- the quick checks: what a full check accepted, checked again per launch --------------------
# Each returns the pointer, or None for anything else (the full check then runs and raises).
# Per launch they still check what can change: the dtype (the same dtype object), contiguity,
# that the memory is there (a non-null pointer, read from the array now).  The launch plan has
# the CuPy, PyTorch and None ones written out (Packer._compile); it calls the others.

def unseen(a):
    return None


def _quick_cupy(a, seen):
    if not hasattr(a.data.mem, "ptr"):  # no way to tell freed memory: no quick check
        return None
    t, dtype = type(a), a.dtype

    def check(a):
        if type(a) is t and a.dtype is dtype and a._c_contiguous:
            m = a.data
            if m.mem.ptr:           # 0 once the memory was freed (PooledMemory.free)
                return m.ptr
        return None
    return check


def _quick_torch(a, seen):
    t, dtype = type(a), a.dtype

    def check(a):
        if type(a) is t and a.dtype is dtype and a.is_cuda and a.is_contiguous():
            try:
                ptr = a.data_ptr()
            except RuntimeError:    # no storage
                return None
            if ptr:                 # 0 once the storage was freed (resize_(0))
                return ptr
        return None
    return check


def _quick_cai(a, seen):
    t = type(a)
    cai = a.__cuda_array_interface__
    key = (cai["typestr"], cai["shape"], cai.get("strides"))
    try:
        if len(seen) > 256:
            seen.clear()
        seen[key] = _nonempty(cai["shape"])
    except TypeError:       # a list for a shape: nothing to key on, so no quick check
        return None

    def check(a):
        if type(a) is t:
            cai = a.__cuda_array_interface__     # read per launch: the pointer can change
            try:
                nonempty = seen.get((cai["typestr"], cai["shape"], cai.get("strides")))
            except TypeError:
                return None
            if nonempty is not None:
                ptr = cai["data"][0]
                if ptr:
                    return ptr
                if not nonempty:
                    return 0
        return None
    return check


def _quick_null(a, seen):
    def check(a):
        return 0 if a is None else None
    return check


def _nonempty(shape) -> bool:
    return all(n != 0 for n in shape)


# --- the full checks, one per kind of array ---------------------------------------------------

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
    return ArgumentError(f"{packer.where(p)} {verb} to {p.type} ({want.scalar.dtype}); got a {name} "
                         f"array")


def _numpy(a, packer, p, want, writes, staged):
    d = a.dtype
    if not want.accepts(d, lambda: d.name) or not d.isnative:
        raise _wrong_dtype(packer, p, want, d.str if not d.isnative else d.name)
    if not a.flags.c_contiguous:
        raise ArgumentError(f"{packer.where(p)}: the NumPy array is not C-contiguous; pass "
                        f"np.ascontiguousarray(...)")
    if writes and not a.flags.writeable:
        raise ArgumentError(f"{packer.where(p)}: the NumPy array is read-only but the kernel may write "
                        f"it (declare the parameter const if it does not)")
    if a.nbytes == 0:
        return 0
    staged.append([0, a, writes, packer.params.index(p)])
    return 0


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
        raise ArgumentError(f"{packer.where(p)}: the device array is not C-contiguous")
    ptr = cai["data"][0] or 0
    if not ptr and _nonempty(cai["shape"]):
        raise _freed(packer, p, "the device array's __cuda_array_interface__ has a null pointer")
    return ptr


def _freed(packer, p, what: str):
    return ArgumentError(f"{packer.where(p)}: {what} (its memory was freed?); pass a live array")


def _cupy(a, packer, p, want, writes, staged):
    d = a.dtype
    if not want.accepts(d, lambda: d.name):
        raise _wrong_dtype(packer, p, want, d.name)
    if not a._c_contiguous:
        raise ArgumentError(f"{packer.where(p)}: the CuPy array is not C-contiguous")
    m = a.data
    if a.size and not (m.ptr and getattr(m.mem, "ptr", 1)):
        raise _freed(packer, p, "the CuPy array's memory pointer is null")
    return m.ptr


def _cupy_flags(a, packer, p, want, writes, staged):  # a CuPy without the _c_contiguous field
    if not a.flags.c_contiguous:
        raise ArgumentError(f"{packer.where(p)}: the CuPy array is not C-contiguous")
    return _cai(a, packer, p, want, writes, staged)


def _torch(a, packer, p, want, writes, staged):
    if not a.is_cuda:
        raise ArgumentError(f"{packer.where(p)}: the tensor is on the CPU; move it with .cuda() "
                        f"or pass .numpy()")
    d = a.dtype
    if not want.accepts(d, lambda: _torch_name(d)):
        raise _wrong_dtype(packer, p, want, _torch_name(d))
    if not a.is_contiguous():
        raise ArgumentError(f"{packer.where(p)}: the tensor is not contiguous; pass .contiguous()")
    try:
        ptr = a.data_ptr()
    except RuntimeError as exc:
        raise _freed(packer, p, f"the tensor has no data ({str(exc).splitlines()[0][:120]})") from None
    if not ptr and a.numel():
        raise _freed(packer, p, "the tensor's data pointer is null (storage resized to 0 bytes)")
    return ptr


def _torch_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _null(a, packer, p, want, writes, staged):
    return 0


def _buffer(a, packer, p, want, writes, staged):  # cuda.core Buffer
    try:
        ptr = int(a.handle or 0)
    except (TypeError, ValueError, RuntimeError):
        ptr = 0
    if not ptr and getattr(a, "size", 1):
        raise _freed(packer, p, "the cuda.core Buffer has no device pointer (closed?)")
    return ptr


def _bad(a, packer, p, want, writes, staged):
    if p.reference:
        raise ArgumentError(f"{packer.where(p)} is a reference: pass a device array holding the value "
                            f"(CuPy, PyTorch, Numba) or a NumPy array, not {type(a).__name__}")
    raise ArgumentError(f"{packer.where(p)} is a pointer: pass a NumPy array, a device array "
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


_LEARN = {_cupy: ("cupy", _quick_cupy), _torch: ("torch", _quick_torch), _cai: ("cai", _quick_cai),
          _null: ("null", _quick_null)}
