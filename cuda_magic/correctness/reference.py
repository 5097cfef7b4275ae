"""Outputs against a reference, on :func:`~cuda_magic.correctness.verifier.verify`:
:class:`Reference` (one expected array a sweep judges many candidates against, in the helper
processes too, read in the format its parameter names), :func:`first_difference` (why a
candidate's outputs are not the references), and :func:`array_diffs` (one array across
``%%cuda_compare``'s variants against the baseline: differences, flushes, ULPs in the array's
format).  The sweep's bookkeeping of candidates is :mod:`cuda_magic.variants.judge`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..errors import DtypeError
from .verifier import verify
from .formats import FORMATS, codes, format_of, ulp_distance

__all__ = ["Reference", "differs", "references", "holds_codes", "first_difference", "subnormal", "ArrayDiff", "array_diffs",
           "float_dtype"]


_FLOATS = {2: np.float16, 4: np.float32, 8: np.float64}


def float_dtype(dtype) -> np.dtype:
    """``dtype`` as a NumPy float dtype these tools take; a DtypeError naming it otherwise."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise DtypeError(f"dtype={str(dtype)[:80]!r}: not a NumPy dtype; choose float16, float32 "
                         f"or float64") from None
    if dt.kind != "f" or dt.itemsize not in _FLOATS:
        raise DtypeError(f"dtype={dt}: choose float16, float32 or float64")
    return dt


class Reference:
    """One expected array that a sweep judges many candidates' outputs against, with
    :func:`verify`'s rules: ``rtol``/``atol`` when given, else ``ulp``, else the default of
    the array's format (``dtype``: a format name for arrays of bit patterns, e.g. a
    bfloat16 tensor sent back as ``int16``).  An output equal to the reference bit for bit
    (NaN where it has NaN) is judged without more work."""

    def __init__(self, name: str, ref, rtol: float | None = None, atol: float | None = None,
                 dtype=None, ulp: float | None = None):
        self.name, self.ref = name, _unsigned(np.ascontiguousarray(ref), dtype)
        self.rtol, self.atol, self.dtype, self.ulp = rtol, atol, dtype, ulp

    def why(self, out) -> str | None:
        """Why ``out`` is not the reference (None when it matches): the failing verdict's
        category and reason (``wrong: y: 12 of 1024 elements outside the rule (...)``)."""
        out = _unsigned(np.asarray(out), self.dtype)
        ref = self.ref
        if out.shape == ref.shape and out.dtype == ref.dtype and \
                np.array_equal(out, ref, equal_nan=ref.dtype.kind in "fc"):
            return None
        verdict = verify(out, ref, self.dtype, ulp=self.ulp, rtol=self.rtol, atol=self.atol,
                         name=self.name)
        return None if verdict else f"{verdict.category}: {verdict.reason}"


def _unsigned(a: np.ndarray, dtype) -> np.ndarray:
    """Bit patterns held in signed ints (a bfloat16 tensor's ``int16`` view) as the unsigned
    ints ``verify`` reads as codes, when ``dtype`` names their format."""
    if isinstance(dtype, str) and a.dtype.kind == "i":
        return a.view(f"u{a.dtype.itemsize}")
    return a


def differs(name: str, out, ref, rtol: float | None, atol: float | None) -> str | None:
    """Why ``out`` is not ``ref`` (None when it matches); see :class:`Reference`."""
    return Reference(name, ref, rtol, atol).why(out)


def references(arrays: Mapping[str, Any], rtol=None, atol=None,
               formats: Mapping[str, str] | None = None) -> dict:
    """``{name: Reference}`` for the expected arrays (:class:`Reference`).  ``formats``: the
    number format of an array by name (``"bfloat16"``: what its parameter's C type says), used
    where the array holds bit patterns (ints of the format's width: a bfloat16 tensor sent as
    ``int16``), so ``rtol``/``atol`` judge the numbers and not the bits."""
    formats = formats or {}
    return {name: Reference(name, a, rtol, atol, holds_codes(a, formats.get(name)))
            for name, a in arrays.items()}


def holds_codes(a, fmt: str | None) -> str | None:
    """``fmt`` when ``a`` holds its bit patterns (integers of its width), else None (``a``'s
    own dtype says how to read it)."""
    if not fmt:
        return None
    dt = np.asarray(a).dtype
    width = 1 if fmt == "e2m1x2" else np.dtype(FORMATS[fmt].container).itemsize
    return fmt if dt.kind in "iu" and dt.itemsize == width else None


