"""Number formats a kernel writes: their bit patterns ("codes"), values, order and ULPs.

``FORMATS`` holds float64, float32, float16, bfloat16, fp8 (``e4m3``, ``e5m2``), fp6 (``e2m3``,
``e3m2``) and fp4 (``e2m1``).  A :class:`Format` turns codes into float64 values and back
(round to nearest, ties to even), orders them (``ordered``: +0 and -0 both 0) and gives the
spacing of its values around a number (``spacing``).  Every method takes a whole array, NumPy
or CuPy, and uses only operations both have.

* :func:`format_of` finds the format of an array or a dtype name (``"bf16"``, ``"fp8_e4m3"``,
  ``ml_dtypes.float8_e5m2``, ``torch.float8_e4m3fn`` ...); integers have none (they are
  compared exactly).
* :func:`codes` reads any array (NumPy, ml_dtypes, CuPy, torch on the CPU or the GPU) as codes.
* :func:`ulp_distance` counts the representable values between two arrays.
* :func:`to_bits` / :func:`from_bits` make fp8/fp6/fp4 data with NumPy alone.

NumPy only: torch, CuPy and ml_dtypes are used only for objects that come from them.

One concept: a number format and the codes of an array in it; reading an array as codes,
rounding values to codes and counting ULPs all turn on the same bit layout (sign, exponent,
mantissa, bias, saturation) that ``Format`` holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import arrays, elements
from ..errors import DtypeError, NumbersError, quote

__all__ = ["Format", "FORMATS", "format_of", "codes", "array_of", "ulp_distance", "to_bits",
           "from_bits", "same_codes"]


@dataclass(frozen=True)
class Format:
    """A binary floating-point format: ``bits`` of storage, a sign bit, ``ebits`` of exponent
    (``bias``), ``mbits`` of mantissa.  ``inf``: whether it has infinities; ``nan``: which codes
    are NaN ("ieee": exponent all ones and a nonzero mantissa; "e4m3": only S.1111.111;
    "none": no NaN at all).  ``container``: the unsigned NumPy type that holds one code (fp6
    and fp4 use the low bits of a byte)."""

    name: str
    bits: int
    ebits: int
    mbits: int
    bias: int
    inf: bool
    nan: str
    container: type

    # ---------------------------------------------------------------- constants

    @property
    def emin(self) -> int:
        """The exponent of the smallest normal value."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        """The exponent of the largest finite value."""
        top = (1 << self.ebits) - 1
        return (top - 1 if self.nan == "ieee" else top) - self.bias

    @property
    def max_code(self) -> int:
        """The code (without sign) of the largest finite value."""
        mmask = (1 << self.mbits) - 1
        if self.nan == "e4m3":
            return (((1 << self.ebits) - 1) << self.mbits) | (mmask - 1)
        return ((self.emax + self.bias) << self.mbits) | mmask

    @property
    def max(self) -> float:
        """The largest finite value (448 for e4m3, 6 for e2m1)."""
        top = (1 << self.mbits) - 1 - (self.nan == "e4m3")
        return math.ldexp(1 + top / (1 << self.mbits), self.emax)

    @property
    def tiny(self) -> float:
        """The smallest normal value."""
        return math.ldexp(1.0, self.emin)

    @property
    def eps(self) -> float:
        """The spacing of the values just above 1."""
        return math.ldexp(1.0, -self.mbits)

    @property
    def inf_code(self) -> int | None:
        """The code (without sign) of +inf; None when the format has no infinities."""
        return ((1 << self.ebits) - 1) << self.mbits if self.inf else None

    @property
    def nan_code(self) -> int | None:
        """The code (without sign) of the NaN :meth:`encode` writes; None when there is none."""
        if self.nan == "ieee":
            return (((1 << self.ebits) - 1) << self.mbits) | (1 << (self.mbits - 1))
        if self.nan == "e4m3":
            return (1 << (self.bits - 1)) - 1
        return None

    # ---------------------------------------------------------------- codes

    def _ints(self, c):
        """Codes as int64 (the float64 ones by their bits, so the sign is the int's sign)."""
        if self.bits == 64:
            return c.view(np.int64)
        return c.astype(np.int64)

    def signbit(self, c):
        """Where the sign bit of the codes is set (-0 included)."""
        return ((self._ints(c) >> (self.bits - 1)) & 1) == 1

    def _fields(self, c):
        c = self._ints(c)
        return (c >> self.mbits) & ((1 << self.ebits) - 1), c & ((1 << self.mbits) - 1)

    def isnan(self, c):
        """Where the codes are NaN."""
        e, m = self._fields(c)
        if self.nan == "ieee":
            return (e == (1 << self.ebits) - 1) & (m != 0)
        if self.nan == "e4m3":
            return (e == (1 << self.ebits) - 1) & (m == (1 << self.mbits) - 1)
        return e < 0      # all False, of the codes' shape and array type

    def isinf(self, c):
        """Where the codes are +inf or -inf."""
        e, m = self._fields(c)
        if not self.inf:
            return e < 0
        return (e == (1 << self.ebits) - 1) & (m == 0)

    def iszero(self, c):
        """Where the codes are +0 or -0."""
        return (self._ints(c) & ((1 << (self.bits - 1)) - 1)) == 0

    def ordered(self, c):
        """Codes mapped to int64 in the order of their values: +0 and -0 both 0, each step one
        representable value, so ``|ordered(a) - ordered(b)|`` is a ULP distance.  NaN codes
        map somewhere beyond the infinities: mask them."""
        c = self._ints(c)
        mag = c & ((1 << (self.bits - 1)) - 1)
        neg = ((c >> (self.bits - 1)) & 1) == 1
        return _where(neg, -mag, mag)

    # ---------------------------------------------------------------- values

    def decode(self, c):
        """The float64 values of the codes (exactly: every value of these formats is a float64)."""
        xp = _xp(c)
        # CuPy's kernels flush float32 subnormals (-ftz=true): a float32 view cast to float64
        # there loses them, so on the device float32 and bfloat16 are decoded from their fields
        host = xp is np
        with np.errstate(invalid="ignore"):       # signalling NaNs stay NaN, quietly
            if self.name in _NATIVE and (host or self.name != "float32"):
                return c.view(_NATIVE[self.name]).astype(np.float64)
            if self.name == "bfloat16" and host:
                return (c.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        e, m = self._fields(c)
        normal = e > 0
        mant = (m + _where(normal, 1 << self.mbits, 0)).astype(np.float64)
        exp = (_where(normal, e, 1) - self.bias - self.mbits).astype(np.int32)
        v = xp.ldexp(mant, exp)
        neg = self.signbit(c)
        if self.inf:
            v = _where(self.isinf(c), np.inf, v)
        if self.nan != "none":
            v = _where(self.isnan(c), np.nan, v)
        return _where(neg, -v, v)           # NaN keeps its sign bit too

    def encode(self, values, saturate: bool = False):
        """Codes of float values, rounded to the nearest representable value, ties to even.

        Beyond the largest finite value: infinity where the format has it (float*, bfloat16,
        e5m2), NaN for e4m3, the largest value for fp6/fp4 (no inf, no NaN); ``saturate=True``
        gives ±max (infinities included) for every format.  A NaN becomes the format's NaN; fp6
        and fp4 have no NaN, so a NaN value raises DtypeError."""
        xp = _xp(values)
        v = xp.asarray(values, dtype=np.float64)
        if self.nan == "none" and bool(xp.any(xp.isnan(v))):
            raise DtypeError(f"{self.name} has no NaN: the values to encode hold NaN")
        if self.name in _NATIVE:
            if saturate:
                v = _where(xp.abs(v) > self.max, xp.copysign(self.max, v), v)
            with np.errstate(over="ignore", invalid="ignore"):     # overflow: inf, as documented
                return v.astype(_NATIVE[self.name]).view(self.container)
        return _round_to_codes(self, xp, v, saturate)

    def spacing(self, x):
        """The format's ULP at ``|x|`` (float64 in, float64 out): the gap from the largest
        representable value <= ``|x|`` to the next one up; below the smallest normal, the
        subnormal spacing; beyond the largest finite value, the spacing at the largest value."""
        xp = _xp(x)
        a = xp.abs(xp.asarray(x, dtype=np.float64))
        finite = xp.isfinite(a)
        normal = finite & (a > 0)
        _, k = xp.frexp(_where(normal, a, 1.0))
        e = _where(normal, k.astype(np.int64) - 1, self.emin)
        e = _where(finite, xp.clip(e, self.emin, self.emax), self.emax)
        s = xp.ldexp(xp.ones(a.shape, np.float64), (e - self.mbits).astype(np.int32))
        return _where(xp.isnan(a), np.nan, s)


def _round_to_codes(fmt: Format, xp, v, saturate: bool):
    """Round float64 values to ``fmt``'s codes, ties to even, in float64 arithmetic: the value
    ``a = r * 2**(e - mbits)`` with ``e`` its exponent (at least emin) has the code magnitude
    ``(e - emin) * 2**mbits + r`` -- carries into the next binade and the subnormals included."""
    a = xp.abs(v)
    finite = xp.isfinite(a)
    safe = _where(finite, a, 0.0)
    _, k = xp.frexp(safe)
    e = xp.maximum(k.astype(np.int64) - 1, fmt.emin)
    r = xp.rint(xp.ldexp(safe, (fmt.mbits - e).astype(np.int32)))
    mag = (e - fmt.emin) * (1 << fmt.mbits) + r.astype(np.int64)
    mag = _where(safe == 0, 0, mag)
    over = (mag > fmt.max_code) | xp.isinf(a)
    if saturate or fmt.nan == "none":
        mag = _where(over, fmt.max_code, mag)
    else:
        mag = _where(over, fmt.inf_code if fmt.inf else fmt.nan_code, mag)
    if fmt.nan != "none":
        mag = _where(xp.isnan(v), fmt.nan_code, mag)
    sign = xp.signbit(v).astype(np.int64) << (fmt.bits - 1)
    return (mag | sign).astype(fmt.container)


_NATIVE = {"float64": np.float64, "float32": np.float32, "float16": np.float16}

FORMATS: dict[str, Format] = {f.name: f for f in [
    Format("float64", 64, 11, 52, 1023, True, "ieee", np.uint64),
    Format("float32", 32, 8, 23, 127, True, "ieee", np.uint32),
    Format("float16", 16, 5, 10, 15, True, "ieee", np.uint16),
    Format("bfloat16", 16, 8, 7, 127, True, "ieee", np.uint16),
    Format("e4m3", 8, 4, 3, 7, False, "e4m3", np.uint8),
    Format("e5m2", 8, 5, 2, 15, True, "ieee", np.uint8),
    Format("e2m3", 6, 2, 3, 1, False, "none", np.uint8),
    Format("e3m2", 6, 3, 2, 3, False, "none", np.uint8),
    Format("e2m1", 4, 2, 1, 1, False, "none", np.uint8),
]}

# other names of the formats: NumPy's, ml_dtypes', torch's (without "torch."), CUDA's habits
_ALIASES = {
    "float64": ["f8", "fp64", "double", "float"], "float32": ["f4", "fp32", "single"],
    "float16": ["f2", "fp16", "half"], "bfloat16": ["bf16"],
    "e4m3": ["e4m3fn", "fp8_e4m3", "fp8_e4m3fn", "float8_e4m3fn", "fp8"],
    "e5m2": ["fp8_e5m2", "float8_e5m2"],
    "e2m3": ["e2m3fn", "fp6_e2m3", "float6_e2m3fn"], "e3m2": ["e3m2fn", "fp6_e3m2", "float6_e3m2fn"],
    "e2m1": ["e2m1fn", "fp4", "fp4_e2m1", "float4_e2m1fn"],
}
# e2m1 packed two to a byte, element 2i in the low nibble (CUDA's __nv_fp4x2, torch's dtype)
_PACKED = {"e2m1x2", "fp4x2", "float4_e2m1fn_x2"}
_NAMES = {**{n: n for n in FORMATS}, **{a: n for n, al in _ALIASES.items() for a in al},
          **{p: "e2m1" for p in _PACKED}}


# ---------------------------------------------------------------------- arrays of any kind

def _xp(a):
    """The array module of ``a``: CuPy for CuPy arrays, NumPy for everything else."""
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy
        return cupy
    return np


def _where(cond, a, b):
    return _xp(cond).where(cond, a, b)


def _origin(x) -> str:
    return type(x).__module__.split(".")[0]


def _dtype_name(dtype) -> str:
    """A dtype's plain name: "float32", "bfloat16", "float8_e4m3fn" (torch's without "torch.")."""
    if _origin(dtype) == "torch":
        return str(dtype).removeprefix("torch.")
    return np.dtype(dtype).name


def _cupy():
    try:
        import cupy
        return cupy
    except ImportError:
        return None


def array_of(x) -> tuple[Any, Any]:
    """``(xp, array)``: ``x`` as a NumPy or CuPy array (``xp`` the module), without a copy where
    it can.  A torch tensor goes through DLPack to CuPy when it is on the GPU and CuPy is
    importable, else to the host; its floats arrive as unsigned ints of the same width
    (NumPy has no bfloat16/fp8/fp4 dtype).  Lists and scalars become NumPy arrays."""
    origin = arrays.library(x)
    if origin == "cupy":
        return _xp(x), x
    if origin != "torch":
        return np, np.asarray(x)
    import torch
    if x.is_meta:
        raise DtypeError("a torch tensor on the meta device holds no data: give one on the CPU "
                         "or a GPU")
    t = x.detach().contiguous()
    bits = "float" in str(t.dtype)        # bfloat16, float8_*, float4_e2m1fn_x2 included
    if bits:
        t = t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    xp, a = np, None
    if t.is_cuda:
        cupy = _cupy()
        if cupy is not None:
            xp, a = cupy, cupy.from_dlpack(t)
    if a is None:
        a = t.cpu().numpy()
    if bits:
        a = a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])
    return xp, a


