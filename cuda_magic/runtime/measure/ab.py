"""A/B: two kernels timed in turns on the same inputs, and a verdict that never names a winner
inside the noise.

``cuda_magic.ab(k1, k2, grid, block, *args)`` (or ``k1.bench(..., against=k2)``) times the two
in ``rounds`` rounds of ``repeat`` launches each, alternating which goes first (A B, B A, A B,
...: a clock or temperature drift over the run falls on both alike), with the same arguments
and the same L2 flush.  Each round gives one ratio, the median time of B over the median time
of A in that round.  The verdict is on those paired ratios: their median, and a
distribution-free 95% confidence interval for it (:func:`~.stats.median_ci`, the sign test's
interval, on the log ratios).  B is called faster or slower only when that whole interval lies
beyond ``tolerance`` (0.5%) on one side of "no change"; otherwise the words are "no difference
at this noise" with the interval.  The band is what keeps two equal kernels from ever being
called different: an interval that merely misses 1.0 happens in 5% of A/Bs of equal kernels,
one that also clears 0.5% (about a third of its width on a GPU's round-to-round noise of ~1%)
almost never.  Pairing by round
is what makes this sharper than comparing two separate benches: what moves both kernels
(clocks, other work on the GPU) cancels in the ratio.

:func:`decide` is the statistics alone (planted samples in the tests); :func:`ab` runs the
rounds through :func:`.bench.measure`.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import Sequence

from ...arrays import library
from ...errors import BenchError
from .. import driver
from .stats import CI_LEVEL, median_ci, quartiles

__all__ = ["AB", "Decision", "decide", "decide_apart", "ab", "margin_words", "ROUNDS", "REPEAT", "TOLERANCE"]

ROUNDS = 20          # rounds of A and B; 20 paired ratios give a 95% interval (ranks 6 and 15)
REPEAT = 20          # timed launches of each kernel per round
_NORMAL = statistics.NormalDist()
TOLERANCE = 0.005    # the interval must clear 1 +- 0.5% for a difference to be called


@dataclass(frozen=True)
class Decision:
    """The paired ratios' verdict: ``ratio`` (median of B/A per round), ``low``/``high`` (its
    95% interval), ``coverage`` (the interval's true coverage), ``called`` ("faster",
    "slower" or "" when there is no difference at this noise)."""

    ratio: float
    low: float
    high: float
    coverage: float
    called: str


def decide(ratios: Sequence[float], level: float = CI_LEVEL,
           tolerance: float = TOLERANCE) -> Decision:
    """The verdict on per-round ratios B/A (each > 0): see the module's docstring."""
    if not ratios:
        raise BenchError("an A/B needs at least one round")
    if any(not (r > 0 and math.isfinite(r)) for r in ratios):
        raise BenchError(f"an A/B round gave a ratio that is not a positive number: {ratios}")
    logs = sorted(math.log(r) for r in ratios)
    mid = quartiles(logs)[1]
    lo, hi, cover = median_ci(logs, level)
    ratio, low, high = math.exp(mid), math.exp(lo), math.exp(hi)
    called = ""
    if cover >= level:
        if high < 1 - tolerance:
            called = "faster"
        elif low > 1 + tolerance:
            called = "slower"
    return Decision(ratio, low, high, cover, called)