def first_difference(outputs: Mapping[str, Any], refs: Mapping[str, Reference]) -> str | None:
    """Why ``outputs`` are not the references (the first difference), or None.

    A reference whose name is not among ``outputs`` is skipped, not counted as a mismatch:
    only what a candidate wrote is judged (a reference given as ``reference=``, or taken from
    the first candidate that ran, can name arrays another candidate's launches do not write)."""
    for name, ref in refs.items():
        if name in outputs:
            why = ref.why(outputs[name])
            if why:
                return why
    return None


def subnormal(a: np.ndarray) -> np.ndarray:
    """Where ``a`` holds a nonzero subnormal."""
    a = np.asarray(a)
    if a.dtype.kind != "f" or a.dtype.name not in FORMATS:
        return np.zeros(a.shape, bool)
    mag = np.abs(a)
    return (mag > 0) & (mag < np.finfo(a.dtype).tiny)


@dataclass(frozen=True)
class ArrayDiff:
    """One output array of one variant, compared with the baseline variant's."""

    name: str
    variant: str
    dtype: str
    size: int
    differ: int          # elements not equal to the baseline's (NaN equals NaN)
    flushed: int         # elements that are 0 here where another variant has a subnormal
    max_abs: float       # largest |value - baseline| (nan if a NaN differs)
    max_ulp: int         # largest ULP distance to the baseline
    ulp: np.ndarray      # per element ULP distance (flattened)


def array_diffs(name: str, values: Mapping[str, np.ndarray], baseline: str,
                dtype=None) -> list[ArrayDiff]:
    """Compare one array across variants: a row per variant (the baseline first).

    Any format :func:`verify` reads: ``dtype`` names it for arrays of bit patterns (a uint16
    array a ``__nv_bfloat16*`` parameter wrote is "bfloat16"); the row's ``dtype`` is the
    format's name.  Distances are computed on the elements that differ only, so equal outputs
    cost one pass.
    """
    fmt = format_of(values[baseline], dtype)
    how = dtype if dtype is not None else fmt          # a name keeps "e2m1x2" (packed)
    arrays = {v: (np.asarray(codes(a, how)[1]) if fmt is not None else np.asarray(a)).reshape(-1)
              for v, a in values.items()}
    base = arrays[baseline]
    for v, a in arrays.items():
        if a.dtype != base.dtype or a.shape != base.shape:
            raise ValueError(f"{name}: variant {v!r} gave {a.dtype}{a.shape}, the baseline "
                             f"{base.dtype}{base.shape}")
    shown = fmt.name if fmt is not None else str(base.dtype)
    decoded = {v: fmt.decode(a) for v, a in arrays.items()} if fmt is not None else \
        {v: a.astype(np.float64) for v, a in arrays.items()}
    if fmt is not None:
        nans = {v: np.isnan(d) for v, d in decoded.items()}
        subs = {v: (d != 0) & (np.abs(d) < fmt.tiny) & ~nans[v] for v, d in decoded.items()}
    else:
        nans, subs = {}, {}
    rows = []
    for v in [baseline, *[v for v in arrays if v != baseline]]:
        a = arrays[v]
        flushed = 0
        if len(subs) > 1 and fmt.tiny > 0:
            others = np.logical_or.reduce([s for w, s in subs.items() if w != v])
            flushed = int(np.count_nonzero(others & (decoded[v] == 0)))
        ulp = np.zeros(a.size, np.uint64)
        differ, max_abs = 0, 0.0
        if v != baseline:
            same = decoded[v] == decoded[baseline] if fmt is not None else a == base
            if fmt is not None:
                same |= nans[v] & nans[baseline]
            idx = np.flatnonzero(~same)
            differ = int(idx.size)
            if differ:
                ulp[idx] = ulp_distance(a[idx], base[idx], None if fmt is None else fmt.name)
                with np.errstate(invalid="ignore", over="ignore"):
                    max_abs = float(np.max(np.abs(decoded[v][idx] - decoded[baseline][idx])))
        rows.append(ArrayDiff(name, v, shown, int(a.size), differ, flushed, max_abs,
                              int(ulp.max()) if differ else 0, ulp))
    return rows