def _format_name(dtype) -> str | None:
    """The format name of a dtype (name, NumPy/ml_dtypes/torch dtype); "" for integers."""
    if isinstance(dtype, str):
        name = dtype.strip().lower().removeprefix("torch.")
        if name in _NAMES:
            return _NAMES[name]
        try:
            return "" if np.dtype(name).kind in "iub" else None
        except TypeError:
            return None
    try:
        name = _dtype_name(dtype)
    except TypeError:
        return None
    if name in _NAMES:
        return _NAMES[name]
    if name == "bool" or name.startswith(("int", "uint")):
        return ""
    return None


# A kernel parameter's pointee type that names a number format: how arrays of bit patterns
# (uint16, uint8) passed there are read (k.verify, %%cuda_compare's numbers, %%cuda_tune):
# a view of :mod:`cuda_magic.elements`.
FORMAT_TYPES = elements.format_types()


def format_of(x=None, dtype=None) -> Format | None:
    """The :class:`Format` of an array ``x`` or of ``dtype`` (which wins: it says how to read
    ``x``'s bits).  ``dtype``: a Format, a name or alias ("bfloat16", "bf16", "e4m3", "fp8_e4m3",
    "float8_e4m3fn", "fp4", "e2m1x2", ...), a NumPy or ml_dtypes dtype, a torch dtype.  None
    for integer and bool dtypes: those are compared exactly (unsigned ints are codes only
    when ``dtype`` names a format).  DtypeError for anything else, naming it."""
    if isinstance(dtype, Format):
        return dtype
    if dtype is None:
        if x is None:
            raise DtypeError("format_of needs an array x or a dtype")
        dtype = getattr(x, "dtype", None)
        if dtype is None:
            dtype = np.asarray(x).dtype
    name = _format_name(dtype)
    if name is None:
        shown = quote(dtype, 60) if isinstance(dtype, str) else repr(_shown(dtype))
        raise DtypeError(f"dtype={shown}: not a number format these tools read; choose one of "
                         f"{', '.join(FORMATS)}, an alias (bf16, fp8_e4m3, fp4, e2m1x2, ...) or "
                         f"an integer dtype")
    return FORMATS[name] if name else None


