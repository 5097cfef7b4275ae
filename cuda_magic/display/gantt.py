"""The Gantt chart of a :class:`~cuda_magic.runtime.measure.timeline.Timeline` as inline SVG: no
plotting library and no script, so a saved notebook shows it offline.

Rows are SMs, each split into lanes (the warps resident on it at once; a lane is reused once
its warp's last event has passed), or the warps of chosen blocks.  One colour per range name,
in the timeline's ``names()`` order; marks are ticks; a range nested in another of its warp is
drawn inset over it; an open range (no END) is faded with a dashed outline.  Each shape's
``<title>`` is its hover text.  The time axis is a chart of its own above the rows, so it
stays in sight while the rows scroll.

The chart stays small whatever the event count: a row draws at most its share of
``max_rects`` shapes.  Ranges are binned by the pixel column their start falls in (per lane
and nesting depth); a bin is drawn in its longest range's colour over the bin's span, its
hover saying how many ranges it holds; runs of bins of one name less than a column apart
join into one rectangle.
When a row still draws too many, its bins widen (2, 4, 8... pixels) until it fits.  All of it
is NumPy over arrays read once from the events (:class:`Arrays`).
"""

from __future__ import annotations

import heapq
import math
from html import escape
from itertools import chain
from operator import attrgetter

import numpy as np

__all__ = ["Arrays", "Chart", "chart", "colour", "ns", "block_text", "PALETTE", "MAX_RECTS",
           "MAX_ROWS", "WIDTH"]

# Tableau 10 without its grey (a grey reads as "idle"); more names get golden-angle hues
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#17becf")
MAX_RECTS = 20_000      # shapes a chart draws at most (ranges and marks)
ROW_RECTS = 2_000       # ... and one row at most
MAX_ROWS = 256          # rows a chart draws at most (the warps of many blocks)
WIDTH = 960             # the chart's width in px
LABEL_W = 96            # the row labels' column
RIGHT = 12
AXIS_H = 22
GAP = 2                 # between rows
DEPTHS = 3              # nesting depths drawn apart (deeper ones draw at the last)
TARGET_H = 600          # rows shrink toward this total height (down to MIN_ROW)
MIN_ROW = 8
LABEL_PX = 11           # a row label needs this much height
FONT = "font-family: var(--jp-code-font-family, monospace); font-size: 10px"


def colour(i: int) -> str:
    """The colour of the ``i``-th name."""
    if i < len(PALETTE):
        return PALETTE[i]
    return f"hsl({(i - len(PALETTE)) * 137.508 % 360:.0f}, 55%, 52%)"


def ns(x: float) -> str:
    """A time in ns as people read it: ``640 ns``, ``12.3 µs``, ``1.25 ms``, ``2.00 s``."""
    x = float(x)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(x) >= scale:
            v = x / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{x:.0f} ns"


def block_text(block, grid) -> str:
    """``5`` for a 1-D grid, ``(5,1,0)`` otherwise."""
    if tuple(grid)[1:] == (1, 1):
        return str(block[0])
    return "(" + ",".join(str(v) for v in block) + ")"


