"""Inputs for checking a kernel: seeded random values and edge cases, for every number format
:mod:`.formats` knows (float64/32/16, bfloat16, fp8 e4m3/e5m2, fp6 e2m3/e3m2, fp4 e2m1) and for
integers; and the sentinel an output is filled with before a launch.

``dtype`` is a NumPy dtype (float16/32/64, an integer, bool), an ml_dtypes dtype
(``ml_dtypes.bfloat16``, ``float8_e4m3fn``, ...) or a format name or alias (``"bfloat16"``,
``"bf16"``, ``"e4m3"``, ``"fp8_e5m2"``, ``"e2m1x2"`` for fp4 packed two per byte).  What comes
back: an array of that NumPy/ml_dtypes dtype; for a format name without a NumPy dtype (bfloat16,
fp8, fp6, fp4), the format's bit patterns in its unsigned container (uint16, uint8; fp6/fp4 one
code per byte, ``e2m1x2`` two per byte, element 2i in the low nibble).  Every function takes
``rng``: a ``numpy.random.Generator``, or an int seed (None: seed 0): the same seed gives the
same values.  NumPy only.

    >>> x = random((4, 8), "bfloat16", 1)          # uint16 bit patterns of N(0, 1) values
    >>> e = edge(1000, "float32", 1)               # +-0, +-Inf, NaN, subnormals, FLT_MAX, ... inside
"""

from __future__ import annotations

import numpy as np

from ..errors import DtypeError

__all__ = ["random", "edge", "sentinel", "landmarks", "target"]

_PACKED = ("e2m1x2", "fp4x2", "float4_e2m1fn_x2", "e2m1fnx2")
_NATIVE = ("float16", "float32", "float64")


def _rng(rng) -> np.random.Generator:
    if rng is None:
        return np.random.default_rng(0)
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise DtypeError(f"rng={rng!r}: give a numpy.random.Generator or an int seed")


def _shape(shape) -> tuple[int, ...]:
    t = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if not all(isinstance(n, (int, np.integer)) and n >= 0 for n in t):
        raise DtypeError(f"shape={shape!r}: give a non-negative int or a tuple of them")
    return tuple(int(n) for n in t)


def target(dtype):
    """``(format, NumPy dtype of the result, packed)`` for ``dtype``: the :class:`~.formats.Format`
    (None for integers and bool), the dtype the arrays here come in, and whether two fp4 codes
    share a byte.  A DtypeError naming ``dtype`` when it is none of these."""
    from .formats import FORMATS, format_of
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if isinstance(name, str) and name.lower() in _PACKED:
        return FORMATS["e2m1"], np.dtype(np.uint8), True
    if isinstance(dtype, str):
        try:
            d = np.dtype(dtype)
        except TypeError:
            d = None
        if d is not None and d.kind in "iub":
            return None, d, False
    elif isinstance(dtype, (np.dtype, type)):
        d = np.dtype(dtype)
        if d.kind in "iub":
            return None, d, False
    fmt = format_of(dtype=dtype)
    if fmt is None:                               # an integer or bool dtype that format_of named
        return None, np.dtype(dtype), False
    if fmt.name in _NATIVE:
        return fmt, np.dtype(fmt.name), False
    if not isinstance(dtype, str):
        try:
            d = np.dtype(dtype)                   # an ml_dtypes dtype: its own arrays
            if d.itemsize == np.dtype(fmt.container).itemsize:
                return fmt, d, False
        except TypeError:
            pass
    return fmt, np.dtype(fmt.container), False


def _finish(codes: np.ndarray, fmt, out: np.dtype, packed: bool, shape) -> np.ndarray:
    """Codes (one per element, in the container) as the result dtype, in ``shape``."""
    if packed:
        codes = codes.astype(np.uint8).reshape(-1, 2)
        codes = (codes[:, 0] | (codes[:, 1] << 4)).astype(np.uint8)
    codes = codes.astype(np.dtype(fmt.container), copy=False)
    if out.kind == "u" and out.itemsize == codes.itemsize:
        return codes.astype(out, copy=False).reshape(shape)
    return codes.view(out).reshape(shape)


# --- the bit fields of a format ----------------------------------------------------------------