def _shown(dtype) -> str:
    try:
        return _dtype_name(dtype)
    except TypeError:
        return str(dtype)[:80]


def _names_packed(dtype) -> bool:
    """Whether ``dtype`` names e2m1 packed two per byte ("e2m1x2", torch.float4_e2m1fn_x2)."""
    if isinstance(dtype, str):
        return dtype.strip().lower().removeprefix("torch.") in _PACKED
    return _origin(dtype) == "torch" and str(dtype).removeprefix("torch.") in _PACKED


def _is_packed(x, dtype) -> bool:
    """Whether ``x`` holds e2m1 codes two per byte: torch float4_e2m1fn_x2, or dtype says so."""
    return _names_packed(dtype) or (_origin(x) == "torch" and _names_packed(x.dtype))


def _unpack(xp, a):
    """Bytes of two e2m1 codes each -> one code per byte, the low nibble first, along the last axis."""
    a = a.reshape(1) if a.ndim == 0 else a
    pair = xp.stack([a & 0xF, a >> 4], axis=-1)
    return pair.reshape(a.shape[:-1] + (2 * a.shape[-1],))


def codes(x, fmt=None) -> tuple[Any, Any]:
    """``(xp, codes)``: ``x`` read as codes of ``fmt`` (a Format, or anything :func:`format_of`
    takes; default: ``x``'s own format), an array of ``fmt.container`` in ``x``'s shape.

    ``x``: an array of the format's own dtype (NumPy float, ml_dtypes, torch), or unsigned
    (or signed) ints of the container's width holding the bit patterns (CuPy, NumPy, torch).
    e2m1 packed two per byte (torch ``float4_e2m1fn_x2``, or ``fmt="e2m1x2"`` with uint8) is
    unpacked along the last axis, element 2i from the low nibble.  Values of another float
    format are not rounded here: DtypeError (see :func:`to_bits`)."""
    packed = _is_packed(x, fmt)
    f = format_of(x, fmt)
    if f is None:
        raise DtypeError(f"dtype={_shown(fmt if fmt is not None else x.dtype)!r}: integers have "
                         f"no codes; name a number format")
    xp, a = array_of(x)
    own = _format_name(a.dtype)
    if own and FORMATS[own] is not f and not packed:
        raise DtypeError(f"the array holds {_shown(a.dtype)} values, not {f.name} codes: convert "
                         f"them with to_bits(values, {f.name!r}) or compare them as values")
    if a.dtype.kind not in "iuf" and not own:
        raise DtypeError(f"an array of {_shown(a.dtype)} cannot hold {f.name} codes")
    width = 1 if packed else np.dtype(f.container).itemsize
    if a.dtype.itemsize != width:
        raise DtypeError(f"{f.name} codes{' packed two per byte' if packed else ''} come in "
                         f"{width}-byte elements, not {_shown(a.dtype)}")
    c = a.view(np.uint8 if packed else f.container)
    if packed:
        c = _unpack(xp, c)
    elif f.bits < 8 and c.size and bool(xp.any(c >> f.bits)):
        raise DtypeError(f"{f.name} codes have {f.bits} bits; the array holds larger numbers "
                         f"(max {int(c.max())})")
    return xp, c


