"""Judging a kernel's outputs: against a reference (tolerance, which array is wrong), and
against each other (ULP distances, per-array differences).

NumPy only; no CUDA.  One module for every caller: a sweep's helpers and ``%%cuda_tune``
judge outputs with :class:`Reference` and :func:`check`; ``%%cuda_compare`` reports each
variant's differences with :func:`array_diffs`; :func:`ulp_distance` is
``cuda_magic.ulp_distance``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..errors import DtypeError, NumbersError

__all__ = ["Reference", "differs", "references", "check", "ulp_distance", "subnormal", "ArrayDiff",
           "array_diffs", "NumbersError", "DtypeError", "float_dtype"]


_FLOATS = {2: (np.float16, np.int16), 4: (np.float32, np.int32), 8: (np.float64, np.int64)}


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


# ------------------------------------------------------------------ against a reference

_RTOL = {2: 1e-2, 4: 1e-4, 8: 1e-10}     # by the bytes of a real element


class Reference:
    """One expected array, ready to judge many outputs fast: the tolerance of each element is
    worked out once.  Floats match where ``|out - ref| <= atol + rtol * |ref|`` (NumPy's
    ``isclose``; ``rtol`` by precision, ``atol`` by default ``rtol`` x the largest magnitude
    of the reference, so a different summation order passes and a wrong result does not), NaN
    where the reference has NaN, infinities exactly; integers and the rest exactly."""

    def __init__(self, name: str, ref, rtol: float | None = None, atol: float | None = None):
        import numpy as np
        self.name, self.ref = name, np.ascontiguousarray(ref)
        ref = self.ref
        self.float = ref.dtype.kind in "fc"
        if self.float:
            size = ref.dtype.itemsize // (2 if ref.dtype.kind == "c" else 1)
            r = rtol if rtol is not None else _RTOL.get(size, 1e-4)
            finite = np.isfinite(ref)
            self.odd = None if finite.all() else ~finite      # NaN / inf: compared exactly
            scale = float(np.max(np.abs(ref[finite]))) if finite.any() else 0.0
            a = atol if atol is not None else r * max(scale, np.finfo(ref.dtype).tiny)
            self.tol = (a + r * np.abs(ref)).astype(np.abs(ref).dtype)

    def bad(self, out):
        """A mask of the elements that differ (None: none do)."""
        import numpy as np
        out = np.asarray(out)
        if self.float:
            with np.errstate(invalid="ignore", over="ignore"):      # inf - inf, NaN: see odd
                diff = np.subtract(out, self.ref)
                diff = np.abs(diff, out=diff) if diff.dtype.kind == "f" else np.abs(diff)
                ok = np.less_equal(diff, self.tol)
            if self.odd is not None:      # NaN matches NaN, an infinity itself
                same = (out == self.ref) | (np.isnan(out) & np.isnan(self.ref))
                ok[self.odd] = same[self.odd]
            if ok.all():
                return None
            return ~ok
        bad = out != self.ref
        return bad if bad.any() else None

    def why(self, out) -> str | None:
        """Why ``out`` is not the reference (None when it matches)."""
        import numpy as np
        out = np.asarray(out)
        name, ref = self.name, self.ref
        if out.shape != ref.shape:
            return f"{name} has shape {out.shape}, the reference {ref.shape}"
        bad = self.bad(out)
        if bad is None:
            return None
        count = int(np.count_nonzero(bad))
        first = np.unravel_index(int(np.argmax(bad)), bad.shape) if bad.ndim else ()
        where = f"[{', '.join(str(int(i)) for i in first)}]" if first else ""
        got, want = np.asarray(out[first]).item(), np.asarray(ref[first]).item()
        return (f"{name} differs at {count} of {bad.size} elements (first at {name}{where}: "
                f"{got!r}, expected {want!r})")


def differs(name: str, out, ref, rtol: float | None, atol: float | None) -> str | None:
    """Why ``out`` is not ``ref`` (None when it matches); see :class:`Reference`."""
    return Reference(name, ref, rtol, atol).why(out)


def references(arrays: Mapping[str, Any], rtol=None, atol=None) -> dict:
    """``{name: Reference}`` for the expected arrays."""
    return {name: Reference(name, a, rtol, atol) for name, a in arrays.items()}


def check(outputs: Mapping[str, Any], refs: Mapping[str, Reference]) -> str | None:
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


# ------------------------------------------------------------------ against each other

def subnormal(a: np.ndarray) -> np.ndarray:
    """Where ``a`` holds a nonzero subnormal."""
    a = np.asarray(a)
    if a.dtype.kind != "f":
        return np.zeros(a.shape, bool)
    mag = np.abs(a)
    return (mag > 0) & (mag < np.finfo(a.dtype).tiny)


def _ordered(a: np.ndarray) -> np.ndarray:
    """Float bits mapped to integers in value order (+0 and -0 both 0), as int64."""
    _, ints = _FLOATS[a.dtype.itemsize]
    bits = np.ascontiguousarray(a).view(ints).astype(np.int64)
    top = np.int64(1) << (8 * a.dtype.itemsize - 1)
    return np.where(bits < 0, -(bits & (top - 1)), bits)


def ulp_distance(a, b) -> np.ndarray:
    """Per element, how many representable values lie between ``a`` and ``b`` (0 where equal).

    Floats of one dtype (float16/32/64): the distance in units in the last
    place, counting across zero and through the subnormals; a NaN against a
    number counts as the largest distance, NaN against NaN as 0.  Integers:
    the absolute difference.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        raise NumbersError(f"ulp_distance needs arrays of one dtype and shape, not {a.dtype}{a.shape} "
                           f"and {b.dtype}{b.shape}")
    if a.dtype.kind != "f":
        return np.abs(a.astype(np.int64) - b.astype(np.int64)).astype(np.uint64)
    float_dtype(a.dtype)
    d = np.abs(_ordered(a) - _ordered(b)).astype(np.uint64)
    na, nb = np.isnan(a), np.isnan(b)
    d[na & nb] = 0
    d[na ^ nb] = np.iinfo(np.uint64).max
    return d


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


