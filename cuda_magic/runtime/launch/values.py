"""By-value arguments: converters for the scalars :mod:`struct` cannot pack as they are (bool,
bfloat16, char), the range check that names the scalar :mod:`struct` could not pack, structs and
unread declarations as their raw bytes, and function pointers as device addresses.

Each factory takes the :class:`~.packer.Packer` (it names the parameter in errors) and the
:class:`~.types.Param`, and returns the converter ``conv(value, staged)`` the packer calls.
"""

from __future__ import annotations

import operator
import struct

from ...errors import quote
from ...errors import ArgumentError, ArgumentRangeError
from .params import Param

__all__ = ["CONVERTERS", "struct_arg", "unread_arg", "function_arg", "diagnose"]


def diagnose(packer, args) -> None:
    """Raise the error naming the scalar argument :mod:`struct` could not pack: out of range
    (:class:`ArgumentRangeError`) or not a number (:class:`ArgumentError`)."""
    for p, v in zip(packer.params, args):
        if p.kind != "scalar":
            continue
        try:
            struct.pack("=" + p.scalar.code, v)
        except OverflowError:
            raise ArgumentRangeError(f"{packer.where(p)}: {quote(v)} is out of range for {p.type}") from None
        except struct.error as exc:
            if "range" in str(exc) or "format requires" in str(exc) or _too_big(p, v):
                raise ArgumentRangeError(f"{packer.where(p)}: {quote(v)} is out of range for {p.type}") from None
            raise ArgumentError(f"{packer.where(p)}: expected {_kind(p)}, got "
                            f"{type(v).__name__} {quote(v)}") from None


def _too_big(p: Param, v) -> bool:
    """An int too large for a double, given to a floating-point parameter (struct says "not a
    float")."""
    if isinstance(v, bool) or not isinstance(v, int) or \
            not p.scalar.dtype.startswith(("float", "bfloat")):
        return False
    try:
        float(v)
    except OverflowError:
        return True
    return False


def _kind(p: Param) -> str:
    return "a float" if p.scalar.dtype.startswith(("float", "bfloat")) else "an integer"


# --- scalars that struct cannot take as they are --------------------------------------------

def _bool(packer, p: Param):
    def conv(v, staged):
        if v is True or v is False or (type(v).__name__ in ("bool_", "bool") and v in (0, 1)):
            return bool(v)
        if isinstance(v, int) and v in (0, 1):
            return bool(v)
        raise ArgumentError(f"{packer.where(p)}: expected a bool, got {type(v).__name__} {quote(v)}")
    return conv


def _bfloat16(packer, p: Param):
    f32 = struct.Struct("=f")
    u32 = struct.Struct("=I")

    def conv(v, staged):
        try:
            bits = u32.unpack(f32.pack(v))[0]
        except OverflowError:
            raise ArgumentRangeError(f"{packer.where(p)}: {quote(v)} is out of range for bfloat16") from None
        except (struct.error, TypeError):
            if _too_big(p, v):
                raise ArgumentRangeError(f"{packer.where(p)}: {quote(v)} is out of range for "
                                         f"bfloat16") from None
            raise ArgumentError(f"{packer.where(p)}: expected a float, got {type(v).__name__} {quote(v)}") from None
        if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:
            return 0x7FC0 | ((bits >> 16) & 0x8000)  # NaN stays NaN
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF  # round to nearest even
    return conv


def _char(packer, p: Param):
    def conv(v, staged):
        if isinstance(v, (bytes, str)) and len(v) == 1:
            return ord(v)
        return v
    return conv


CONVERTERS = {"bool": _bool, "__nv_bfloat16": _bfloat16, "char": _char}


# --- parameters passed as their bytes, function pointers --------------------------------------

def _raw(v) -> bytes | None:
    """The bytes of a bytes-like object or a NumPy structured scalar; None for anything else."""
    if hasattr(v, "dtype") and getattr(v.dtype, "names", None) is not None:  # NumPy structured
        v = v.tobytes()
    if isinstance(v, (int, float, complex, str)) or v is None:
        return None
    if hasattr(v, "getPtr") and type(v).__name__ == "CUtensorMap":   # cuda.bindings' own
        import ctypes
        return ctypes.string_at(int(v.getPtr()), 128)
    if type(v).__name__ == "TensorMapDescriptor":                     # cuda.core's
        return _core_tensor_map(v)
    try:
        return bytes(memoryview(v))
    except TypeError:
        return None


def _core_tensor_map(v) -> bytes | None:
    """The 128 bytes of a cuda.core ``TensorMapDescriptor``, as cuda.core's own launch packs it
    (its ``ParamHolder``: the descriptor has no public accessor for them); None when that
    private module is not there."""
    import ctypes
    import importlib
    module = type(v).__module__.rsplit(".", 1)[0] + "._kernel_arg_handler"
    try:
        holder = importlib.import_module(module).ParamHolder((v,))
    except (ImportError, AttributeError):
        return None
    address = ctypes.c_void_p.from_address(int(holder.ptr)).value
    return ctypes.string_at(address, 128) if address else None


def struct_arg(packer, p: Param, size: int):
    return _exact_bytes(packer, p, size, f" is a struct passed by value: give bytes or a NumPy "
                                         f"structured scalar of {size} bytes")


def unread_arg(packer, p: Param, size: int):
    return _exact_bytes(packer, p, size, f": this declaration could not be read, so its value "
                                         f"cannot be converted; pass its {size} bytes (bytes or a "
                                         f"NumPy structured scalar), or declare the parameter with "
                                         f"a plain type")


def _exact_bytes(packer, p: Param, size: int, what: str):
    """A parameter passed as its raw bytes (``size`` of them); ``what`` says why, for the error."""
    def conv(v, staged):
        data = _raw(v)
        if data is None and type(v).__name__ == "TensorMapDescriptor":
            raise ArgumentError(f"{packer.where(p)}: this cuda.core has no kernel-argument "
                                f"packer (_kernel_arg_handler) to read the TensorMapDescriptor's "
                                f"128 bytes from; make the argument with "
                                f"cuda_magic.tma(array, box=...)")
        if data is None:
            raise ArgumentError(f"{packer.where(p)}{what}, not {type(v).__name__}")
        if len(data) != size:
            raise ArgumentError(f"{packer.where(p)} is {size} bytes; got {len(data)} bytes")
        return data
    return conv


def function_arg(packer, p: Param):
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
                    raise ArgumentRangeError(f"{packer.where(p)}: {quote(v)} is no device address")
                return address
        raise ArgumentError(f"{packer.where(p)} is a function pointer: pass the function's device "
                            f"address as an int (e.g. copied from a __device__ variable that holds "
                            f"it), or None for a null pointer, not {type(v).__name__}")
    return conv