def same_codes(x, fmt: Format) -> bool:
    """Whether ``x`` holds ``fmt``'s codes (its own dtype, or unsigned ints of its container),
    rather than values of another format or integers to compare as values."""
    dt = getattr(x, "dtype", None)
    dt = np.asarray(x).dtype if dt is None else dt
    name = _format_name(dt)
    if name:
        return FORMATS[name] is fmt
    if _origin(dt) == "torch":
        return str(dt) == f"torch.uint{8 * np.dtype(fmt.container).itemsize}"
    return np.dtype(dt).kind == "u" and np.dtype(dt).itemsize == np.dtype(fmt.container).itemsize


def values_of(x):
    """``(xp, float64 values)`` of ``x``: decoded from its own format, or its ints as floats."""
    f = format_of(x)
    if f is None:
        xp, a = array_of(x)
        return xp, a.astype(np.float64)
    xp, c = codes(x, f)
    return xp, f.decode(c)


# ---------------------------------------------------------------------- distances

def _int_distance(xp, a, b):
    """|a - b| of two integer arrays, exactly, as uint64 (wrapping arithmetic: |a - b| < 2**64)."""
    if a.dtype != b.dtype:
        a, b = a.astype(np.int64), b.astype(np.int64)
    d = a.astype(np.uint64) - b.astype(np.uint64)
    return _where(a >= b, d, (~d) + np.uint64(1))


