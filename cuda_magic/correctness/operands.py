"""The arrays ``verify`` reads: each argument checked (:func:`array_arg`, a VerifyError naming
it for what holds no numbers) and an :class:`Operand`, one array flattened and read a chunk at a
time as codes of the output's format, float64 values or integers.  NumPy; CuPy for device
arrays.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import VerifyError, quote
from .formats import (FORMATS, Format, _cupy, _is_packed, _origin, _to, array_of, codes,
                      format_of, same_codes)

__all__ = ["Operand", "array_arg", "bit_patterns", "dtype_text", "flatten"]

# NumPy dtype kinds that hold no numbers: objects, strings, bytes, dates, time spans, complex
_NOT_NUMBERS = "OUSMmc"


def array_arg(x, what: str):
    """``x`` as ``verify`` reads it: a NumPy or CuPy array or a torch tensor as it is, anything
    else (a list, a scalar) as a NumPy array.  A VerifyError naming ``what`` ("out", "ref",
    "initial", "inputs['x']") for what holds no numbers: a ragged list, strings, objects, ints
    too large for any dtype, a torch tensor on the meta device (no data)."""
    origin = _origin(x)
    if origin == "torch":
        if getattr(x, "is_meta", False):
            raise VerifyError(f"{what} is a torch tensor on the meta device, which holds no "
                              f"data: give one on the CPU or a GPU")
        return x
    if origin == "cupy":
        return x
    try:
        a = x if isinstance(x, np.ndarray) else np.asarray(x)
    except (ValueError, TypeError, OverflowError):     # ragged, or no array at all
        a = None
    if a is None or a.dtype.kind in _NOT_NUMBERS:
        if isinstance(x, np.ndarray):
            kind = f"an array of {a.dtype}"
        else:
            ragged = a is None and isinstance(x, (list, tuple))
            kind = "a ragged list" if ragged else f"a {type(x).__name__}"
        raise VerifyError(f"{what}={quote(x, 60)}: {kind}; give an array of numbers (NumPy, "
                          f"CuPy, PyTorch or a list of one shape)")
    return a


class Operand:
    """One array of a check, flattened, read a chunk at a time: as codes of the output's
    format ``fmt`` ("codes"), as float64 values ("values": another format, or integers
    against a float output), or as integers ("ints": integer outputs).  ``dtype`` names the
    format of bit patterns (unsigned ints); ``out``: this is the output (codes of ``fmt``)."""

    def __init__(self, x, fmt: Format | None, dtype=None, out: bool = False):
        self.shape = tuple(int(v) for v in getattr(x, "shape", np.shape(x)))
        self.packed = 0
        if _is_packed(x, dtype) and bit_patterns(x):
            _, x = codes(x, "e2m1x2")
            self.shape, self.packed = tuple(x.shape), int(x.nbytes)
        self.size = math.prod(self.shape)
        self.device = _origin(x) == "cupy" or (_origin(x) == "torch" and x.is_cuda
                                              and _cupy() is not None)
        self.flat = flatten(x)
        self.own = FORMATS["e2m1"] if self.packed else format_of(x)   # None: integers
        if fmt is None:
            self.mode = "ints"
        elif out or self.packed or self.own is fmt or same_codes(x, fmt):
            self.own, self.mode = fmt, "codes"
        else:
            self.mode = "values"

    def read(self, xp, s: int, e: int):
        """Elements ``s:e``: codes, float64 values or integers, as ``xp`` arrays."""
        part = self.flat[s:e]
        if self.mode == "codes":
            return _to(xp, codes(part, self.own)[1])
        if self.mode == "values":
            if self.own is None:
                return _to(xp, array_of(part)[1].astype(np.float64))
            return _to(xp, self.own.decode(codes(part, self.own)[1]))
        a = _to(xp, array_of(part)[1])
        return a.astype(np.uint8) if a.dtype == bool else a


def bit_patterns(x) -> bool:
    """Whether ``x`` is an array of unsigned ints (or torch's packed fp4): bit patterns."""
    dt = getattr(x, "dtype", None)
    if _origin(x) == "torch":
        return str(dt).removeprefix("torch.") in ("uint8", "float4_e2m1fn_x2")
    return dt is not None and np.dtype(dt).kind == "u"


def flatten(x):
    """``x`` as a 1-D array of its kind (a view where it can be)."""
    if _origin(x) in ("cupy", "torch"):
        return (x.detach() if _origin(x) == "torch" else x).reshape(-1)
    return np.asarray(x).reshape(-1)


def dtype_text(x, fmt: Format | None) -> str:
    if fmt is not None:
        return fmt.name
    dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype    # a CuPy array: no asarray
    return str(dtype).removeprefix("torch.")


