"""Numbers for comparisons: denormal-heavy and random inputs, the ULP plot.

NumPy only; no CUDA.  ``denormals(n)`` makes inputs that show what FTZ does;
``ulp_plot(diffs, baseline)`` draws the per-element ULP differences that
:func:`cuda_magic.correctness.reference.array_diffs` found (judging outputs, ULP distances
included, is :mod:`cuda_magic.correctness`: ``cuda_magic.verify``, ``cuda_magic.ulp_distance``).
"""

from __future__ import annotations

import numpy as np

from ..correctness.reference import ArrayDiff, float_dtype
from ..errors import DtypeError, NumbersError

__all__ = ["denormals", "random_inputs", "ulp_plot", "DtypeError", "NumbersError"]


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
    dt = float_dtype(dtype)
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
    dt = float_dtype(dtype)
    rng = np.random.default_rng(seed)
    mag = 10.0 ** rng.uniform(-3, 3, int(n))
    return (mag * rng.choice([-1.0, 1.0], int(n))).astype(dt)


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