def ulp_distance(a, b, dtype=None):
    """Per element, how many representable values lie between ``a`` and ``b`` (0 where equal).

    ``a`` and ``b`` in one format (float64/32/16, bfloat16, fp8/fp6/fp4, as their dtype or as
    bit patterns with ``dtype=`` naming the format): the count of steps, as uint64, across zero
    (+0 and -0 are one value) and through the subnormals; NaN against NaN 0, NaN against a
    number the largest uint64.  Integers: ``|a - b|`` as uint64.

    ``b`` wider (or any other format: a float32/float64 reference for an fp8 output): the
    distance in ``a``'s ULPs at ``b``, ``|a - b| / spacing(b)``, as float64 -- a correctly
    rounded ``a`` is within 0.5 (exactly 0.5 at a tie), a truncated one within 1.  NaN against
    NaN 0, against a number inf.  A NumPy array (CuPy for CuPy input)."""
    fa = format_of(a, dtype)
    if fa is None:
        fb = format_of(b)
        if fb is not None:
            raise NumbersError(f"ulp_distance: a holds integers, b {fb.name} values; name a's "
                               f"format with dtype= if a holds its bit patterns")
        xp, x = array_of(a)
        y = _to(xp, array_of(b)[1])
        _same_shape(x, y)
        return _int_distance(xp, x.astype(np.int64) if x.dtype == bool else x,
                             y.astype(np.int64) if y.dtype == bool else y)
    xp, x = codes(a, dtype if dtype is not None else fa)
    if same_codes(b, fa):
        y = _to(xp, codes(b, fa)[1])
        _same_shape(x, y)
        d = _int_distance(xp, fa.ordered(x), fa.ordered(y))
        na, nb = fa.isnan(x), fa.isnan(y)
        d = _where(na & nb, np.uint64(0), d)
        return _where(na ^ nb, np.uint64(np.iinfo(np.uint64).max), d)
    ref = _to(xp, values_of(b)[1])
    _same_shape(x, ref)
    return wide_distance(fa, fa.decode(x), ref)


