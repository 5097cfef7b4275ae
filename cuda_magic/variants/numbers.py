"""Numbers for comparisons: denormal-heavy inputs, ULP distances, per-array differences.

NumPy only; no CUDA.  ``denormals(n)`` makes inputs that show what FTZ does;
``array_diffs(name, {variant: values}, baseline)`` reports, per variant, the
elements that differ from the baseline, the values flushed to zero where
another variant kept a subnormal, and the largest absolute and ULP difference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..config import Error

__all__ = ["denormals", "random_inputs", "ulp_distance", "subnormal", "ArrayDiff", "array_diffs",
           "ulp_plot"]


class NumbersError(Error, ValueError):
    """A count or a pair of arrays these tools cannot take; the message names the parameter."""


class DtypeError(Error, TypeError):
    """A dtype these tools do not take (float16, float32 and float64 they do)."""


_FLOATS = {2: (np.float16, np.int16), 4: (np.float32, np.int32), 8: (np.float64, np.int64)}


def _float_dtype(dtype) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise DtypeError(f"dtype={str(dtype)[:80]!r}: not a NumPy dtype; choose float16, float32 "
                         f"or float64") from None
    if dt.kind != "f" or dt.itemsize not in _FLOATS:
        raise DtypeError(f"dtype={dt}: choose float16, float32 or float64")
    return dt


def denormals(n: int = 1024, dtype="float32") -> np.ndarray:
    """``n`` values spanning subnormals, the smallest normal (FLT_MIN) boundary, zeros and negatives.

    The first values are the landmarks: ``+0, -0, tiny, -tiny, the largest
    subnormal, the next normal, the smallest subnormal (and its negative),
    2*tiny`` (``tiny`` = ``np.finfo(dtype).tiny``, FLT_MIN for
    float32); the rest are log-spaced from the smallest subnormal to 4*tiny
    with alternating signs.  Deterministic.

    >>> x = denormals(16); bool(x[2] == np.finfo(np.float32).tiny), x.dtype
    (True, dtype('float32'))
    """
    dt = _float_dtype(dtype)
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise NumbersError(f"n={n!r}: the number of values must be an int >= 0")
    info = np.finfo(dt)
    tiny, sub = dt.type(info.tiny), dt.type(info.smallest_subnormal)
    landmarks = np.array([0.0, -0.0, tiny, -tiny, np.nextafter(tiny, dt.type(0)),
                          np.nextafter(tiny, dt.type(np.inf)), sub, -sub, 2 * tiny], dtype=dt)
    rest = max(int(n) - len(landmarks), 0)
    spread = np.geomspace(float(sub), 4 * float(tiny), rest) if rest else np.empty(0)
    spread = spread.astype(dt)
    spread[1::2] *= -1
    return np.concatenate([landmarks, spread])[:n]


def random_inputs(n: int, dtype="float32", seed: int = 0) -> np.ndarray:
    """``n`` reproducible random values of both signs, magnitudes 1e-3 to 1e3 (no subnormals)."""
    dt = _float_dtype(dtype)
    rng = np.random.default_rng(seed)
    mag = 10.0 ** rng.uniform(-3, 3, int(n))
    return (mag * rng.choice([-1.0, 1.0], int(n))).astype(dt)


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
    _float_dtype(a.dtype)
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


def _binned(ulp: np.ndarray, points: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """At most ``points`` (index, value) pairs: the largest value of each run of elements."""
    if ulp.size <= points:
        return np.arange(ulp.size), ulp
    step = -(-ulp.size // points)
    padded = np.zeros(step * points)
    padded[:ulp.size] = ulp
    return np.arange(points) * step, padded.reshape(points, step).max(axis=1)


def ulp_plot(diffs: list[ArrayDiff], baseline: str):
    """A matplotlib Figure: per element, each variant's ULP distance to ``baseline``, one axes
    per array (symlog scale, so 0 and 2**23 both show; above 4096 elements, the largest of each
    run of elements).  Needs matplotlib."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("the ULP plot needs matplotlib: pip install matplotlib") from None
    arrays = list(dict.fromkeys(d.name for d in diffs))
    fig = Figure(figsize=(7.5, 2.2 * max(len(arrays), 1)), layout="constrained")
    axes = fig.subplots(max(len(arrays), 1), 1, squeeze=False)[:, 0]
    for ax, name in zip(axes, arrays):
        for d in diffs:
            if d.name == name and d.variant != baseline:
                x, ulp = _binned(np.minimum(d.ulp, np.uint64(2**53)).astype(np.float64))
                ax.plot(x, ulp, ".", markersize=3, label=f"{d.variant} vs {baseline}")
        ax.set_yscale("symlog", linthresh=1)
        ax.set_title(f"{name}: ULP difference per element", fontsize=10)
        ax.set_xlabel("element")
        ax.set_ylabel("ULP")
        ax.legend(fontsize=8, loc="upper right")
    return fig