def array_diffs(name: str, values: Mapping[str, np.ndarray], baseline: str) -> list[ArrayDiff]:
    """Compare one array across variants: a row per variant (the baseline first).

    Distances are computed on the elements that differ only, so equal outputs cost one pass.
    """
    arrays = {v: np.asarray(a).reshape(-1) for v, a in values.items()}
    base = arrays[baseline]
    for v, a in arrays.items():
        if a.dtype != base.dtype or a.shape != base.shape:
            raise ValueError(f"{name}: variant {v!r} gave {a.dtype}{a.shape}, the baseline "
                             f"{base.dtype}{base.shape}")
    floats = base.dtype.kind == "f"
    subs = {v: subnormal(a) for v, a in arrays.items()} if floats else {}
    rows = []
    for v in [baseline, *[v for v in arrays if v != baseline]]:
        a = arrays[v]
        flushed = 0
        if len(subs) > 1:
            others = np.logical_or.reduce([s for w, s in subs.items() if w != v])
            flushed = int(np.count_nonzero(others & (a == 0)))
        ulp = np.zeros(a.size, np.uint64)
        differ, max_abs = 0, 0.0
        if v != baseline:
            same = a == base
            if floats:
                same |= np.isnan(a) & np.isnan(base)
            idx = np.flatnonzero(~same)
            differ = int(idx.size)
            if differ:
                ulp[idx] = ulp_distance(a[idx], base[idx])
                with np.errstate(invalid="ignore", over="ignore"):
                    max_abs = float(np.max(np.abs(a[idx].astype(np.float64) - base[idx].astype(np.float64))))
        rows.append(ArrayDiff(name, v, str(a.dtype), int(a.size), differ, flushed, max_abs,
                              int(ulp.max()) if differ else 0, ulp))
    return rows
