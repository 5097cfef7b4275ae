"""The session's bench history: every Timing kept per kernel name, regressions marked.

``Kernel.bench`` hands each :class:`~cuda_magic.runtime.measure.bench.Timing` to :func:`record`,
which fills in the build's and the launch setup's hashes and keeps it (bounded: HISTORY_RUNS
per kernel, HISTORY_KERNELS kernels); :func:`history` returns a kernel's :class:`History`,
whose :func:`marks` say which runs got slower or faster than the last run of the same launch
setup.  How a History looks is in ``cuda_magic.display.timing``.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import threading
from dataclasses import dataclass
from typing import Sequence

from ...errors import HistoryError, quote

# Timing (the annotations below) is :class:`cuda_magic.runtime.measure.bench.Timing`; bench imports this
# module, so this one names it only in annotations (strings: ``from __future__ import annotations``).

__all__ = ["History", "HistoryError", "Mark", "history", "clear_history", "record", "marks",
           "HISTORY_RUNS", "HISTORY_KERNELS", "REGRESSION"]


HISTORY_RUNS = 100         # runs kept per kernel name (the oldest go first)
HISTORY_KERNELS = 200      # kernel names kept (the least recently benched go first)
REGRESSION = 0.05          # a change must also exceed 5% to be marked: two bench calls of one
                           # unchanged kernel on an H200 drift by up to ~3% (clocks, L2 state)

_HISTORY: "collections.OrderedDict[str, collections.deque]" = collections.OrderedDict()
_HLOCK = threading.Lock()


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _arg_signature(args: Sequence) -> tuple:
    """What about the arguments changes a kernel's time: array shapes and dtypes, scalar values."""
    out = []
    for a in args:
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            out.append(("array", tuple(int(x) for x in a.shape), str(a.dtype).removeprefix("torch.")))
        elif a is None or isinstance(a, (bool, int, float, complex, str)):
            try:
                out.append(repr(a)[:100])
            except ValueError:                  # an int past the int->str digit limit
                out.append(("int", _hash(hex(a))))
        elif isinstance(a, (bytes, bytearray)):
            out.append(("bytes", _hash(bytes(a).hex())))
        else:
            out.append(type(a).__name__)
    return tuple(out)


def record(kernel, timing: Timing, args: Sequence = ()) -> Timing:
    """Keep ``timing`` in the session's history of ``kernel.name``; returns it with its build
    (config, source) and launch-setup hashes filled in."""
    result = getattr(kernel, "result", None)
    config = getattr(result, "config", None)
    config_json = config.json() if hasattr(config, "json") else ""
    launch = repr((tuple(timing.dims), timing.shared_mem, timing.flush, timing.graph,
                   timing.timer, timing.protocol, _arg_signature(args)))
    timing = dataclasses.replace(timing, config_hash=_hash(config_json),
                                 source_hash=_hash(getattr(result, "source", "") or ""),
                                 launch_hash=_hash(launch))
    with _HLOCK:
        runs = _HISTORY.pop(timing.kernel, None) or collections.deque(maxlen=HISTORY_RUNS)
        runs.append(timing)
        _HISTORY[timing.kernel] = runs
        while len(_HISTORY) > HISTORY_KERNELS:
            _HISTORY.popitem(last=False)
    return timing


def clear_history(kernel=None) -> None:
    """Forget the history of ``kernel`` (a Kernel or its name), or of every kernel."""
    name = getattr(kernel, "name", kernel)
    if kernel is not None and not isinstance(name, str):
        raise HistoryError(f"clear_history(kernel): give a Kernel, a kernel's name or None (every "
                           f"kernel), not {quote(kernel)}")
    with _HLOCK:
        if kernel is None:
            _HISTORY.clear()
        else:
            _HISTORY.pop(name, None)


def history(kernel) -> "History":
    """Every ``bench`` of ``kernel`` (a Kernel or its name) in this session, oldest first.

    Kernels are keyed by name, so the same ``k`` edited and re-run in a new cell continues
    its history; each run carries the hashes of the build's config and source.
    """
    name = getattr(kernel, "name", kernel)
    if not isinstance(name, str):
        raise HistoryError(f"history(kernel): give a Kernel or a kernel's name, not {quote(kernel)}")
    with _HLOCK:
        runs = list(_HISTORY.get(name, ()))
        known = list(_HISTORY)
    if not runs:
        hint = (f"; benched so far: {', '.join(known[-10:])}" if known
                else "; time it with k.bench(grid, block, *args) first")
        raise HistoryError(f"no bench of {quote(name)} in this session{hint}")
    return History(name, runs)


@dataclass(frozen=True)
class Mark:
    """How a run compares with the previous run of the same launch setup."""

    kind: str = ""                      # "regression", "improvement", "" (within noise or first)
    change: float | None = None         # median / previous median - 1
    against: int | None = None          # index of the run compared with


def marks(runs: Sequence[Timing]) -> list[Mark]:
    """A run whose 95% CI lies wholly above the previous comparable run's CI and whose median
    is more than 5% slower is a regression; wholly below it and more than 5% faster, an
    improvement; anything else is noise.  Comparable: the same ``launch_hash`` (dimensions,
    shared memory, flush, graph, timer, protocol and the arguments' shapes and scalar values).

    Both conditions are needed: each CI says where one call's median is, but not how far a
    second call of the same kernel drifts (clocks, L2 state), which is up to ~3% on an H200
    even where the two CIs are disjoint."""
    out, last = [], {}
    for i, t in enumerate(runs):
        j = last.get(t.launch_hash)
        last[t.launch_hash] = i
        if j is None:
            out.append(Mark())
            continue
        base = runs[j]
        change = t.median_ms / base.median_ms - 1
        (lo, hi), (t_lo, t_hi) = base.ci_ms, t.ci_ms
        kind = ("regression" if t_lo > hi and change > REGRESSION else
                "improvement" if t_hi < lo and change < -REGRESSION else "")
        out.append(Mark(kind, change, j))
    return out


class History:
    """A kernel's timings in this session, with regressions and improvements marked."""

    def __init__(self, kernel: str, runs: Sequence[Timing]):
        self.kernel = kernel
        self.runs = tuple(runs)
        self.marks = marks(self.runs)

    def __len__(self) -> int:
        return len(self.runs)

    def __getitem__(self, i):
        return self.runs[i]

    def __iter__(self):
        return iter(self.runs)

    @property
    def latest(self) -> Timing:
        return self.runs[-1]

    @property
    def regressions(self) -> list[int]:
        return [i for i, m in enumerate(self.marks) if m.kind == "regression"]

    @property
    def improvements(self) -> list[int]:
        return [i for i, m in enumerate(self.marks) if m.kind == "improvement"]

    def __repr__(self) -> str:
        return (f"<History {self.kernel}: {len(self.runs)} runs, {len(self.regressions)} "
                f"regressions, {len(self.improvements)} improvements; cuda_magic.show(h) for the "
                f"table>")