def decide_apart(a_ms: Sequence[float], b_ms: Sequence[float], level: float = CI_LEVEL,
                 tolerance: float = TOLERANCE) -> Decision:
    """The verdict on two kernels benched apart (a sweep's candidates, each in its own
    helper): the ratio B/A is the Hodges-Lehmann estimate, the median of every log(b/a) over
    all pairs of samples, with the distribution-free interval of the Mann-Whitney test
    (normal approximation of its rank).  Weaker than :func:`decide`: what drifted between the
    two benches does not cancel; the same ``tolerance`` band applies."""
    if not a_ms or not b_ms:
        raise BenchError("a verdict needs samples of both kernels")
    if any(not (x > 0 and math.isfinite(x)) for x in (*a_ms, *b_ms)):
        raise BenchError("a verdict needs times > 0")
    la, lb = [math.log(x) for x in a_ms], [math.log(x) for x in b_ms]
    diffs = sorted(y - x for x in la for y in lb)
    n, m = len(la), len(lb)
    mid = quartiles(diffs)[1]
    z = _NORMAL.inv_cdf(1 - (1 - level) / 2)
    k = math.floor(n * m / 2 - z * math.sqrt(n * m * (n + m + 1) / 12))
    if k < 1:           # too few samples for the level: the widest interval, said as such
        return Decision(math.exp(mid), math.exp(diffs[0]), math.exp(diffs[-1]), 0.0, "")
    lo, hi = diffs[k - 1], diffs[n * m - k]
    ratio, low, high = math.exp(mid), math.exp(lo), math.exp(hi)
    called = "faster" if high < 1 - tolerance else "slower" if low > 1 + tolerance else ""
    return Decision(ratio, low, high, level, called)


def _pct(x: float) -> str:
    return f"{x * 100:.1f}"


@dataclass(frozen=True, repr=False)
class AB:
    """Two kernels timed in turns (:func:`ab`): ``a`` and ``b`` (their :class:`~.bench.Timing`,
    every round's samples), ``ratios`` (B/A per round), ``decision`` (:class:`Decision`);
    ``words`` says it: "b is 7.9% faster than a (95% CI 6.1 to 9.6%)" or "no difference at this
    noise: b/a 0.998 (95% CI -0.8 to +1.1%)"."""

    a: object
    b: object
    ratios: tuple
    decision: Decision
    rounds: int
    repeat: int
    names: tuple = ("a", "b")

    @property
    def ratio(self) -> float:
        """Median of B's time over A's, per round (< 1: B is faster)."""
        return self.decision.ratio

    @property
    def ci(self) -> tuple[float, float]:
        """95% confidence interval of :attr:`ratio`."""
        return self.decision.low, self.decision.high

    @property
    def faster(self) -> str | None:
        """The name of the faster kernel, or None when there is no difference at this noise."""
        called = self.decision.called
        return None if not called else self.names[1] if called == "faster" else self.names[0]

    @property
    def words(self) -> str:
        a, b = self.names
        d = self.decision
        if d.called == "faster":    # B's time is (1 - ratio) less
            return (f"{b} is {_pct(1 - d.ratio)}% faster than {a} (95% CI {_pct(1 - d.high)} "
                    f"to {_pct(1 - d.low)}%)")
        if d.called == "slower":
            return (f"{b} is {_pct(d.ratio - 1)}% slower than {a} (95% CI {_pct(d.low - 1)} "
                    f"to {_pct(d.high - 1)}%)")
        return (f"no difference between {a} and {b} at this noise: {b}/{a} {d.ratio:.3f} "
                f"(95% CI {(d.low - 1) * 100:+.1f} to {(d.high - 1) * 100:+.1f}%)")

    def to_dict(self) -> dict:
        d = self.decision
        return {"names": list(self.names), "ratio": d.ratio, "ci": [d.low, d.high],
                "coverage": d.coverage, "called": d.called, "ratios": list(self.ratios),
                "rounds": self.rounds, "repeat": self.repeat, "words": self.words,
                "a": self.a.to_dict(), "b": self.b.to_dict()}

    def __repr__(self) -> str:
        return f"<AB: {self.words}>"


def _names(a, b) -> tuple[str, str]:
    """The kernels' names, "(A)" and "(B)" after them when they are the same name (two builds
    of one kernel)."""
    if a.name != b.name:
        return a.name, b.name
    return f"{a.name} (A)", f"{b.name} (B)"