class _Fields:
    """A format's codes by sign, exponent field and mantissa field, as Python ints."""

    def __init__(self, fmt):
        self.e, self.m = int(fmt.ebits), int(fmt.mbits)
        self.bias = int(fmt.bias)
        self.sign = 1 << (self.e + self.m)
        self.top = (1 << self.e) - 1               # the exponent field's all-ones value
        self.mant = (1 << self.m) - 1
        self.has_inf = bool(fmt.inf)
        self.nan = fmt.nan                          # "ieee", "e4m3" or "none"
        if self.has_inf or self.nan == "ieee":
            self.emax, self.max_mant = self.top - 1, self.mant
        elif self.nan == "e4m3":
            self.emax, self.max_mant = self.top, self.mant - 1
        else:
            self.emax, self.max_mant = self.top, self.mant

    def code(self, exp, mant, neg=False) -> int:
        return (self.sign if neg else 0) | (int(exp) << self.m) | int(mant)

    @property
    def max(self) -> int:
        return self.code(self.emax, self.max_mant)

    @property
    def inf(self) -> int | None:
        return self.code(self.top, 0) if self.has_inf else None

    @property
    def qnan(self) -> int | None:
        if self.nan == "ieee":
            return self.code(self.top, 1 << (self.m - 1))
        if self.nan == "e4m3":
            return self.code(self.top, self.mant)
        return None

    def finite(self, rng, n: int, lo: int, hi: int) -> np.ndarray:
        """``n`` finite codes, exponent fields ``lo..hi``, any mantissa, either sign."""
        lo, hi = max(lo, 0), min(hi, self.emax)
        exp = rng.integers(lo, hi + 1, n, dtype=np.uint64)
        mant = rng.integers(0, self.mant + 1, n, dtype=np.uint64) if self.m else np.zeros(n, np.uint64)
        at_top = exp == self.emax
        mant[at_top] = np.minimum(mant[at_top], self.max_mant)
        return (rng.integers(0, 2, n, dtype=np.uint64) * np.uint64(self.sign)
                | (exp << np.uint64(self.m)) | mant)

    def subnormal(self, rng, n: int) -> np.ndarray:
        if not self.m:
            return np.zeros(n, np.uint64)
        return (rng.integers(0, 2, n, dtype=np.uint64) * np.uint64(self.sign)
                | rng.integers(1, self.mant + 1, n, dtype=np.uint64))


def landmarks(dtype) -> np.ndarray:
    """The values every :func:`edge` array of at least this many elements holds, in ``dtype``
    (as :func:`edge` returns it): for floats +-0, the smallest and largest subnormal, the smallest
    normal, 1 and the values either side of it, the largest finite value, all of both signs, then
    +-Inf and NaN (a negative one too) where the format has them; for integers the minimum, maximum,
    0, 1, -1 (signed) and the neighbours of the extremes; for bool False and True."""
    fmt, out, packed = target(dtype)
    if fmt is None:
        if out.kind == "b":
            return np.array([False, True])
        info = np.iinfo(out)
        vals = [info.min, info.max, 0, 1, info.min + 1, info.max - 1]
        if info.min < 0:
            vals.append(-1)
        return np.array(sorted(set(vals), key=vals.index), dtype=out)
    codes = _landmark_codes(_Fields(fmt))
    if packed and codes.size % 2:
        codes = np.append(codes, codes[:1])
    n = codes.size // 2 if packed else codes.size
    return _finish(codes, fmt, out, packed, (n,))


def _landmark_codes(f: _Fields) -> np.ndarray:
    one = f.code(f.bias, 0) if f.bias <= f.emax else f.max
    below = one - 1 if one > 0 else one
    positive = [0, 1, f.mant, f.code(1, 0), one, one + 1 if one < f.max else one, below, f.max]
    if not f.m:
        positive = [0, f.code(1, 0), one, f.max]
    vals = []
    for v in positive:
        vals += [v, v | f.sign]
    if f.inf is not None:
        vals += [f.inf, f.inf | f.sign]
    if f.qnan is not None:
        vals += [f.qnan, f.qnan | f.sign]
    seen, out = set(), []
    for v in vals:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return np.array(out, dtype=np.uint64)


# --- random ------------------------------------------------------------------------------------

