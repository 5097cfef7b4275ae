"""Statistics of a bench's samples: quartiles and a distribution-free CI of the median.

Pure Python, on the stdlib's :mod:`statistics` where it gives the same numbers (``fmean``;
``NormalDist`` for the normal approximation of the interval above 2,000 samples); the
quartiles' interpolation (see :func:`quartiles`) and the exact binomial interval are ours.
No CUDA, no NumPy.
"""

from __future__ import annotations

import math
import statistics
from fractions import Fraction
from typing import Sequence

from ...errors import BenchError

__all__ = ["median_ci", "quartiles", "mean", "CI_LEVEL"]

CI_LEVEL = 0.95
_EXACT_CI_UP_TO = 2000     # samples: exact binomial sums up to here, the normal approximation above
_NORMAL = statistics.NormalDist()


def quartiles(xs: Sequence[float]) -> tuple[float, float, float]:
    """(q1, median, q3) of sorted ``xs``, interpolated linearly between order statistics
    (NumPy's default, the points of ``statistics.quantiles(xs, n=4, method="inclusive")``).

    Written out rather than calling ``statistics.quantiles``: it rounds ``(a*(4-d) + b*d)/4``
    where this rounds ``a + (d/4)*(b - a)``: on random timings nearly every sample set gets a
    quartile one unit in the last place away from what bench has always reported; and it
    wants two points before Python 3.13.
    """
    def q(p: float) -> float:
        h = (len(xs) - 1) * p
        lo = math.floor(h)
        hi = min(lo + 1, len(xs) - 1)
        return xs[lo] + (h - lo) * (xs[hi] - xs[lo])
    return q(0.25), q(0.5), q(0.75)


def mean(xs: Sequence[float]) -> float:
    """The mean, summed exactly (``math.fsum``) before the one division."""
    return statistics.fmean(xs)


def median_ci(xs: Sequence[float], level: float = CI_LEVEL) -> tuple[float, float, float]:
    """A distribution-free confidence interval for the median of sorted ``xs``:
    ``(low, high, coverage)``.

    The number of samples below the true median is Binomial(n, 1/2) whatever the
    distribution of the times, so ``[x(k), x(n+1-k)]`` (1-based order statistics) covers it
    with probability ``1 - 2 P(B <= k-1)``.  ``k`` is the largest rank that keeps the
    coverage at least ``level``; ``coverage`` is what that interval really has (e.g. 97.3% for
    21 samples: ranks 6 and 16).  Exact sums up to 2,000 samples, the normal approximation
    above.  Fewer than 6 samples cannot reach 95%: the interval is then ``[min, max]`` and its
    coverage says how much less it is.
    """
    n = len(xs)
    if n == 0:
        raise BenchError("no samples")
    tail = Fraction(1 - level).limit_denominator(10 ** 6) / 2          # alpha / 2
    if n <= _EXACT_CI_UP_TO:
        total, below, k, c = 2 ** n, 0, 0, 1          # c = comb(n, j)
        for j in range(n // 2 + 1):                   # P(B <= j) = (below + c) / 2^n
            if below + c > tail * total:
                break
            below, k = below + c, j + 1
            c = c * (n - j) // (j + 1)
        if k == 0:                                    # n < 6 at 95%: the widest interval
            return xs[0], xs[-1], 1 - 2 / 2 ** n
        return xs[k - 1], xs[n - k], 1 - 2 * below / total
    z = _NORMAL.inv_cdf(float(1 - tail))
    k = max(1, math.floor((n - z * math.sqrt(n)) / 2))
    cover = 1 - 2 * _NORMAL.cdf((k - 0.5 - n / 2) / (math.sqrt(n) / 2))
    return xs[k - 1], xs[n - k], cover
