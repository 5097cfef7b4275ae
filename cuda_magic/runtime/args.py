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

Each :class:`Packer` also writes the launch plan for repeat launches
(``Packer.launcher_call``): straight-line code for this signature that checks
each device array against what the full check last accepted for its parameter
(the same type and dtype object, still contiguous, a live pointer read from the
array now), packs the values into the same buffer and calls cuLaunchKernel
(cuda.bindings', or CuPy's wrapper of it on plain ints where CuPy is loaded).
Anything it has not seen goes to the full checks (``pack``), which raise the
errors; so a launch raises the same error the first time and the hundredth.
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


_REWRITES = 16   # times a launch plan is written for the kinds of arrays seen, before it stops


class Packer:
    """Packs one kernel's arguments into a reusable buffer; ``pack`` returns the ``void**`` address."""

    def __init__(self, kernel: str, params: Sequence[Param], layout: Sequence[tuple[int, int]]):
        self.kernel, self.params = kernel, tuple(params)
        if len(layout) != len(self.params):
            raise ArgumentError(f"{kernel}: the cell declares {len(self.params)} parameters but the "
                            f"compiled kernel takes {len(layout)}")
        fmt, pos, self.convs = ["="], 0, []
        # per pointer parameter, learned from the last full check that passed: the kind of array
        # ("cupy", "torch", "cai", "null"; None: none yet) and its quick check (a closure)
        self.kinds: list = [None] * len(self.params)
        self.checks: list = [_unseen] * len(self.params)
        self.full_checks = 0    # pointer arguments that went through the full check (for tests)
        self.call = None        # the launch plan, once a launcher asked for it (launcher_call)
        self.compiles, self.stale = 0, False
        for i, (p, (off, size)) in enumerate(zip(self.params, layout)):
            fmt.append("x" * (off - pos))
            kind = p.kind
            if kind == "unknown":
                code, conv = f"{size}s", _unknown(self, p, size)
            elif kind == "function":
                code, conv = "Q", _function(self, p)
            elif kind == "reference":
                code, conv = "Q", _reference(self, p, i)
            elif kind == "pointer":
                code, conv = "Q", _pointer(self, p, i)
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
                self.convs.append((i, kind in ("pointer", "reference"), conv))
        self.struct = struct.Struct("".join(fmt))
        self.via = "bindings"   # the plan's last call: cuda.bindings' cuLaunchKernel, or "cupy"
        self.buffer = ctypes.create_string_buffer(max(self.struct.size, 1))
        base = ctypes.addressof(self.buffer)
        self.pointers = (ctypes.c_void_p * max(len(layout), 1))(*[base + off for off, _ in layout])
        self.address = ctypes.addressof(self.pointers) if layout else 0
        self.n = len(self.params)
        self.scope = {"C": self.checks, "pack_into": self.struct.pack_into, "buffer": self.buffer}
        self.scope.update((f"V{i}", conv) for i, pointer, conv in self.convs if not pointer)

    def _where(self, p: Param) -> str:
        return f"{self.kernel}(): parameter '{p.name}' ({p})"

    def launcher_call(self, launch, state: dict, on_new, ints=None) -> None:
        """Write the launch plan: the ``__call__`` of this kernel's launcher class, passed to
        ``on_new`` now and again whenever the kind of array a parameter gets changes.

        The launcher has ``argv`` (cuLaunchKernel's arguments, prepared once: the CUfunction,
        dims, shared bytes, stream and the buffer's address), ``slow(args)`` (the full way) and
        ``failed()`` (after an error); ``state`` is the driver state read per launch ("lost",
        "isolated").  ``launch`` is cuda.bindings' cuLaunchKernel, which returns the error;
        ``ints``, if given, a cuLaunchKernel that takes ``argv`` as plain ints and raises on
        an error (CuPy's ``cupy.cuda.driver.launchKernel``), which the plan calls instead.
        For ``k(const float* x, float* y, float a, int n)`` on CuPy arrays::

            def __call__(self, *args):
                if len(args) != 4 or ST["lost"] is not None or ST["isolated"]:
                    return self.slow(args)
                a0, a1, a2, a3, = args
                if type(a0) is not T0 or a0.dtype is not D0 or not a0._c_contiguous:
                    return self.slow(args)
                a0 = a0.data
                if not a0.mem.ptr:
                    return self.slow(args)
                a0 = a0.ptr
                ... (a1 alike)
                try:
                    pack_into(buffer, 0, a0, a1, a2, a3)
                except Exception:
                    return self.slow(args)
                if launch(*self.argv)[0]:
                    self.failed()

        and with ``ints``, the last two lines::

                try:
                    launch_ints(*self.argv)
                except Exception:
                    self.failed()
        """
        self.via = "cupy" if ints is not None else "bindings"
        self.scope.update(launch=launch, ST=state, launch_ints=ints)
        self.on_new = on_new
        self._compile()

    def _learn(self, i: int, kind: str, a, check) -> None:
        """The full check of argument ``i`` passed for ``a``, a ``kind`` array: launches with the
        same type and dtype take the plan from now on."""
        self.checks[i] = check
        if kind in ("cupy", "torch"):
            self.scope[f"T{i}"], self.scope[f"D{i}"] = type(a), a.dtype
        if self.kinds[i] != kind:
            self.kinds[i] = kind
            # written again at the end of pack(), unless the plan already calls the checks
            self.stale = self.call is not None and self.compiles <= _REWRITES

    def _compile(self) -> None:
        self.compiles += 1
        generic = self.compiles > _REWRITES  # kinds keep changing: call the closures instead
        miss = "return self.slow(args)"
        names = [f"a{i}" for i in range(self.n)]
        code = ["def __call__(self, *args):",
                f"    if len(args) != {self.n} or ST['lost'] is not None or ST['isolated']:",
                f"        {miss}"]
        if names:
            code.append(f"    {', '.join(names)}, = args")
        for i, pointer, _ in self.convs:
            a, kind = f"a{i}", self.kinds[i]
            if not pointer:     # a scalar, struct or function pointer: its converter, which raises
                code.append(f"    {a} = V{i}({a}, None)")
            elif kind is None:
                code.append(f"    {miss}")
                break
            elif kind == "cupy" and not generic:
                code += [f"    if type({a}) is not T{i} or {a}.dtype is not D{i} or not {a}._c_contiguous:",
                         f"        {miss}",
                         f"    {a} = {a}.data",
                         f"    if not {a}.mem.ptr:",           # freed (PooledMemory.free)
                         f"        {miss}",
                         f"    {a} = {a}.ptr"]
            elif kind == "torch" and not generic:
                code += [f"    if (type({a}) is not T{i} or {a}.dtype is not D{i} or not {a}.is_cuda",
                         f"            or not {a}.is_contiguous()):",
                         f"        {miss}",
                         "    try:",
                         f"        {a} = {a}.data_ptr()",
                         "    except RuntimeError:",
                         f"        {miss}",
                         f"    if not {a}:",                    # freed (storage resized to 0)
                         f"        {miss}"]
            elif kind == "null" and not generic:
                code += [f"    if {a} is not None:", f"        {miss}", f"    {a} = 0"]
            else:
                code += [f"    {a} = C[{i}]({a})", f"    if {a} is None:", f"        {miss}"]
        code += ["    try:", f"        pack_into(buffer, 0, {', '.join(names)})",
                 "    except Exception:", f"        {miss}"]
        if self.via == "bindings":
            code += ["    if launch(*self.argv)[0]:", "        self.failed()"]
        else:   # raises on a failed launch; failed() launches the packed buffer again, the full way
            code += ["    try:", "        launch_ints(*self.argv)",
                     "    except Exception:", "        self.failed()"]
        exec(compile("\n".join(code), f"<launch plan of {self.kernel}>", "exec"), self.scope)
        self.call = self.scope.pop("__call__")
        self.on_new(self.call)

    def pack(self, args: Sequence, staged: list) -> int:
        """Write ``args`` into the buffer after the full checks; NumPy arrays are staged on the
        device into ``staged``.  Returns the ``void**`` address."""
        if len(args) != self.n:
            raise ArgumentError(f"{self.kernel}() takes {self.n} argument{'s' * (self.n != 1)} "
                            f"({', '.join(str(p) for p in self.params)}), got {len(args)}")
        if self.convs:
            args = list(args)
            try:
                for i, _, conv in self.convs:
                    args[i] = conv(args[i], staged)
            finally:
                if self.stale:  # an argument of another kind than the plan knows passed
                    self.stale = False
                    self._compile()
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