def wide_distance(fmt: Format, out, ref):
    """``|out - ref| / fmt.spacing(ref)`` of float64 values (``out`` decoded from ``fmt``):
    fractional ULPs of ``fmt``; NaN against NaN and an infinity against itself 0, NaN against
    a number inf."""
    xp = _xp(out)
    with np.errstate(invalid="ignore", over="ignore"):
        d = xp.abs(out - ref) / fmt.spacing(ref)
    no, nr = xp.isnan(out), xp.isnan(ref)
    d = _where(no & nr, 0.0, d)
    d = _where(no ^ nr, np.inf, d)
    return _where(xp.isinf(out) & (out == ref), 0.0, d)


def _same_shape(x, y):
    if x.shape != y.shape:
        raise NumbersError(f"ulp_distance needs arrays of one shape, not {tuple(x.shape)} and "
                           f"{tuple(y.shape)}")


def _to(xp, a):
    """``a`` moved to ``xp``'s memory (host <-> device) when it is not there."""
    if xp is np and _origin(a) == "cupy":
        return a.get()
    if xp is not np and _origin(a) != "cupy":
        return xp.asarray(a)
    return a


# ---------------------------------------------------------------------- NumPy in, NumPy out

def to_bits(values, dtype, saturate: bool = False) -> np.ndarray:
    """The codes of ``values`` in the format ``dtype`` names (NumPy array of its container:
    uint8 for fp8/fp6/fp4, uint16 for float16/bfloat16), rounded to nearest, ties to even;
    see :meth:`Format.encode` for overflow, NaN and ``saturate``.  ``dtype="e2m1x2"`` packs
    two fp4 codes per byte along the last axis (even length), element 2i in the low nibble.

    >>> to_bits([1.0, 0.3, 500.0], "e4m3").tolist()     # 500 overflows: e4m3's NaN
    [56, 42, 127]
    """
    f = format_of(dtype=dtype)
    if f is None:
        raise DtypeError(f"dtype={_shown(dtype)!r}: an integer dtype has no bit patterns to make")
    c = f.encode(_floats(values), saturate=saturate)
    if not _names_packed(dtype):
        return c
    if c.ndim == 0 or c.shape[-1] % 2:
        raise DtypeError(f"dtype={dtype!r} packs pairs: the last axis needs an even length, "
                         f"not {c.shape}")
    return (c[..., 0::2] | (c[..., 1::2] << 4)).astype(np.uint8)


