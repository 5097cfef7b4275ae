"""What ``verify`` found: a :class:`Verdict` of one :class:`OutputCheck` per output.

Plain data (frozen dataclasses); ``bool(verdict)`` is pass/fail, ``str(verdict)`` one line per
output, ``verdict["y"]`` one output's check, ``verdict.map()`` its mismatch counts per tile.
The notebook view is :mod:`cuda_magic.display.verdict`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import VerifyError

__all__ = ["OutputCheck", "Verdict", "CATEGORIES", "TRAPS"]

# OutputCheck.category: "pass", or the first of these that applies ("nondeterministic" is
# set by k.verify, for a failing output that differed between runs)
CATEGORIES = ("missing", "shape", "zeros", "unchanged", "constant", "copy", "tail", "tile-edge",
              "special", "precision", "wrong", "nondeterministic")
# the trivial outputs: they fail even when the tolerance passes them
TRAPS = ("zeros", "unchanged", "constant", "copy")


@dataclass(frozen=True)
class OutputCheck:
    """One output against its reference.

    ``passed``; ``category`` ("pass", or why not: see ``CATEGORIES``) and ``reason`` (one
    sentence, None when passed); ``rule``, the rule in words.  ``mismatches``: the elements
    outside the rule.  ``max_ulp`` / ``p99_ulp``: the largest and the 99th-percentile ULP
    distance (``p99_exact`` False when it is a histogram bucket's upper bound); ``max_abs`` /
    ``max_rel``: the largest ``|out - ref|`` and ``|out - ref| / |ref|`` over the finite
    elements (``max_rel`` leaves out ``ref == 0``).  ``worst``: the index of the element
    furthest outside the rule (the nearest to failing when all pass; None when all are
    equal), ``worst_out`` / ``worst_ref`` its values.  ``nan_misplaced`` / ``inf_misplaced``:
    elements where one side is NaN / an infinity and the other is not the same;
    ``zero_sign_misplaced``: zeros of the other sign (they pass).  ``tile``: the tile shape
    of ``tile_map``, the mismatch count per tile.  ``trivial``: None, or what the output
    trivially is ("zeros", "unchanged", "constant", "copy of x") while the reference is not.
    ``floor_passed``: the elements only the default rule's floor passed (more than D ULPs off,
    within D ULPs of max|ref|); ``floor_far``: the elements within only the floor while off by
    a factor of 2 or more -- when more than 1% of the elements are, they fail."""

    name: str
    dtype: str
    shape: tuple
    size: int
    passed: bool
    category: str
    reason: str | None
    rule: str
    mismatches: int = 0
    max_ulp: float = 0.0
    p99_ulp: float = 0.0
    p99_exact: bool = True
    max_abs: float = 0.0
    max_rel: float = 0.0
    worst: tuple | None = None
    worst_out: float | None = None
    worst_ref: float | None = None
    nan_misplaced: int = 0
    inf_misplaced: int = 0
    zero_sign_misplaced: int = 0
    tile: tuple | None = None
    tile_map: np.ndarray | None = field(default=None, compare=False, repr=False)
    trivial: str | None = None
    floor_passed: int = 0
    floor_far: int = 0

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        ulps = f"max {_num(self.max_ulp)} ULP (p99 {'' if self.p99_exact else '<= '}{_num(self.p99_ulp)})"
        note = f"; {self.floor_note()}" if self.floor_passed else ""
        if self.passed:
            return f"{self.name}: PASS, {ulps}, {self.rule}{note}"
        if self.category in ("missing", "shape"):
            return f"{self.name}: FAIL {self.category}: {self.reason}"
        return f"{self.name}: FAIL {self.category}: {self.reason}; {ulps}, {self.rule}{note}"

    def floor_note(self) -> str:
        """``"3 of 1000 elements pass only through the floor (1 off by 2x or more)"``, or ""
        when the floor passed none."""
        if not self.floor_passed:
            return ""
        far = (f" ({self.floor_far} off by 2x or more)"
               if self.passed and self.floor_far else "")
        return f"{self.floor_passed} of {self.size} elements pass only through the floor{far}"


def _num(x: float) -> str:
    """3 significant digits; whole numbers as they are (2, not 2.00)."""
    x = float(x)
    if math.isfinite(x) and x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.3g}"


@dataclass(frozen=True)
class Verdict:
    """The outputs' checks (``outputs``, in the reference's order) and how they were made:
    ``runs`` (1 from ``verify``; ``k.verify`` runs the kernel more than once),
    ``deterministic`` (whether the runs agreed bit for bit; None for one run), ``spread``
    ({output: max ULP between runs} or None), ``peak_bytes`` (an estimate of the extra memory
    the check took) and ``where`` it took it ("host" or "device")."""

    outputs: tuple
    runs: int = 1
    deterministic: bool | None = None
    spread: dict | None = field(default=None, compare=False)
    peak_bytes: int = 0
    where: str = "host"
    ran_on: str = ""          # the remote GPU whose launches it judged (cuda_magic.remote); "": here

    @property
    def passed(self) -> bool:
        """Whether every output passed."""
        return all(o.passed for o in self.outputs)

    def __bool__(self) -> bool:
        return self.passed

    @property
    def max_ulp(self) -> float:
        """The largest ULP distance over the outputs."""
        return max((o.max_ulp for o in self.outputs), default=0.0)

    @property
    def names(self) -> list[str]:
        """The outputs' names."""
        return [o.name for o in self.outputs]

    def _first_failure(self) -> OutputCheck | None:
        return next((o for o in self.outputs if not o.passed), None)

    @property
    def category(self) -> str:
        """The category of the first failing output, "pass" when none fails."""
        o = self._first_failure()
        return o.category if o is not None else "pass"

    @property
    def reason(self) -> str | None:
        """Why the first failing output fails (None when none does)."""
        o = self._first_failure()
        return f"{o.name}: {o.reason}" if o is not None else None

    def __getitem__(self, name: str) -> OutputCheck:
        for o in self.outputs:
            if o.name == name:
                return o
        raise KeyError(f"no output named {name!r}; the outputs are {', '.join(self.names)}")

    def map(self, name: str | None = None) -> np.ndarray | None:
        """The mismatch counts per tile of output ``name`` (default: the only output), an array
        shaped like the tile grid; None for an output that is missing or of the wrong shape."""
        if name is None:
            if len(self.outputs) != 1:
                raise VerifyError(f"map(name=...): name one of the outputs {', '.join(self.names)}")
            return self.outputs[0].tile_map
        return self[name].tile_map

    def __str__(self) -> str:
        lines = [str(o) for o in self.outputs]
        if self.runs > 1:
            agree = "bit for bit" if self.deterministic else "NOT bit for bit"
            lines.append(f"{self.runs} runs, {agree}")
        return "\n".join(lines)

    def with_runs(self, runs: int, deterministic: bool | None, spread: dict | None) -> "Verdict":
        """A copy that records ``runs`` runs of the kernel, whether they agreed bit for bit and
        the largest ULP distance between runs per output.  A failing output that differed
        between runs (spread > 0) gets the category "nondeterministic"."""
        outputs = tuple(_nondeterministic(o, spread[o.name])
                        if not o.passed and spread and spread.get(o.name, 0) > 0
                        and o.category != "nondeterministic" else o
                        for o in self.outputs)
        return dataclasses.replace(self, outputs=outputs, runs=runs, deterministic=deterministic,
                                   spread=dict(spread) if spread is not None else None)


def _nondeterministic(o: OutputCheck, spread: float) -> OutputCheck:
    reason = f"differs between runs (by up to {_num(spread)} ULP); {o.reason}"
    return dataclasses.replace(o, category="nondeterministic", reason=reason)
