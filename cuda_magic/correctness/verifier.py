"""``verify(out, ref)``: is a kernel's output right?

One concept: one pass over each output (chunk by chunk) that measures it against its reference
and its rule, and the verdict with its category, trap and tile map; the tally's parts share
that pass's state.  The sweeps' and comparisons' judges built on it are in :mod:`.reference`.

NumPy only; CuPy when the arrays are on the device (CuPy arrays, torch CUDA tensors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..errors import DtypeError, VerifyError, quote
from .formats import Format, _cupy, _int_distance, _origin, format_of, wide_distance
from .operands import Operand, array_arg, dtype_text
from .tolerances import check_params, floor_allowance, make_rule, off_by_2x
from .verdict import OutputCheck, Verdict

__all__ = ["verify", "check_tile", "CHUNK", "MAX_TILE"]

CHUNK = 1 << 24          # elements compared at a time
_BYTES_PER_ELEMENT = 192     # the temporaries of one chunk, per element (measured: 84..177)
_EXACT = 256             # the p99 histogram counts ULP distances 0..256 one by one
_TOP = 2100              # ... and powers of two up to 2**_TOP above (float64's whole range)
_BINS = _EXACT + _TOP - 8 + 2       # + one bin for an infinite distance
_SENTINEL = 1 << 62      # the trap's key of a NaN (beyond every code)
_PRECISION = 16          # "precision": every mismatch within this many times its bound
_TILE_1D, _TILE_2D = (256,), (16, 16)
MAX_TILE = 1 << 62       # the largest tile extent (beyond any array's)


def verify(out, ref, dtype=None, *, ulp=None, rtol=None, atol=None, reduction=None, name=None,
           tile=None, initial=None, inputs=None, chunk=None) -> Verdict:
    """Check a kernel's output(s) against a reference: per output, ULP distances (max, p99),
    the largest absolute and relative error, the worst element, NaN/Inf/±0 placed
    differently, pass/fail and why.  ``bool(verdict)``: all passed.

    ``out``, ``ref``: one array each, or dicts ``{name: array}`` (the reference's names are
    checked; one missing from ``out`` fails as "missing").  Arrays: NumPy (float or the bit
    patterns of a format), ml_dtypes, CuPy, torch (CPU or CUDA).  ``dtype``: the output's
    format when its array holds bit patterns ("bfloat16", "e4m3", "e2m1x2" for fp4 packed two
    per byte...; a dict by output name for several).  A reference in another (wider) format
    than the output -- float32 values for an fp8 output -- is measured in the output's ULPs,
    fractionally.  Integer outputs are compared exactly.

    The rule: ``ulp=N`` per element; ``reduction=K`` (N ULPs of max|ref| x sqrt(K));
    ``rtol=``/``atol=``; nothing: the format's default.  See :mod:`.tolerances` for the table.

    Trivial outputs fail even when the tolerance passes them: all zeros, unchanged from
    ``initial`` (the contents before the launch), one value everywhere, or a copy of one of
    ``inputs`` ({name: array}) -- while the reference is not.  The categories of a failure,
    the first that applies: "missing", "shape", "zeros", "unchanged", "constant", "copy",
    "tail" (every mismatch in the last tile along an axis of the tile grid), "tile-edge"
    (every mismatch on the first or last row/column of its tile, in more than one tile),
    "special" (every mismatch a NaN/Inf placed differently, or a zero where the other side
    is subnormal: a flush), "precision" (every mismatch within 16x its bound, and in more
    than one tile unless there is one), "wrong".

    ``tile``: the tile shape, in the C order of the output's axes (a 2-D output written by
    blocks of (bx, by) threads: ``tile=(by, bx)``); a 1-D tile applies to the flattened
    output.  Default: (256,) for 1-D outputs, 16 x 16 over the last two axes otherwise.
    ``verdict.map()`` gives the mismatch count per tile.  A flat (1-D) array of the
    reference's size is taken in the reference's shape (and a flat reference in the output's).

    Outputs are compared ``chunk`` elements at a time (default ``CHUNK``, 2**24), on the
    device for device arrays: the extra memory is at most about 200 bytes x the chunk, stated as
    ``verdict.peak_bytes`` and ``verdict.where``.  The p99 ULP is exact when the output fits
    in one chunk; else it comes from a histogram (exact counts for ULP 0..256, power-of-two
    buckets above) and is the upper bound of its bucket (``p99_exact`` False).
    """
    check_params(ulp, rtol, atol, reduction)
    chunk = _chunk_size(chunk)
    outs, refs = _named(out, ref, name)
    inputs = _inputs(inputs)
    rule = dict(ulp=ulp, rtol=rtol, atol=atol, reduction=reduction)
    checks, peak, where = [], 0, "host"
    for n, r in refs.items():
        if n not in outs:
            checks.append(_missing(n, r))
            continue
        before = _per(initial, n)
        if before is not None:
            before = array_arg(before, "initial")
        c, nbytes, device = _check_output(n, outs[n], r, _per(dtype, n), rule, _per(tile, n),
                                          before, inputs, chunk)
        checks.append(c)
        peak = max(peak, nbytes)
        where = "device" if device else where
    return Verdict(tuple(checks), peak_bytes=peak, where=where)


# ---------------------------------------------------------------------- parameters

def _chunk_size(chunk) -> int:
    if chunk is None:
        return CHUNK
    if not isinstance(chunk, (int, np.integer)) or isinstance(chunk, bool) or chunk < 1:
        raise VerifyError(f"chunk={quote(chunk, 40)}: give the elements to compare at a time, "
                          f"an int >= 1")
    return int(chunk)


def _named(out, ref, name) -> tuple[dict, dict]:
    """``out`` and ``ref`` as dicts by output name, their arrays checked (:func:`array_arg`)."""
    if isinstance(ref, Mapping):
        if not isinstance(out, Mapping):
            raise VerifyError(f"ref is a dict of outputs {quote(list(ref), 80)}: give out as a "
                              f"dict by the same names")
        return ({_name(k, "out: a key "): array_arg(v, f"out[{quote(k, 40)}]")
                 for k, v in out.items()},
                {_name(k, "ref: a key "): array_arg(v, f"ref[{quote(k, 40)}]")
                 for k, v in ref.items()})
    if isinstance(out, Mapping):
        raise VerifyError("out is a dict of outputs: give ref as a dict by the same names")
    n = "out" if name is None else _name(name, "name=")
    return {n: array_arg(out, "out")}, {n: array_arg(ref, "ref")}


def _name(name, what: str) -> str:
    """An output's name: a string."""
    if not isinstance(name, str):
        raise VerifyError(f"{what}{quote(name, 40)}: an output's name is a string")
    return name


def _inputs(inputs) -> dict:
    """``inputs=`` checked: {name: array} (None: none)."""
    if inputs is None:
        return {}
    if not isinstance(inputs, Mapping):
        raise VerifyError(f"inputs={quote(inputs, 60)}: give the kernel's inputs as a dict "
                          f"{{name: array}}")
    return {_name(k, "inputs: a key "): array_arg(v, f"inputs[{quote(k, 40)}]")
            for k, v in inputs.items()}


def check_tile(tile) -> tuple | None:
    """``tile=`` as a tuple of ints (None stays None); a VerifyError naming it unless it is an
    int or a sequence of ints from 1 to 2**62."""
    if tile is None:
        return None
    t = (tile,) if isinstance(tile, (int, np.integer)) else tile
    try:
        t = tuple(t)
    except TypeError:
        raise VerifyError(f"tile={quote(tile, 40)}: give the tile shape, a tuple of ints") from None
    if not t or any(not isinstance(v, (int, np.integer)) or isinstance(v, bool)
                    or not 1 <= v <= MAX_TILE for v in t):
        raise VerifyError(f"tile={quote(tile, 40)}: give the tile shape, a tuple of ints from 1 "
                          f"to 2**62")
    return tuple(int(v) for v in t)


def _per(value, name):
    """A parameter given per output name (a dict), or one for all."""
    return value.get(name) if isinstance(value, Mapping) else value


def _tile_shape(tile, shape: tuple) -> tuple:
    """The tile (validated), and the shape it tiles (``shape``, or flattened for a 1-D tile)."""
    nd = len(shape)
    if tile is None:
        return _TILE_1D if nd <= 1 else (1,) * (nd - 2) + _TILE_2D
    t = check_tile(tile)
    if len(t) not in (1, max(nd, 1)):
        raise VerifyError(f"tile={quote(tile, 40)}: the output has {nd} axes {shape}; give a "
                          f"tile of {nd} ints (or 1, for the flattened output)")
    return t


def _missing(name: str, ref) -> OutputCheck:
    shape = tuple(int(v) for v in getattr(ref, "shape", np.shape(ref)))
    try:
        f = format_of(ref)
    except DtypeError:
        f = None
    return OutputCheck(name, dtype_text(ref, f), shape, math.prod(shape), False, "missing",
                       f"no output named {quote(name, 60)} (the reference has one)", "")


# ---------------------------------------------------------------------- one output

def _check_output(name, out, ref, dtype, params, tile, initial, inputs, chunk):
    """(OutputCheck, peak extra bytes, on the device?) of one output."""
    fmt = format_of(out, dtype)
    o = Operand(out, fmt, dtype, out=True)
    r = Operand(ref, fmt, dtype)
    if fmt is None and r.own is not None:
        raise VerifyError(f"{name}: the output holds integers ({dtype_text(out, None)}), the "
                          f"reference {r.own.name} values; integers are compared exactly with "
                          f"integers (if the output holds bit patterns, name their format with "
                          f"dtype=)")
    xp = _cupy() if (o.device or r.device) else np
    wider = r.mode == "values" and (r.own is None or r.own.mbits > fmt.mbits)
    max_ref = _max_abs(xp, r, chunk)
    rule = make_rule(fmt, wider=wider, max_ref=max_ref, dtype=dtype_text(out, fmt), **params)
    shape = _common_shape(o.shape, r.shape)
    base = dict(name=name, dtype=dtype_text(out, fmt), rule=rule.text)
    if shape is None:
        return OutputCheck(shape=o.shape, size=o.size, passed=False, category="shape",
                           reason=f"{name} has shape {o.shape}, the reference {r.shape}",
                           **base), 0, xp is not np
    t = _tile_shape(tile, shape)
    tiled = shape if len(t) == len(shape) else (math.prod(shape),)
    if not shape:
        tiled, t = (1,), _TILE_1D
    tally = _Tally(xp, fmt, rule, tiled, t, max_ref)
    others = _others(name, o, fmt, dtype, initial, inputs)
    step = max(1, min(chunk, o.size))
    for s in range(0, o.size, step):
        e = min(s + step, o.size)
        tally.add(s, o.read(xp, s, e), (r.mode, r.read(xp, s, e)),
                  {k: (v.mode, v) for k, v in others.items()}, e)
    nbytes = step * (_BYTES_PER_ELEMENT + 8 * len(others)) + tally.nbytes + o.packed + r.packed
    check = tally.result(shape=shape, size=o.size, **base)
    return check, int(nbytes), xp is not np


def _common_shape(a: tuple, b: tuple):
    """The shape to check in: equal shapes, or a flat array of the other's size; None if not."""
    if a == b:
        return a
    if math.prod(a) == math.prod(b) and (len(a) == 1 or len(b) == 1):
        return b if len(a) == 1 else a
    return None


def _others(name, o: Operand, fmt, dtype, initial, inputs) -> dict:
    """The trap's arrays: "initial" (the output before the launch) and the inputs of the
    output's size (the rest cannot be copies of it)."""
    others = {}
    if initial is not None:
        i = Operand(initial, fmt, dtype)
        if i.size != o.size:
            raise VerifyError(f"initial: {name} before the launch has {i.size} elements "
                              f"{i.shape}, the output {o.size} {o.shape}")
        if fmt is None and i.own is not None:
            raise VerifyError(f"initial: {name} holds integers; its contents before the launch "
                              f"are {i.own.name} values")
        others["initial"] = i
    for k, x in inputs.items():
        try:
            v = Operand(x, fmt, dtype)
        except DtypeError:
            continue
        if v.size == o.size and not (fmt is None and v.own is not None):
            others[f"input {k}"] = v
    return others


def _max_abs(xp, r: Operand, chunk: int) -> float:
    """The largest finite |value| of the reference (0 when there is none)."""
    if r.mode == "ints":
        return 0.0
    top = 0.0
    for s in range(0, r.size, chunk):
        part = r.read(xp, s, min(s + chunk, r.size))
        v = xp.abs(r.own.decode(part) if r.mode == "codes" else part)
        v = v[xp.isfinite(v)]
        if v.size:
            top = max(top, float(v.max()))
    return top


# ---------------------------------------------------------------------- comparing a chunk

@dataclass
class _Compared:
    """One chunk's elements compared: ULP distance, |out - ref|, the rule's excess (> 1 fails),
    the decoded values, and the special cases."""

    dist: Any
    err: Any
    ref_abs: Any
    excess: Any
    out: Any
    ref: Any
    nan_bad: Any
    inf_bad: Any
    zero_sign: Any
    flush: Any
    floor_only: Any = None      # passed only through the default's floor (None: no floor)
    far: Any = None             # ... while off by a factor of 2 or more


def _compare(xp, fmt: Format | None, rule, o, r, mode: str) -> _Compared:
    if fmt is None:
        d = _int_distance(xp, o, r).astype(np.float64)
        no = xp.zeros(d.shape, bool)
        rf = r.astype(np.float64)
        return _Compared(d, d, xp.abs(rf), rule.excess(xp, d, d, None), o.astype(np.float64), rf,
                         no, no, no, no)
    ov = fmt.decode(o)
    if mode == "codes":
        rv = fmt.decode(r)
        dist = _int_distance(xp, fmt.ordered(o), fmt.ordered(r)).astype(np.float64)
    else:
        rv = r
        dist = wide_distance(fmt, ov, rv)
    on, rn, oi, ri = xp.isnan(ov), xp.isnan(rv), xp.isinf(ov), xp.isinf(rv)
    nan_bad = on != rn
    inf_bad = ~(on | rn) & (oi | ri) & (ov != rv)
    finite = ~(on | rn | oi | ri)
    with np.errstate(invalid="ignore", over="ignore"):
        err = xp.where(finite, xp.abs(ov - rv), 0.0)
    ref_abs = xp.where(finite, xp.abs(rv), 0.0)
    odd = nan_bad | inf_bad
    excess = rule.excess(xp, xp.where(finite, dist, 0.0), err, ref_abs)
    excess = xp.where(finite, excess, xp.where(odd, np.inf, 0.0))
    dist = xp.where(odd, np.inf, xp.where(finite, dist, 0.0))
    oz, rz = ov == 0, rv == 0
    zero_sign = oz & rz & (xp.signbit(ov) != xp.signbit(rv))
    flush = (oz != rz) & (xp.abs(xp.where(oz, rv, ov)) < fmt.tiny)
    floor_only = rule.floor_only(xp, dist, err)
    far = None
    if floor_only is not None:
        floor_only = floor_only & finite
        far = floor_only & off_by_2x(xp, fmt, ov, rv)
    return _Compared(dist, err, ref_abs, excess, ov, rv, nan_bad, inf_bad, zero_sign, flush,
                     floor_only, far)


def _keys(xp, fmt: Format | None, a, mode: str):
    """A chunk as int64 keys in the output's format, equal where the values are: +0 and -0
    alike, every NaN alike, values of another format rounded to the output's."""
    if mode == "ints":
        return a.view(np.int64) if a.dtype == np.uint64 else a.astype(np.int64)
    if mode == "codes":
        return xp.where(fmt.isnan(a), _SENTINEL, fmt.ordered(a))
    nan = xp.isnan(a)
    k = fmt.ordered(fmt.encode(xp.where(nan, 0.0, a), saturate=True))
    k = xp.where(xp.isinf(a), xp.where(a < 0, -(fmt.max_code + 1), fmt.max_code + 1), k)
    return xp.where(nan, _SENTINEL, k)


# ---------------------------------------------------------------------- adding up the chunks

class _Spots:
    """Where a set of elements (mismatches) lies in the tile grid: the count per tile, how many
    are in the grid's last tiles (per axis, and along any), how many on their tile's edges."""

    def __init__(self, xp, shape: tuple, tile: tuple, grid: tuple):
        self.xp, self.shape, self.tile, self.grid = xp, shape, tile, grid
        self.tiles = xp.zeros(math.prod(grid), np.int64)
        self.tail = self.edge = 0
        self.tail_axes = [0] * len(shape)

    def add(self, idx):
        """The elements at flat indices ``idx``."""
        xp = self.xp
        tile_id = xp.zeros(idx.shape, np.int64)
        tail = xp.zeros(idx.shape, bool)
        edge = xp.zeros(idx.shape, bool)
        rest = idx
        for a in reversed(range(len(self.shape))):
            n, t, g = self.shape[a], self.tile[a], self.grid[a]
            coord, rest = rest % n, rest // n
            tc = coord // t
            tile_id += tc * math.prod(self.grid[a + 1:])
            if g > 1:
                last = tc == g - 1
                self.tail_axes[a] += int(xp.count_nonzero(last))
                tail |= last
            if t > 2:
                inner = coord % t
                edge |= (inner == 0) | (inner == t - 1) | (coord == n - 1)
        self.tiles += xp.bincount(tile_id, minlength=self.tiles.size)
        self.tail += int(xp.count_nonzero(tail))
        self.edge += int(xp.count_nonzero(edge))

    def merged(self, other: "_Spots") -> "_Spots":
        """The spots of both sets (disjoint)."""
        both = _Spots(self.xp, self.shape, self.tile, self.grid)
        both.tiles = self.tiles + other.tiles
        both.tail, both.edge = self.tail + other.tail, self.edge + other.edge
        both.tail_axes = [a + b for a, b in zip(self.tail_axes, other.tail_axes)]
        return both


class _Tally:
    """What the chunks of one output add up to, and the OutputCheck they make."""

    def __init__(self, xp, fmt, rule, shape: tuple, tile: tuple, max_ref: float):
        self.xp, self.fmt, self.rule, self.shape, self.tile = xp, fmt, rule, shape, tile
        self.max_ref = max_ref
        self.grid = tuple(-(-n // t) for n, t in zip(shape, tile))
        self.bad = _Spots(xp, shape, tile, self.grid)      # the mismatches
        self.far = _Spots(xp, shape, tile, self.grid)      # off by 2x or more, only the floor passes
        self.hist = xp.zeros(_BINS, np.int64)
        self.nbytes = int(2 * self.bad.tiles.nbytes + self.hist.nbytes)
        self.dists = None        # the one chunk's distances, for an exact p99
        self.chunks = 0
        self.integral = True     # every distance a whole number (the histogram is exact then)
        self.n = dict(bad=0, nan=0, inf=0, zero_sign=0, special=0, floor=0, far=0)
        self.max_ulp = self.max_abs = self.max_rel = self.bad_excess = 0.0
        self.worst = (0.0, None, None, None)      # excess, flat index, out, ref
        self.far_worst = (0.0, None, None, None)  # the same, of the "far" elements (ULPs / D)
        self.same = {}           # trap: name -> still equal everywhere, for out and ref
        self.first = {}          # trap: the first key of out and of ref

    # -- one chunk

    def add(self, s: int, o, ref: tuple, others: dict, e: int):
        """Chunk ``s:e``: the output's codes ``o``, ``ref`` (mode, array), ``others`` {what:
        (mode, operand)}, read only while the trap still needs them."""
        xp = self.xp
        mode, r = ref
        c = _compare(xp, self.fmt, self.rule, o, r, mode)
        bad = c.excess > 1
        nbad = int(xp.count_nonzero(bad))
        self.n["bad"] += nbad
        for k, mask in (("nan", c.nan_bad), ("inf", c.inf_bad), ("zero_sign", c.zero_sign)):
            self.n[k] += int(xp.count_nonzero(mask))
        if c.dist.size:
            self.max_ulp = max(self.max_ulp, float(c.dist.max()))
            self.max_abs = max(self.max_abs, float(c.err.max()))
            rel = c.err[c.ref_abs > 0] / c.ref_abs[c.ref_abs > 0]
            self.max_rel = max(self.max_rel, float(rel.max()) if rel.size else 0.0)
            i = int(xp.argmax(c.excess))
            if float(c.excess[i]) > self.worst[0]:
                self.worst = (float(c.excess[i]), s + i, float(c.out[i]), float(c.ref[i]))
        self._histogram(c.dist)
        if nbad:
            self.n["special"] += int(xp.count_nonzero(bad & (c.nan_bad | c.inf_bad | c.flush)))
            self.bad_excess = max(self.bad_excess, float(c.excess[bad].max()))
            self.bad.add(xp.flatnonzero(bad) + s)
        if c.floor_only is not None:
            self._floor(c, s)
        self._trap(o, ref, others, s, e)

    def _floor(self, c: _Compared, s: int):
        """Count the elements only the floor passes, and place those off by 2x or more."""
        xp = self.xp
        self.n["floor"] += int(xp.count_nonzero(c.floor_only))
        nfar = int(xp.count_nonzero(c.far))
        if not nfar:
            return
        self.n["far"] += nfar
        idx = xp.flatnonzero(c.far)
        self.far.add(idx + s)
        ulps = c.dist[idx] / self.rule.ulp
        i = int(xp.argmax(ulps))
        if float(ulps[i]) > self.far_worst[0]:
            j = int(idx[i])
            self.far_worst = (float(ulps[i]), s + j, float(c.out[j]), float(c.ref[j]))

    def _histogram(self, d):
        xp = self.xp
        self.chunks += 1
        self.dists = d if self.chunks == 1 else None
        if self.integral and self.fmt is not None:
            finite = d[xp.isfinite(d)]
            self.integral = bool(xp.all(finite == xp.floor(finite)))
        with np.errstate(divide="ignore", invalid="ignore"):
            big = _EXACT - 8 + xp.ceil(xp.log2(xp.where(d > _EXACT, d, 2.0 * _EXACT)))
        b = xp.where(d <= _EXACT, xp.ceil(d), xp.minimum(big, _BINS - 2))
        b = xp.where(xp.isinf(d), _BINS - 1, b)
        self.hist += xp.bincount(b.astype(np.int64), minlength=_BINS)

    def _trap(self, o, ref: tuple, others: dict, s: int, e: int):
        """Keep, for out and ref, whether they are still all zero, one value, equal to the
        initial contents, equal to each input."""
        xp, fmt = self.xp, self.fmt
        ok = _keys(xp, fmt, o, "codes" if fmt is not None else "ints")
        rk = _keys(xp, fmt, ref[1], ref[0])
        if not ok.size:
            return
        for side, k in (("out", ok), ("ref", rk)):
            self.first.setdefault(side, int(k[0]))
            self._still(side, "zeros", lambda: xp.all(k == 0))
            self._still(side, "constant", lambda: xp.all(k == self.first[side]))
        for what, (mode, operand) in others.items():
            if self.same.get(("out", what), True):      # out differs already: no trap to find
                try:
                    ik = _keys(xp, fmt, operand.read(xp, s, e), mode)
                except DtypeError:                        # not codes of this format: no copy
                    self.same[("out", what)] = False
                    continue
                self._still("out", what, lambda: xp.all(ok == ik))
                self._still("ref", what, lambda: xp.all(rk == ik))

    def _still(self, side: str, what: str, test):
        key = (side, what)
        if self.same.get(key, True):
            self.same[key] = bool(test())

    # -- the result

    def _p99(self, size: int) -> tuple[float, bool]:
        if size == 0:
            return 0.0, True
        rank = max(1, math.ceil(0.99 * size))
        if self.dists is not None:
            return float(self.xp.partition(self.dists, rank - 1)[rank - 1]), True
        cum = np.cumsum(_host(self.hist))
        b = int(np.searchsorted(cum, rank))
        if b == _BINS - 1:
            return math.inf, True
        if b <= _EXACT:
            return float(b), self.integral
        return math.ldexp(1.0, b - _EXACT + 8), False

    def _trivial(self) -> tuple[str | None, str | None]:
        """(the trap, what the output is) or (None, None)."""
        same = lambda side, what: self.same.get((side, what), False)   # noqa: E731
        if same("out", "zeros") and not same("ref", "zeros"):
            return "zeros", "zeros"
        if same("out", "initial") and not same("ref", "initial"):
            return "unchanged", "unchanged"
        if same("out", "constant") and not same("ref", "constant"):
            return "constant", "constant"
        for (side, what), v in self.same.items():
            if side == "out" and v and what.startswith("input ") and not same("ref", what):
                return "copy", f"copy of {what[6:]}"
        return None, None

    def result(self, *, name, dtype, rule, shape, size) -> OutputCheck:
        n = self.n
        # more elements off by 2x or more than the floor may pass: they fail too
        far = n["far"] > floor_allowance(size)
        spots = self.bad.merged(self.far) if far else self.bad
        bad = n["bad"] + (n["far"] if far else 0)
        p99, exact = self._p99(size)
        excess, flat, w_out, w_ref = max(self.worst, self.far_worst) if far else self.worst
        worst = None if flat is None else tuple(int(i) for i in np.unravel_index(flat, shape))
        tile_map = _host(spots.tiles).reshape(self.grid)
        affected = int(np.count_nonzero(tile_map))
        trap, trivial = self._trivial()
        counts = f"{bad} of {size} elements outside the rule"
        if far:
            counts += (f", {n['far']} of them off by a factor of 2 or more, which the floor "
                       f"passes in at most 1% of the elements")
        if trap:
            category, reason = trap, self._trap_reason(name, trap, trivial, bad)
        elif not bad:
            category, reason = "pass", None
        elif spots.tail == bad:
            every = [str(a) for a, k in enumerate(spots.tail_axes) if k == bad]
            axes = every or [str(a) for a, k in enumerate(spots.tail_axes) if k]
            category = "tail"
            reason = (f"{counts}, all in the last tile of the grid along axis {' or '.join(axes)} "
                      f"(tile {self.tile}, grid {self.grid})")
        elif spots.edge == bad and affected > 1:
            category = "tile-edge"
            reason = (f"{counts}, all on the first or last row/column of their tile (tile "
                      f"{self.tile}), in {affected} tiles")
        elif n["special"] == n["bad"] > 0 and n["special"] >= bad - n["bad"]:
            # every mismatch beyond the floor is special, and they are most: the far elements
            # the floor fails beside them follow from them (a softmax row summed to Inf)
            parts = [f"{k} {w}" for k, w in ((n["nan"], "NaN"), (n["inf"], "Inf")) if k]
            flushed = n["bad"] - n["nan"] - n["inf"]
            parts += [f"{flushed} zero where the other side is subnormal"] if flushed > 0 else []
            where = "the rest" if far else "all"
            category, reason = "special", f"{counts}, {where} at special values: {', '.join(parts)}"
        elif self.bad_excess <= _PRECISION and not far and (affected > 1 or tile_map.size == 1):
            category = "precision"
            spread = f"spread over {affected} tiles" if affected > 1 else "in the output's one tile"
            reason = f"{counts}, by at most {self.bad_excess:.3g}x the bound, {spread}"
        else:
            at = f"{name}[{', '.join(map(str, worst))}]" if worst else name
            category, reason = "wrong", f"{counts} (worst at {at}: {w_out!r}, expected {w_ref!r})"
        return OutputCheck(
            name=name, dtype=dtype, shape=tuple(shape), size=size, passed=category == "pass",
            category=category, reason=reason, rule=rule, mismatches=bad, max_ulp=self.max_ulp,
            p99_ulp=p99, p99_exact=exact, max_abs=self.max_abs, max_rel=self.max_rel,
            worst=worst, worst_out=w_out, worst_ref=w_ref, nan_misplaced=n["nan"],
            inf_misplaced=n["inf"], zero_sign_misplaced=n["zero_sign"], tile=self.tile,
            tile_map=tile_map, trivial=trivial, floor_passed=n["floor"] - (n["far"] if far else 0),
            floor_far=n["far"])

    def _trap_reason(self, name, trap, trivial, bad) -> str:
        what = {"zeros": "is all zeros", "unchanged": "is unchanged from before the launch",
                "constant": "holds one value everywhere", "copy": f"is a {trivial}"}[trap]
        text = f"{name} {what}, the reference is not"
        if bad:
            return f"{text} ({bad} elements outside the rule)"
        return (f"{text}: it passes the tolerance only because the reference is small "
                f"(max|ref| = {self.max_ref:.3g})")


def _host(a) -> np.ndarray:
    return a.get() if _origin(a) == "cupy" else np.asarray(a)