def _floats(values) -> np.ndarray:
    """``values`` (numbers, an array of any format, a tensor) as float64 values on the host; a
    DtypeError naming ``values`` for what holds none (text, a ragged list, an int too large
    for a float)."""
    if _origin(values) in ("torch", "cupy"):
        return _to(np, values_of(values)[1])
    try:
        v = np.asarray(values)
        if _format_name(v.dtype):
            return values_of(v)[1]
        return np.asarray(v, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        raise DtypeError(f"values={quote(values, 60)}: give numbers (an array, a list of one "
                         f"shape, a number) within float64's range") from None


def from_bits(codes_, dtype) -> np.ndarray:
    """The float64 values of bit patterns ``codes_`` of the format ``dtype`` names (a NumPy
    array; ``dtype="e2m1x2"`` unpacks two fp4 codes per byte, the low nibble first).

    >>> from_bits([0x38, 0x7F], "e4m3").tolist()
    [1.0, nan]
    """
    f = format_of(dtype=dtype)
    if f is None:
        raise DtypeError(f"dtype={_shown(dtype)!r}: an integer dtype has no bit patterns to read")
    if _origin(codes_) in ("torch", "cupy"):
        a = _to(np, array_of(codes_)[1])
    else:
        try:
            a = np.asarray(codes_)
        except (ValueError, TypeError, OverflowError):
            raise DtypeError(f"codes_={quote(codes_, 60)}: give bit patterns, an array of "
                             f"unsigned ints") from None
    width = 1 if _names_packed(dtype) else np.dtype(f.container).itemsize
    if a.dtype.kind in "iu" and a.dtype.itemsize != width:
        if a.size and (int(a.min()) < 0 or int(a.max()) >= 1 << (8 * width)):
            raise DtypeError(f"{f.name} bit patterns are {8 * width}-bit unsigned numbers; "
                             f"codes_ holds {int(a.min())}..{int(a.max())}")
        a = a.astype(np.dtype(f"u{width}"))
    return f.decode(codes(a, dtype)[1])