def ab(a, b, grid, block, *args, rounds: int = ROUNDS, repeat: int = REPEAT,
       tolerance: float = TOLERANCE, **bench) -> AB:
    """Time kernels ``a`` and ``b`` in turns on the same arguments; returns an :class:`AB`
    whose ``words`` say which is faster, by how much, with a 95% interval, or that there is
    no difference at this noise.  ``rounds`` rounds of ``repeat`` timed launches of each,
    alternating which goes first; the first round warms both up (``warmup`` as ``k.bench``).
    Other keywords as ``k.bench`` (``flush``, ``graph``, ``shared_mem``, ``stream``,
    ``timer``, ``nbytes``, ``flops``...). The two kernels take the same arguments; arrays are
    copied to the GPU once, for both.  See docs/measure.md."""
    from ..launch.attributes import prepared
    from ..launch.configuration import stream_handle
    from .bench import measure, options
    for what, k in (("a", a), ("b", b)):
        if not hasattr(k, "handle_and_packer"):
            raise BenchError(f"ab: {what} is {type(k).__name__}, not a kernel of a %%cuda cell")
    if type(rounds) is not int or rounds < 1:
        raise BenchError(f"rounds={rounds!r}: the number of A/B rounds, an int >= 1")
    if not (isinstance(tolerance, (int, float)) and 0 <= tolerance < 1):
        raise BenchError(f"tolerance={tolerance!r}: the smallest change called a difference, "
                         f"a fraction in [0, 1)")
    for key in ("check", "against", "on", "protocol", "fresh_inputs"):
        if bench.pop(key, None) not in (None, False):
            raise BenchError(f"ab: {key}= is not taken here; bench each kernel for it")
    if driver.elsewhere():
        raise BenchError("ab times on this process's GPU; under isolate() or remote() bench "
                         "each kernel instead")
    shared_mem, stream = bench.pop("shared_mem", 0), bench.pop("stream", None)
    try:
        opts = options(repeat=repeat, **bench)
    except TypeError as exc:
        raise BenchError(f"ab: {exc}".replace("options()", "ab()")) from None
    dims, shared, _ = prepared(a, grid, block, shared_mem, None)
    prepared(b, grid, block, shared_mem, None)
    handle = stream_handle(stream)
    staged, uploaded = _uploaded(args)
    try:
        def run(k, warm):
            return measure(k, dims, staged, shared, handle,
                           **{**opts, "warmup": opts["warmup"] if warm else 0})
        samples_a, samples_b, ratios = [], [], []
        for r in range(rounds):
            first, second = (a, b) if r % 2 == 0 else (b, a)
            t1, t2 = run(first, r == 0), run(second, r == 0)
            ta, tb = (t1, t2) if r % 2 == 0 else (t2, t1)
            samples_a.append(ta)
            samples_b.append(tb)
            ratios.append(tb.median_ms / ta.median_ms)
    finally:
        for d in uploaded:
            d.free()
    names = _names(a, b)
    return AB(_joined(samples_a), _joined(samples_b), tuple(ratios),
              decide(ratios, tolerance=tolerance), rounds, repeat, names)


def _joined(timings: list):
    """One Timing of every round's samples (the first round's setup and notes)."""
    first = timings[0]
    return replace(first, samples_ms=tuple(x for t in timings for x in t.samples_ms),
                   warmup=sum(t.warmup for t in timings))


def _uploaded(args) -> tuple[list, list]:
    """The arguments with each NumPy array copied to the GPU once (both kernels use those
    copies, every round); and the copies, to free."""
    out, uploaded = [], []
    for x in args:
        if library(x) == "numpy" and x.ndim:
            from ..device_array import DeviceArray
            x = DeviceArray.upload(x)
            uploaded.append(x)
        out.append(x)
    return out, uploaded


def margin_words(decision: Decision, a: str, b: str) -> str:
    """How far ``a`` (the faster by its median) is ahead of ``b``: "4.1% faster than b (95% CI
    3.2 to 5.0%)", or "within noise of b (95% CI -0.8 to +1.1%)"; ``decision`` is B/A."""
    d = decision
    if d.called == "slower":        # B slower: A is faster by 1 - A/B
        return (f"{_pct(1 - 1 / d.ratio)}% faster than {b} (95% CI {_pct(1 - 1 / d.low)} to "
                f"{_pct(1 - 1 / d.high)}%)")
    return (f"within noise of {b} ({b}/{a} {d.ratio:.3f}, 95% CI {(d.low - 1) * 100:+.1f} to "
            f"{(d.high - 1) * 100:+.1f}%)")
