"""Tolerance rules: when is an output element close enough to its reference?

Give at most one kind of rule to ``verify`` (``ulp=`` with ``reduction=``, or ``rtol=``/``atol=``):

* ``ulp=N`` -- an element passes when it is at most N ULPs from the reference (N may be
  fractional: ``ulp=0.5`` against a wider reference means "correctly rounded").
* ``reduction=K`` -- the output is a reduction (a sum, a dot product) of K terms: an element
  passes when ``|out - ref| <= N * ULP(max|ref|) * sqrt(K)``, N from ``ulp=`` or the default
  below.  The bound is absolute, at the scale of the largest reference value, so a sum that
  cancels to near zero is not judged at the ULP of its tiny result.
* ``rtol=`` / ``atol=`` -- ``|out - ref| <= atol + rtol * |ref|`` (either alone: the other 0).
* Nothing -- the default of the output's format: an element passes when it is at most D ULPs
  from the reference, OR ``|out - ref| <= D * ULP(max|ref|)`` (a floor, so a value cancelling
  to near zero is judged at the scale of the output; limited, see below):

  ============================  ======================  ==================
  output format                 D (same-format ref)     D (wider ref)
  ============================  ======================  ==================
  float64                       64                      --
  float32                       64                      64
  float16                       4                       4
  bfloat16                      2                       2
  e4m3, e5m2 (fp8)              1                       0.5 + 1/64
  e2m3, e3m2 (fp6), e2m1 (fp4)  1                       0.5 + 1/64
  integers (any width)          exact                   exact
  ============================  ======================  ==================

  A wider reference (float32/float64 values for an fp8/fp6/fp4 output) is measured in the
  output's ULPs, fractionally: a correctly rounded output is within 0.5 -- exactly 0.5 at a
  tie, whichever way the tie went -- and a truncated one up to 1; the 1/64 is the wider
  reference's own rounding noise.  There the floor does not apply (each element is a rounding of
  its own value: a truncated small element must not pass at the scale of the largest).
  float16/bfloat16/float32 outputs keep their D against a
  wider reference: their kernels compute in the format, and the D is that arithmetic's error.

  The floor's limit: cancellation leaves a small result's low bits wrong, not its magnitude,
  except in the few results at the noise level itself.  So the floor passes elements off by a
  factor of 2 or more (zero for a non-zero reference, half or twice it, the other sign) in at
  most 1% of the output (rounded up: one element of a small output); when there are more,
  they fail -- an output wrong in its small elements (every value below 1 written as 0 beside
  values up to 1e8) is not a cancellation.  A subnormal flushed to zero does not count (its
  error is below the format's smallest normal), nor, for float32, a result below 2**-102 (24
  binades above the smallest normal) where an FTZ build flushed a subnormal operand.  ``reduction=K`` and ``atol=`` have no such
  limit: they say the error is absolute.

Whatever the rule: a NaN must be NaN where the reference is NaN, an infinity the same infinity;
a zero of the wrong sign passes (it is counted).  Integer outputs are always compared exactly.

ULP(x) is the format's spacing at ``|x|`` (:meth:`~cuda_magic.correctness.formats.Format.spacing`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ..errors import VerifyError, quote
from .formats import Format

__all__ = ["Rule", "DEFAULT_ULP", "WIDER_ULP", "FLOOR_ONE_IN", "default_ulp", "floor_allowance",
           "off_by_2x", "flush_band", "check_params", "make_rule"]

# D per format, reference in the output's own format (the table above)
DEFAULT_ULP = {"float64": 64, "float32": 64, "float16": 4, "bfloat16": 2,
               "e4m3": 1, "e5m2": 1, "e2m3": 1, "e3m2": 1, "e2m1": 1}
# D of the fp8/fp6/fp4 formats against a wider reference: correctly rounded, plus its noise
WIDER_ULP = 0.5 + 1 / 64
# the default's floor passes elements off by a factor of 2 or more in at most one element in
# this many (1%, the share the p99 leaves out): more is a wrong output, not cancellation
FLOOR_ONE_IN = 100
# the most terms reduction= takes (no sum has more; sqrt(K) must be a float)
MAX_TERMS = 1 << 64


def floor_allowance(size: int) -> int:
    """How many of ``size`` elements the default's floor may pass while they are off by a
    factor of 2 or more: 1%, rounded up."""
    return -(-int(size) // FLOOR_ONE_IN)


def off_by_2x(xp, fmt: Format, ov, rv):
    """Per element, whether ``ov`` is off from ``rv`` by a factor of 2 or more (either way, a
    zero against a non-zero, the other sign), and not both in the format's flush band
    (:func:`flush_band`)."""
    ao, ar = xp.abs(ov), xp.abs(rv)
    with np.errstate(invalid="ignore", over="ignore"):
        off = (ao >= 2 * ar) | (ar >= 2 * ao) | ((ov > 0) & (rv < 0)) | ((ov < 0) & (rv > 0))
    return off & (xp.maximum(ao, ar) >= flush_band(fmt))


def flush_band(fmt: Format) -> float:
    """Below this, a result may be flushed: a subnormal; for float32 also the 24 binades of
    normals above it (below 2**-102), where a subnormal operand flushed to zero (``--ftz=true``,
    ``--use_fast_math``: the hardware flushes float32 operands) takes a product to zero or to
    another value wholly.  The narrow formats are stored, not computed in: no band."""
    if fmt.name == "float32":
        return fmt.tiny * 2.0 ** (fmt.mbits + 1)
    return fmt.tiny


def default_ulp(fmt: Format, wider: bool = False) -> float:
    """The default D of ``fmt`` (the table in this module's help)."""
    if wider and fmt.bits <= 8:
        return WIDER_ULP
    return DEFAULT_ULP[fmt.name]


@dataclass(frozen=True)
class Rule:
    """One tolerance rule, worked out for one output: ``kind`` ("ulp", "reduction", "tol",
    "default", "exact"), its numbers, and ``text``, the rule in words.  ``floor`` is the
    absolute bound of "reduction" and "default" (N or D ULPs at max|ref|, times sqrt(K))."""

    kind: str
    text: str
    ulp: float = 0.0
    rtol: float = 0.0
    atol: float = 0.0
    reduction: int | None = None
    floor: float = 0.0

    def excess(self, xp, ulp, err, ref_abs):
        """Per element, its difference over its bound: <= 1 passes, 2 is twice the bound.
        ``ulp``: the ULP distances; ``err``: ``|out - ref|``; ``ref_abs``: ``|ref|`` (float64
        arrays of ``xp``, finite: NaN and infinities are judged apart)."""
        if self.kind == "ulp" or self.kind == "exact":
            return _ratio(xp, ulp, self.ulp)
        if self.kind == "reduction":
            return _ratio(xp, err, self.floor)
        if self.kind == "tol":
            return _ratio(xp, err, self.atol + self.rtol * ref_abs)
        return xp.minimum(_ratio(xp, ulp, self.ulp), _ratio(xp, err, self.floor))

    def floor_only(self, xp, ulp, err):
        """Per element, whether only the floor passes it: more than ``ulp`` ULPs from the
        reference, within the floor (the default's rule); None for the other rules."""
        if self.kind != "default" or self.floor <= 0:
            return None
        return (ulp > self.ulp) & (err <= self.floor)

    def passes(self, xp, ulp, err, ref_abs):
        """Per element, whether it passes (see :meth:`excess`)."""
        return self.excess(xp, ulp, err, ref_abs) <= 1


def _ratio(xp, x, bound):
    """``x / bound``; where the bound is 0, 0 for 0 and inf for anything more."""
    if isinstance(bound, (int, float)):
        if bound > 0:
            return x / bound
        return xp.where(x > 0, np.inf, 0.0)
    positive = bound > 0
    return xp.where(positive, x / xp.where(positive, bound, 1.0), xp.where(x > 0, np.inf, 0.0))


def _real(name: str, value, minimum: float = 0.0) -> float:
    try:
        ok = (isinstance(value, numbers.Real) and not isinstance(value, bool)
              and math.isfinite(float(value)) and value >= minimum)
    except (OverflowError, TypeError, ValueError):      # an int too large for a float
        ok = False
    if not ok:
        raise VerifyError(f"{name}={quote(value, 40)}: give a finite number >= {minimum:g}")
    return float(value)


def check_params(ulp=None, rtol=None, atol=None, reduction=None) -> None:
    """VerifyError unless the rule parameters make one rule: numbers >= 0, ``reduction`` an
    int >= 1, and not ``rtol``/``atol`` together with ``ulp``/``reduction``."""
    for name, value in (("ulp", ulp), ("rtol", rtol), ("atol", atol)):
        if value is not None:
            _real(name, value)
    if reduction is not None and (not isinstance(reduction, numbers.Integral)
                                  or isinstance(reduction, bool) or not 1 <= reduction <= MAX_TERMS):
        raise VerifyError(f"reduction={quote(reduction, 40)}: give the number of terms each "
                          f"output element sums, an int from 1 to 2**64")
    tol = [n for n, v in (("rtol", rtol), ("atol", atol)) if v is not None]
    ulps = [n for n, v in (("ulp", ulp), ("reduction", reduction)) if v is not None]
    if tol and ulps:
        raise VerifyError(f"{ulps[0]}= and {tol[0]}= are two rules: give {ulps[0]}= (ULPs) or "
                          f"rtol=/atol= (absolute and relative error), not both")


def _num(x: float) -> str:
    return f"{x:.4g}"


def make_rule(fmt: Format | None, *, ulp=None, rtol=None, atol=None, reduction=None,
              wider: bool = False, max_ref: float = 0.0, dtype: str = "") -> Rule:
    """The rule for one output of format ``fmt`` (None: integers of ``dtype``, exact), from the
    parameters of ``verify`` (checked with :func:`check_params`).  ``wider``: the reference is
    of a wider format than the output; ``max_ref``: the largest finite ``|ref|``, the scale of
    ``reduction=`` and of the default's floor."""
    check_params(ulp, rtol, atol, reduction)
    if fmt is None:
        return Rule("exact", f"exact ({dtype or 'integers'})")
    if rtol is not None or atol is not None:
        r, a = float(rtol or 0.0), float(atol or 0.0)
        parts = [_num(a)] if a or not r else []
        parts += [f"{_num(r)}*|ref|"] if r else []
        return Rule("tol", f"|out - ref| <= {' + '.join(parts)}", rtol=r, atol=a)
    n = float(ulp) if ulp is not None else default_ulp(fmt, wider)
    unit = float(fmt.spacing(np.float64(max_ref)))
    if reduction is not None:
        floor = n * unit * math.sqrt(reduction)
        return Rule("reduction", f"|out - ref| <= {_num(n)} ULP of max|ref| x sqrt({reduction}) "
                                 f"= {_num(floor)}", ulp=n, reduction=int(reduction), floor=floor)
    if ulp is not None:
        return Rule("ulp", f"<= {_num(n)} ULP per element", ulp=n)
    against = " against a wider reference" if wider else ""
    if wider and fmt.bits <= 8:          # a rounding of each value: judged per element, no floor
        return Rule("default", f"<= {_num(n)} ULP per element, correctly rounded ({fmt.name} "
                               f"default{against})", ulp=n)
    return Rule("default", f"<= {_num(n)} ULP per element, or {_num(n)} ULP of max|ref| "
                           f"({fmt.name} default{against})", ulp=n, floor=n * unit)