class Arrays:
    """A timeline's events as NumPy arrays (read once; a view keeps them for every redraw):
    ``start``, ``end``, ``name`` (index into ``names``), ``mark``, ``open``, ``sm``, ``block``
    (linear, x fastest), ``warp``, ``track`` (the warp's index in the launch), ``depth``
    (ranges of the same warp that enclose it)."""

    def __init__(self, t):
        ev = t.events
        n = len(ev)
        self.timeline = t
        gx, gy = t.grid[0], t.grid[1]
        self.wpb = max((t.block[0] * t.block[1] * t.block[2] + 31) // 32, 1)
        # one walk per kind of field (each walk over 500k events costs ~50 ms)
        fields = attrgetter("start", "end", "sm", "warp", "open")
        ints = np.fromiter(chain.from_iterable(map(fields, ev)), np.int64, 5 * n).reshape(n, 5)
        self.start, self.end, self.sm, self.warp = (ints[:, k].copy() for k in range(4))
        self.open = ints[:, 4].astype(bool)
        xyz = np.fromiter(chain.from_iterable(map(attrgetter("block"), ev)), np.int64, 3 * n)
        self.block = xyz[0::3] + gx * (xyz[1::3] + gy * xyz[2::3])
        pairs = list(map(attrgetter("name", "kind"), ev))
        ids = {p: i for i, p in enumerate(dict.fromkeys(pairs))}
        self.names = list(dict.fromkeys(name for name, _ in ids))     # names() order
        index = {name: i for i, name in enumerate(self.names)}
        code = np.fromiter(map(ids.__getitem__, pairs), np.int64, n)
        self.name = np.array([index[name] for name, _ in ids], np.int32)[code] if n else \
            np.zeros(0, np.int32)
        self.mark = np.array([kind == "mark" for _, kind in ids], bool)[code] if n else \
            np.zeros(0, bool)
        if n and np.any(np.diff(self.start) < 0):        # the contract sorts them; be sure
            order = np.argsort(self.start, kind="stable")
            for key in ("start", "end", "name", "mark", "open", "sm", "block", "warp"):
                setattr(self, key, getattr(self, key)[order])
            self.events = [ev[i] for i in order.tolist()]
        else:
            self.events = ev
        self.end = np.maximum(self.end, self.start)
        self.track = self.block * self.wpb + self.warp
        self.depth = self._depth()
        self.duration = max(int(t.duration), int(self.end.max()) if n else 0)
        self._lanes = None

    def _depth(self):
        """For each range, how many earlier ranges of its warp are still open at its start
        (equal starts: the longer one is the outer); 0 for marks."""
        depth = np.zeros(len(self.start), np.int64)
        r = np.flatnonzero(~self.mark)
        if not r.size:
            return depth
        # the warps numbered densely, so that warp * span + time fits in 64 bits
        track = np.unique(self.track[r], return_inverse=True)[1].reshape(-1)
        start, end = self.start[r], self.end[r]
        order = np.lexsort((-end, start, track))
        tr = track[order]
        first = np.searchsorted(tr, tr, "left")
        rank = np.arange(len(order)) - first
        span = int(self.end.max()) + 1
        ends = np.sort(track * span + end)
        closed = (np.searchsorted(ends, tr * span + start[order], "right")
                  - np.searchsorted(ends, tr * span, "left"))
        depth[r[order]] = np.maximum(rank - closed, 0)
        return depth

    def lanes(self):
        """(the SMs in order, each event's lane on its SM, lanes per SM at most): a warp takes
        the lowest lane free when its first event starts and holds it to its last event."""
        if self._lanes is None:
            order = np.argsort(self.track, kind="stable")
            tr = self.track[order]
            cuts = np.flatnonzero(np.r_[True, tr[1:] != tr[:-1]]) if tr.size else tr
            tracks = tr[cuts]
            lo = np.minimum.reduceat(self.start[order], cuts) if tr.size else tr
            hi = np.maximum.reduceat(self.end[order], cuts) if tr.size else tr
            sm = self.sm[order][cuts]
            lane = np.zeros(len(tracks), np.int64)
            most, current = 1, None
            lo_l, hi_l, sm_l = lo.tolist(), hi.tolist(), sm.tolist()
            for i in np.lexsort((lo, sm)).tolist():
                if sm_l[i] != current:
                    current, busy, free, used = sm_l[i], [], [], 0
                while busy and busy[0][0] < lo_l[i]:
                    heapq.heappush(free, heapq.heappop(busy)[1])
                if free:
                    k = heapq.heappop(free)
                else:
                    k, used = used, used + 1
                lane[i] = k
                heapq.heappush(busy, (hi_l[i], k))
                most = max(most, used)
            sms = np.unique(sm)
            self._lanes = (sms, lane[np.searchsorted(tracks, self.track)], most)
        return self._lanes

    def blocks(self) -> list[int]:
        """The blocks that recorded events (linear), in the order their first event came."""
        return list(dict.fromkeys(self.block.tolist()))


class Chart:
    """What one drawing shows: the SVG (axis and rows), the window, and what was drawn."""

    def __init__(self, axis: str, rows: str, t0: int, t1: int, shapes: int, shown: int,
                 merged: int, rows_shown: int, rows_total: int, caption: str):
        self.axis, self.rows, self.t0, self.t1 = axis, rows, t0, t1
        self.shapes, self.shown, self.merged = shapes, shown, merged
        self.rows_shown, self.rows_total, self.caption = rows_shown, rows_total, caption

    def html(self, max_height: int = 520) -> str:
        # contain: a widget's pane (a flex item) would otherwise grow to the chart's width
        # instead of letting it scroll
        return (f'<div class="cuda-magic-gantt" style="max-width: 100%; overflow-x: auto; '
                f'contain: inline-size; line-height: 1.35">'
                f'{self.axis}<div style="max-height: {max_height}px; overflow-y: auto; '
                f'width: max-content">{self.rows}</div>{self.caption}</div>')


# -- layout ------------------------------------------------------------------------------------

def _layout(a: Arrays, rows: str, blocks):
    """(each event's row or -1, its sub-row, sub-rows per row, the rows' labels and hover,
    rows there were)."""
    t = a.timeline
    if rows == "sm":
        sms, lane, most = a.lanes()
        row = np.searchsorted(sms, a.sm)
        labels = [(f"SM {s}", f"SM {s}") for s in sms.tolist()]
        total = len(labels)
        keep = min(total, MAX_ROWS)
        row = np.where(row < keep, row, -1)
        return row, lane, most, labels[:keep], total
    chosen = set(blocks)
    tracks = np.unique(a.track[np.isin(a.block, list(chosen))]) if chosen else np.zeros(0, int)
    total = len(tracks)
    tracks = tracks[:MAX_ROWS]
    pos = np.searchsorted(tracks, a.track)
    hit = pos < len(tracks)
    hit[hit] = tracks[pos[hit]] == a.track[hit]
    row = np.where(hit, pos, -1)
    labels = []
    for tr in tracks.tolist():
        b, w = divmod(tr, a.wpb)
        where = (b % t.grid[0], b // t.grid[0] % t.grid[1], b // (t.grid[0] * t.grid[1]))
        labels.append((f"b{block_text(where, t.grid)} w{w}", f"block {where} warp {w}"))
    return row, np.zeros(len(row), np.int64), 1, labels, total


def _row_height(n_rows: int, lanes: int) -> tuple[float, int]:
    """(a row's height, its sub-rows): 10 px per lane up to 40 px, less when there are many
    rows (down to MIN_ROW), each sub-row 2 px at least."""
    want = min(max(10 * lanes, 16), 40)
    h = max(min(want, TARGET_H / max(n_rows, 1) - GAP), MIN_ROW)
    return h, max(min(lanes, int(h // 2)), 1)


# -- binning -----------------------------------------------------------------------------------

def _bins(x0, x1, dur, name, layer, q, n_names):
    """Join the events (sorted by layer, then start) whose starts fall in one ``q``-px column
    of their layer (``q`` per event), then runs of joined columns of one name.  Per shape: its
    first event (an index into the arguments), x0, x1, how many events, its name (the longest
    event's), and whether it holds that name alone."""
    col = np.floor(x0 / q).astype(np.int64)
    cuts = np.flatnonzero(np.r_[True, (layer[1:] != layer[:-1]) | (col[1:] != col[:-1])])
    gname = np.maximum.reduceat(dur * n_names + name, cuts) % n_names
    one = np.minimum.reduceat(name, cuts) == np.maximum.reduceat(name, cuts)
    gx0, gx1 = x0[cuts], np.maximum.reduceat(x1, cuts)
    count = np.diff(np.r_[cuts, len(x0)])
    glayer, gq = layer[cuts], q[cuts]
    join = np.r_[False, (glayer[1:] == glayer[:-1]) & (gname[1:] == gname[:-1])
                 & (gx0[1:] <= gx1[:-1] + gq[1:])]
    runs = np.flatnonzero(~join)
    pure = np.minimum.reduceat(one.astype(np.int8), runs).astype(bool)
    return (cuts[runs], gx0[runs], np.maximum.reduceat(gx1, runs),
            np.add.reduceat(count, runs), gname[runs], pure)


def _fit(x0, x1, dur, name, layer, row, n_rows, n_names, cap, width):
    """:func:`_bins` with 1-px columns, then, for the rows that draw more than ``cap``
    shapes, columns as many times wider (a power of 2) as they were over, until each fits."""
    q = np.ones(n_rows)
    todo = np.arange(len(x0))
    parts = []
    while todo.size:
        first, gx0, gx1, count, gname, pure = _bins(x0[todo], x1[todo], dur[todo], name[todo],
                                                    layer[todo], q[row[todo]], n_names)
        srow = row[todo][first]
        per_row = np.bincount(srow, minlength=n_rows)
        over = (per_row > cap) & (q < 2 * width)
        ok = ~over[srow]
        parts.append((todo[first[ok]], gx0[ok], gx1[ok], count[ok], gname[ok], pure[ok]))
        if not over.any():
            break
        q[over] *= 2.0 ** np.ceil(np.log2(per_row[over] / cap))
        todo = todo[over[row[todo]]]
    if not parts:
        return [np.zeros(0, np.int64)] * 6
    return [np.concatenate(p) for p in zip(*parts)]


# -- drawing -----------------------------------------------------------------------------------

def _step(span: float) -> float:
    """A round tick step (1, 2 or 5 x 10^k ns) giving about 6 ticks over ``span``."""
    raw = max(span / 6, 1)
    base = 10 ** math.floor(math.log10(raw))
    return next(m * base for m in (1, 2, 5, 10) if m * base >= raw)


def _ticks(t0: int, t1: int) -> list[float]:
    step = _step(t1 - t0)
    first = math.ceil(t0 / step) * step
    return [first + i * step for i in range(int((t1 - first) // step) + 1)]


def _axis(t0, t1, width, plot) -> str:
    scale = plot / (t1 - t0)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="cuda-magic-gantt-axis" '
             f'width="{width}" height="{AXIS_H}" style="{FONT}; display: block">',
             f'<text x="{LABEL_W - 6}" y="{AXIS_H - 8}" text-anchor="end" fill="currentColor" '
             f'fill-opacity="0.7">time</text>']
    for tick in _ticks(t0, t1):
        x = LABEL_W + (tick - t0) * scale
        anchor = "start" if x < LABEL_W + 20 else "end" if x > LABEL_W + plot - 20 else "middle"
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{AXIS_H - 5}" y2="{AXIS_H}" '
                     f'stroke="currentColor" stroke-opacity="0.5"/>'
                     f'<text x="{x:.1f}" y="{AXIS_H - 8}" text-anchor="{anchor}" '
                     f'fill="currentColor">{escape(ns(tick))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _title(a: Arrays, i: int, count: int, pure: bool, name: str, lo: float, hi: float,
           where: str) -> str:
    """The hover text of a shape: its event, or what it joins."""
    if count == 1:
        e = a.events[i]
        t = a.timeline
        if e.kind == "mark":
            return (f"{e.name} (mark) · block {block_text(e.block, t.grid)} warp {e.warp} · "
                    f"SM {e.sm} · at {ns(e.start)}")
        state = " (open: no END)" if e.open else ""
        return (f"{e.name}{state} · block {block_text(e.block, t.grid)} warp {e.warp} · "
                f"SM {e.sm} · start {ns(e.start)} · duration {ns(e.end - e.start)}")
    what = "marks" if a.mark[i] else "ranges"
    head = f"{name} ×{count:,}" if pure else f"{count:,} {what}, the longest {name}"
    return f"{head} (closer than a pixel at this zoom: zoom in) · {where} · {ns(lo)}–{ns(hi)}"


def chart(a: Arrays, rows: str = "sm", blocks=(), window=None, width: int = WIDTH,
          max_rects: int = MAX_RECTS) -> Chart:
    """The Gantt chart of ``a``'s events in ``window`` (``(t0, t1)`` in ns; all of it by
    default): rows ``"sm"`` or ``"warps"`` (of ``blocks``, linear block indices)."""
    t0, t1 = window if window is not None else (0, a.duration)
    t0, t1 = int(t0), int(max(t1, t0 + 1))
    plot = width - LABEL_W - RIGHT
    row, sub, lanes, labels, total = _layout(a, rows, blocks)
    n_rows = len(labels)
    h, subs = _row_height(n_rows, lanes)
    sub = sub * subs // max(lanes, 1)
    scale = plot / (t1 - t0)
    inside = (row >= 0) & np.where(a.mark, (a.start >= t0) & (a.start <= t1),
                                   (a.end > t0) & (a.start < t1))
    idx = np.flatnonzero(inside)
    depth = np.where(a.mark[idx], DEPTHS, np.minimum(a.depth[idx], DEPTHS - 1))
    layer = (row[idx] * subs + sub[idx]) * (DEPTHS + 1) + depth
    order = np.argsort(layer, kind="stable")
    idx, layer = idx[order], layer[order]
    x0 = (np.maximum(a.start[idx], t0) - t0) * scale
    x1 = (np.minimum(a.end[idx], t1) - t0) * scale
    cap = max(min(ROW_RECTS, max_rects // max(n_rows, 1)), 1)
    first, gx0, gx1, count, gname, pure = _fit(
        x0, x1, a.end[idx] - a.start[idx], a.name[idx].astype(np.int64), layer,
        layer // (subs * (DEPTHS + 1)), max(n_rows, 1), max(len(a.names), 1), cap, plot)
    glayer = layer[first] if len(first) else first
    height = max(n_rows * (h + GAP), 24)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="cuda-magic-gantt-rows" '
           f'width="{width}" height="{height:.0f}" data-t0="{t0}" data-t1="{t1}" '
           f'style="{FONT}; display: block">']
    every = max(math.ceil(LABEL_PX / (h + GAP)), 1)
    for r, (label, hover) in enumerate(labels):
        top = r * (h + GAP)
        if r % 2 == 0:
            out.append(f'<rect x="{LABEL_W}" y="{top:.1f}" width="{plot}" height="{h:.1f}" '
                       f'fill="currentColor" fill-opacity="0.05"/>')
        if r % every == 0:
            out.append(f'<text x="{LABEL_W - 6}" y="{top + h / 2 + 3.5:.1f}" text-anchor="end" '
                       f'fill="currentColor"><title>{escape(hover)}</title>{escape(label)}</text>')
    for tick in _ticks(t0, t1):
        x = LABEL_W + (tick - t0) * scale
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height:.0f}" '
                   f'stroke="currentColor" stroke-opacity="0.12"/>')
    if not n_rows:
        out.append(f'<text x="{LABEL_W}" y="16" fill="currentColor">no events in view</text>')
    sub_h = h / subs
    depth_of = glayer % (DEPTHS + 1)
    for d in range(DEPTHS + 1):                  # outer ranges first, inner over them, marks last
        for n in np.unique(gname[depth_of == d]).tolist():
            pick = np.flatnonzero((depth_of == d) & (gname == n))
            out.append(_shapes(a, pick, idx, first, gx0, gx1, count, pure, glayer, n, d,
                               labels, h, sub_h, subs, t0, scale))
    out.append("</svg>")
    shown = len(idx)
    merged = int(count[count > 1].sum()) if len(count) else 0
    return Chart(_axis(t0, t1, width, plot), "".join(out), t0, t1, len(first), shown, merged,
                 n_rows, total, _caption(a, rows, blocks, t0, t1, len(first), shown, merged,
                                         n_rows, total, lanes, subs))


def _shapes(a, pick, idx, first, gx0, gx1, count, pure, glayer, n, d, labels, h, sub_h, subs,
            t0, scale) -> str:
    """The shapes of name ``n`` at depth ``d`` (``DEPTHS``: marks), in one ``<g>``."""
    c = colour(n)
    name = a.names[n]
    parts = [f'<g fill="{c}">' if d < DEPTHS else
             f'<g stroke="{c}" fill="{c}" stroke-width="2" stroke-linejoin="round">']
    for k in pick.tolist():
        layer = int(glayer[k])
        r, s = divmod(layer // (DEPTHS + 1), subs)
        top = r * (h + GAP) + s * sub_h
        i = int(idx[first[k]])
        lo, hi = t0 + gx0[k] / scale, t0 + gx1[k] / scale
        title = escape(_title(a, i, int(count[k]), bool(pure[k]), name, lo, hi, labels[r][1]))
        x = LABEL_W + gx0[k]
        if d == DEPTHS:         # a tick over the lane, a small triangle on top where there is room
            head = (f" M{x - 3:.1f},{top:.1f} h6 l-3,4 z" if sub_h >= 6 else "")
            parts.append(f'<path d="M{x:.1f},{top:.1f} V{top + sub_h:.1f}{head}">'
                         f'<title>{title}</title></path>')
            continue
        inset = d * sub_h * 0.2
        lane_gap = 0.5 if sub_h >= 4 else 0
        w = max(gx1[k] - gx0[k], 1.0)
        extra = (f' fill-opacity="0.45" stroke="{c}" stroke-dasharray="2 1"'
                 if count[k] == 1 and a.open[i] else "")
        parts.append(f'<rect x="{x:.1f}" y="{top + inset:.1f}" width="{w:.1f}" '
                     f'height="{max(sub_h - 2 * inset - lane_gap, 1):.1f}"{extra}>'
                     f'<title>{title}</title></rect>')
    parts.append("</g>")
    return "".join(parts)


def _caption(a, rows, blocks, t0, t1, shapes, shown, merged, n_rows, total, lanes, subs) -> str:
    t = a.timeline
    if rows == "sm":
        of = f" (of the GPU's {t.sm_count})" if t.sm_count else ""
        what = (f"rows: the {total} SMs that recorded events{of}; each row's lanes are the "
                f"warps resident at once (up to {lanes})")
        if subs < lanes:
            what += f", drawn in {subs} lanes"
    else:
        what = f"rows: the {total} warps that recorded events in {len(blocks)} chosen block" \
               + "s" * (len(blocks) != 1)
    if n_rows < total:
        what += f" (the first {n_rows} drawn)"
    lines = [what, f"{ns(t0)} – {ns(t1)} of {ns(a.duration)}: {shown:,} events drawn as "
                   f"{shapes:,} shapes" + (f"; {merged:,} closer than a pixel to the next are "
                                           f"joined (hover says how many; zoom in)"
                                           if merged else "")]
    return "".join(f'<div style="{FONT}; font-size: 11px; opacity: 0.7; margin: 2px 0">'
                   f'{escape(line)}</div>' for line in lines)