def _reference(packer: Packer, p: Param, i: int):
    inner = _pointer(packer, p, i, p.scalar if not p.pointer else None)

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

def _pointer(packer: Packer, p: Param, i: int, pointee=False):
    """The full check of pointer argument ``i``; once it passes for a device array, the quick
    check for that array's type and dtype goes to the launch plan (``Packer._learn``).
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
                packer._learn(i, learn[0], a, check)
        return ptr
    return conv


# --- the quick checks: what a full check accepted, checked again per launch --------------------
# Each returns the pointer, or None for anything else (the full check then runs and raises).
# Per launch they still check what can change: the dtype (the same dtype object), contiguity,
# that the memory is there (a non-null pointer, read from the array now).  The launch plan has
# the CuPy, PyTorch and None ones written out (Packer._compile); it calls the others.

def _unseen(a):
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
    ptr = cai["data"][0] or 0
    if not ptr and _nonempty(cai["shape"]):
        raise _freed(packer, p, "the device array's __cuda_array_interface__ has a null pointer")
    return ptr


def _freed(packer, p, what: str):
    return ArgumentError(f"{packer._where(p)}: {what} (its memory was freed?); pass a live array")


def _cupy(a, packer, p, want, writes, staged):
    d = a.dtype
    if not want.accepts(d, lambda: d.name):
        raise _wrong_dtype(packer, p, want, d.name)
    if not a._c_contiguous:
        raise ArgumentError(f"{packer._where(p)}: the CuPy array is not C-contiguous")
    m = a.data
    if a.size and not (m.ptr and getattr(m.mem, "ptr", 1)):
        raise _freed(packer, p, "the CuPy array's memory pointer is null")
    return m.ptr


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


# handler -> the quick check it leaves after passing (NumPy arrays: none, they are staged)
_LEARN = {_cupy: ("cupy", _quick_cupy), _torch: ("torch", _quick_torch), _cai: ("cai", _quick_cai),
          _null: ("null", _quick_null)}


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