def random(shape, dtype="float32", rng=None, *, low=None, high=None) -> np.ndarray:
    """Seeded random values of ``dtype`` in ``shape``.

    Floats: standard normal values (``low``/``high`` given: uniform in [low, high)), rounded to
    the format to nearest even (values past a narrow format's largest one saturate to it).
    Integers: uniform in [``low``, ``high``] (both included; default -100..100 for signed and
    0..200 for unsigned types, cut to the type's range); bool: either, evenly.
    """
    shape, gen = _shape(shape), _rng(rng)
    fmt, out, packed = target(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if fmt is None:
        if out.kind == "b":
            return gen.integers(0, 2, shape).astype(bool)
        info = np.iinfo(out)
        lo = max(info.min, -100 if info.min < 0 else 0) if low is None else int(low)
        hi = min(info.max, 100 if info.min < 0 else 200) if high is None else int(high)
        if not info.min <= lo <= hi <= info.max:
            raise DtypeError(f"low={lo}, high={hi}: not a range of {out.name} "
                             f"({info.min} to {info.max})")
        return gen.integers(lo, hi, shape, dtype=out, endpoint=True)
    count = 2 * n if packed else n
    if low is not None or high is not None:
        lo = -1.0 if low is None else float(low)
        hi = 1.0 if high is None else float(high)
        values = gen.uniform(lo, hi, count)
    else:
        values = gen.standard_normal(count)
    if fmt.name in _NATIVE and not packed:
        with np.errstate(over="ignore"):
            return values.astype(out).reshape(shape)
    from .formats import to_bits
    codes = np.asarray(to_bits(values, fmt.name, saturate=True))
    return _finish(codes, fmt, out, packed, shape)


# --- edge cases --------------------------------------------------------------------------------

# What the elements past the landmarks are, per float format (fractions of the array).
_MIX = (("moderate", 0.30),     # exponents within 2**-4 .. 2**4 of 1: ordinary arithmetic
        ("any", 0.20),          # any finite exponent: huge and tiny magnitudes, log-uniform
        ("subnormal", 0.14),
        ("tiny", 0.10),         # the two smallest normal binades
        ("huge", 0.10),         # the largest binade: sums and products overflow
        ("zero", 0.08),         # +0 and -0
        ("inf", 0.04),
        ("nan", 0.04))


def edge(shape, dtype="float32", rng=None) -> np.ndarray:
    """Seeded edge cases of ``dtype`` in ``shape``: every :func:`landmarks` value at a random
    place (when the array has room for them all), the rest a mix.

    Floats: 30% moderate magnitudes (2**-4 to 2**4), 20% any finite magnitude (log-uniform over
    the whole exponent range), 14% subnormals, 10% in the two smallest normal binades, 10% in the
    largest binade, 8% +-0, 4% +-Inf and 4% NaN (formats without Inf or NaN -- e4m3 has NaN
    only, fp6 and fp4 neither -- get moderate values there instead); random signs.  Integers:
    half the landmarks (the extremes, 0, +-1), half uniform over the whole range.  bool: random.
    """
    shape, gen = _shape(shape), _rng(rng)
    fmt, out, packed = target(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if fmt is None:
        marks = landmarks(out)
        if out.kind == "b":
            vals = gen.integers(0, 2, n).astype(bool)
        else:
            info = np.iinfo(out)
            vals = gen.integers(info.min, info.max, n, dtype=out, endpoint=True)
            pick = gen.random(n) < 0.5
            vals[pick] = gen.choice(marks, int(pick.sum()))
        return _place(vals, marks, gen).reshape(shape)
    f = _Fields(fmt)
    count = 2 * n if packed else n
    codes = _mix(f, gen, count)
    codes = _place(codes, _landmark_codes(f), gen)
    return _finish(codes, fmt, out, packed, shape)


def _mix(f: _Fields, gen, n: int) -> np.ndarray:
    kinds = np.array([k for k, _ in _MIX])
    p = np.array([w for _, w in _MIX], dtype=np.float64)
    which = gen.choice(len(kinds), n, p=p / p.sum())
    codes = np.zeros(n, np.uint64)
    for i, kind in enumerate(kinds):
        sel = np.flatnonzero(which == i)
        k = sel.size
        if not k:
            continue
        if kind == "moderate" or (kind == "inf" and f.inf is None) or (kind == "nan" and f.qnan is None):
            c = f.finite(gen, k, f.bias - 4, f.bias + 4)
        elif kind == "any":
            c = f.finite(gen, k, 1, f.emax)
        elif kind == "subnormal":
            c = f.subnormal(gen, k)
        elif kind == "tiny":
            c = f.finite(gen, k, 1, 2)
        elif kind == "huge":
            c = f.finite(gen, k, f.emax, f.emax)
        elif kind == "zero":
            c = gen.integers(0, 2, k, dtype=np.uint64) * np.uint64(f.sign)
        elif kind == "inf":
            c = np.full(k, f.inf, np.uint64) | (gen.integers(0, 2, k, dtype=np.uint64) * np.uint64(f.sign))
        else:
            c = np.full(k, f.qnan, np.uint64) | (gen.integers(0, 2, k, dtype=np.uint64) * np.uint64(f.sign))
        codes[sel] = c
    return codes


def _place(vals: np.ndarray, marks: np.ndarray, gen) -> np.ndarray:
    """``vals`` with each landmark written at a random place (all of them when there is room)."""
    n = vals.size
    if n == 0:
        return vals
    marks = marks.astype(vals.dtype)
    k = min(n, marks.size)
    order = gen.permutation(marks.size)[:k]
    vals[gen.choice(n, k, replace=False)] = marks[order]
    return vals


# --- the output's contents before a launch -----------------------------------------------------

def sentinel(shape, dtype="float32") -> np.ndarray:
    """An array of ``dtype`` in ``shape`` filled with the value no kernel writes by accident:
    for floats a quiet NaN with the payload 0x5A5A... (float32 ``0x7FDA5A5A``, float16
    ``0x7E5A``, bfloat16 ``0x7FDA``, e5m2 ``0x7E``) or e4m3's one NaN (``0x7F``); fp6 and fp4,
    which have no NaN, their most negative value (all bits set); integers the bytes 0x5A
    (int32 ``0x5A5A5A5A``); bool True.  An output still holding it after the launch was not
    written."""
    shape = _shape(shape)
    fmt, out, packed = target(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if fmt is None:
        if out.kind == "b":
            return np.ones(shape, bool)
        return np.frombuffer(b"\x5a" * (n * out.itemsize), dtype=out).reshape(shape).copy()
    f = _Fields(fmt)
    code = f.qnan
    if code is not None and f.nan == "ieee" and f.m > 1:
        payload = int("5A" * 8, 16) & ((1 << (f.m - 1)) - 1)
        code |= payload
    if code is None:
        code = f.max | f.sign
    codes = np.full(2 * n if packed else n, code, np.uint64)
    return _finish(codes, fmt, out, packed, shape)
