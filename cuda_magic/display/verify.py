"""How a :class:`~cuda_magic.correctness.verdict.Verdict` (``cuda_magic.verify``, ``k.verify``)
looks: a plain-text table (terminal, ``show``) and static HTML (notebooks, nbconvert).

One row per output: its dtype and shape, PASS or FAIL with the category, the mismatches, the
largest and the 99th-percentile ULP distance (``≈`` when the percentile comes from a histogram),
the largest absolute and relative error, the worst element (index: out vs ref), the NaN, Inf and
±0 placed differently, and the rule that decided.  Under the table, each failing output's reason;
a line on determinism when the kernel ran more than once; the peak extra memory of the check and
where it was taken.

Each failing output that has a tile map gets an inline SVG: one square per tile of the output,
coloured by the fraction of the tile's elements that mismatch (grey: none; light to dark: a few to
all), its axes the tile grid's, with a legend and the tile shape stated.  A grid larger than
``max_cells`` (64) along an axis is drawn with several tiles per square (the caption says how
many).  No JavaScript; colours that read on light and dark themes (text in ``currentColor``).
"""

from __future__ import annotations

import math
from html import escape

import numpy as np

from ..config import printable
from ..errors import ShowError
from . import markup
from .text import table as text_table

__all__ = ["VerdictView", "MEANINGS", "text", "html", "tile_svg", "MAX_CELLS"]

MAX_CELLS = 64             # squares along each axis of a drawn tile map, at most

#: What each category means (the badge's tooltip in HTML).
MEANINGS = {
    "pass": "every element within the rule",
    "missing": "the output is not there",
    "shape": "its shape or size differs from the reference's",
    "zeros": "all zeros where the reference is not (a trap: fails whatever the tolerance)",
    "unchanged": "the output as it was before the launch (a trap: fails whatever the tolerance)",
    "constant": "one value everywhere where the reference is not (a trap: fails whatever the "
                "tolerance)",
    "copy": "a copy of an input (a trap: fails whatever the tolerance)",
    "special": "every mismatch is a NaN, Inf or ±0 placed differently",
    "tail": "every mismatch is in the last tile along some axis (the partial tile, the end of "
            "the output)",
    "tile-edge": "every mismatch is on the first or last row or column of its tile, in more than "
                 "one tile",
    "precision": "near the rule's bound (at most 16x it), mismatches spread over the output",
    "wrong": "the values are wrong",
    "nondeterministic": "the runs differ bitwise, and the outputs fail",
}

PASS_BADGE = "background: #27ae60; color: #fff"
FAIL_BADGE = "background: #c0392b; color: #fff"
BADGE = "display: inline-block; padding: 0 5px; border-radius: 3px; font-weight: bold; " \
        "line-height: 1.4; white-space: nowrap"
CATEGORY_BADGE = ("color: #d35400; background: rgba(211,84,0,0.14); border: 1px solid "
                  "rgba(211,84,0,0.55)")
NOWRAP = "white-space: nowrap"

# tile map colours: grey for a tile with no mismatch, then light to dark as more of it mismatches
NEUTRAL = "rgba(127,127,127,0.22)"
RAMP = ((254, 224, 139), (253, 174, 97), (244, 109, 67), (215, 48, 39), (140, 10, 40))
LEGEND_STOPS = (0.01, 0.1, 0.5, 1.0)

TEXT_HEAD = ["output", "dtype", "shape", "result", "mismatches", "max ULP", "p99 ULP", "max abs",
             "max rel", "worst: out vs ref", "NaN/Inf/±0 misplaced"]
# HTML: dtype and shape in one column (the table fits a notebook beside JupyterLab's sidebar),
# the longest header in two lines
HTML_HEAD = ["output", "dtype, shape", *TEXT_HEAD[3:-1], "NaN/Inf/±0<br>misplaced"]


# -- figures ------------------------------------------------------------------------------------

def _n(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _real(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def ulp(x) -> str:
    """A ULP distance: ``3``, ``0.516``, ``1.84e+19``, ``inf``; ``–`` when there is none."""
    v = _real(x)
    if v is None:
        return "–"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if abs(v) >= 1e6:
        return f"{v:.3g}"
    return f"{v:,.0f}" if v == int(v) else f"{v:.3g}"


def error(x) -> str:
    """An absolute or relative error, 3 significant digits."""
    v = _real(x)
    if v is None:
        return "–"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return "0" if v == 0 else f"{v:.3g}"


def value(x, integer: bool = False) -> str:
    """An element's value, as short as shows it exactly: ``1.5``, ``0.1`` (a float32),
    ``1.0000001``, ``-0.0``, ``3.0``, ``nan``; ``7`` for an integer output."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(v) or math.isinf(v):
        return str(v)
    if integer and v == int(v):
        return str(int(v))
    with np.errstate(over="ignore"):
        if float(np.float32(v)) == v:
            return str(np.float32(v))
    return repr(v)


def integer(dtype) -> bool:
    """True for an integer (or bool) dtype name: compared exactly, shown without a point."""
    return str(dtype).startswith(("int", "uint", "bool"))


def p99(c) -> str:
    text = ulp(c.p99_ulp)
    return text if c.p99_exact or text == "–" else f"≈{text}"


def index(worst) -> str:
    if worst is None:
        return ""
    at = worst if isinstance(worst, tuple) else (worst,)
    return "[" + ", ".join(str(int(i)) for i in at) + "]"


def worst(c) -> str:
    """``[3, 17]: 1.5 vs 1.25``, or ``–`` when no element mismatches."""
    if c.worst is None:
        return "–"
    whole = integer(c.dtype)
    return f"{index(c.worst)}: {value(c.worst_out, whole)} vs {value(c.worst_ref, whole)}"


def _shape(shape) -> str:
    if shape is None:
        return "–"
    shape = tuple(int(s) for s in shape)
    return f"({shape[0]},)" if len(shape) == 1 else str(shape)


def mismatches(c) -> str:
    size = int(c.size or 0)
    if c.category == "missing":
        return "–"
    out = f"{int(c.mismatches):,} of {size:,}"
    if c.mismatches and size:
        share = 100 * c.mismatches / size
        out += f" ({share:.2g} %)" if share < 10 else f" ({share:.0f} %)"
    return out


def specials(c) -> str:
    return f"{int(c.nan_misplaced)}/{int(c.inf_misplaced)}/{int(c.zero_sign_misplaced)}"


def result(c) -> str:
    return "PASS" if c.passed else f"FAIL {c.category}"


def nbytes(n: int) -> str:
    n = int(n)
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return _n(n, "byte")


def tile_text(tile) -> str:
    """``tiles of 16 x 32 elements (rows x columns)``, ``tiles of 256 elements``, ``tiles of
    16 x 16 elements over the last two axes`` (a tile of (1, 16, 16))."""
    tile = tuple(int(t) for t in tile)
    if len(tile) == 1:
        return f"tiles of {tile[0]:,} elements"
    if len(tile) > 2 and all(t == 1 for t in tile[:-2]):
        rows, cols = tile[-2:]
        return (f"tiles of {rows} x {cols} elements" +
                ("" if rows == cols else " (rows x columns)") + " over the last two axes")
    dims = " x ".join(str(t) for t in tile)
    if len(tile) == 2:
        return f"tiles of {dims} elements" + ("" if tile[0] == tile[1] else " (rows x columns)")
    return f"tiles of {dims} elements (C order of the axes)"


# -- the verdict as a whole ---------------------------------------------------------------------

def _failing(v) -> list:
    return [c for c in v.outputs if not c.passed]


def headline(v) -> str:
    """``verify: FAIL tail · 1 of 2 outputs fails · max 3 ULP``."""
    failing = _failing(v)
    n = len(v.outputs)
    state = "PASS" if not failing else f"FAIL {failing[0].category}"
    count = (_n(n, "output") if not failing else
             f"{len(failing)} of {_n(n, 'output')} {'fails' if len(failing) == 1 else 'fail'}")
    return f"verify: {state} · {count} · max {ulp(max_ulp(v))} ULP"


def max_ulp(v) -> float:
    values = [x for c in v.outputs if (x := _real(c.max_ulp)) is not None]
    return max(values) if values else float("nan")


def determinism(v) -> str | None:
    """``3 runs: bitwise deterministic`` or ``3 runs: not bitwise deterministic: y up to 2 ULP
    apart between runs``; None for one run."""
    if not v.runs or v.runs <= 1:
        return None
    head = f"{v.runs} runs"
    if v.deterministic is None:
        return f"{head}: not compared"
    if v.deterministic:
        return f"{head}: bitwise deterministic (every output the same in every run)"
    spread = v.spread or {}
    apart = [f"{name} up to {ulp(d)} ULP apart" for name, d in spread.items() if _real(d) != 0]
    same = [name for name, d in spread.items() if _real(d) == 0]
    out = f"{head}: not bitwise deterministic"
    if apart:
        out += ": " + ", ".join(apart) + " between runs"
    if same:
        out += f"; {', '.join(same)} the same in every run"
    return out


def memory(v) -> str:
    return f"peak extra memory of the check: {nbytes(v.peak_bytes)} on the {v.where}"


def _rules(v) -> tuple[str | None, list[tuple[str, str]]]:
    """(the rule when every output has the same one, else None; [(output, rule)])."""
    rules = [(c.name, c.rule) for c in v.outputs if c.rule]
    if rules and len({r for _, r in rules}) == 1 and len(rules) == len(v.outputs):
        return rules[0][1], []
    return None, rules


def _row(c) -> list[str]:
    return [c.name, str(c.dtype or "–"), _shape(c.shape), result(c), mismatches(c),
            ulp(c.max_ulp), p99(c), error(c.max_abs), error(c.max_rel), worst(c), specials(c)]


def _approximate(v) -> bool:
    return any(not c.p99_exact and _real(c.p99_ulp) is not None for c in v.outputs)


P99_NOTE = "≈: p99 from a histogram of the ULP distances (the upper end of its bucket)"


# -- tile maps ----------------------------------------------------------------------------------

def _extents(total: int, tile: int, n: int) -> np.ndarray | None:
    if n != -(-total // tile):
        return None
    out = np.full(n, tile, dtype=np.int64)
    if n:
        out[-1] = total - (n - 1) * tile
    return out


def tile_sizes(shape, tile, grid: tuple[int, ...]) -> np.ndarray:
    """Elements in each tile of a tile map of shape ``grid`` (the last tile along an axis may be
    partial).  ``tile`` applies to the last ``len(grid)`` axes of ``shape`` (with 1s before it
    when it is shorter than the grid), or to the flattened array when both are 1-D and the array
    is not; where neither fits, every tile counts as full."""
    tile = tuple(int(t) for t in tile)
    shape = tuple(int(s) for s in (shape or ()))
    size = math.prod(shape)
    full = np.full(grid, math.prod(tile), dtype=np.int64)
    if len(tile) > len(grid) or any(t <= 0 for t in tile):
        return full
    if len(grid) == 1 and len(tile) == 1 and len(shape) != 1 and \
            grid[0] == -(-size // tile[0]):
        shape = (size,)
    tile = (1,) * (len(grid) - len(tile)) + tile
    if len(shape) < len(grid):
        return full
    lead = math.prod(shape[:len(shape) - len(grid)])
    parts = [_extents(s, t, n) for s, t, n in zip(shape[len(shape) - len(grid):], tile, grid)]
    if any(p is None for p in parts):
        return full
    out = np.ones(grid, dtype=np.int64) * lead
    for axis, part in enumerate(parts):
        out = out * part.reshape([-1 if a == axis else 1 for a in range(len(grid))])
    return out


def _binned(a: np.ndarray, f0: int, f1: int) -> np.ndarray:
    rows, cols = a.shape
    r, c = -(-rows // f0), -(-cols // f1)
    padded = np.zeros((r * f0, c * f1), dtype=a.dtype)
    padded[:rows, :cols] = a
    return padded.reshape(r, f0, c, f1).sum(axis=(1, 3))


class Layout:
    """A tile map laid out in at most ``cells`` x ``cells`` squares: ``counts``/``sizes`` per
    square (mismatches, elements; sizes 0 where no tile is), ``step`` tiles per square along
    (rows, columns), the axes' titles, and how tile indices are read off a square."""

    def __init__(self, tile_map, shape, tile, cells: int = MAX_CELLS):
        counts = np.asarray(tile_map, dtype=np.int64)
        grid = counts.shape if counts.ndim else (1,)
        counts = counts.reshape(grid)
        sizes = tile_sizes(shape, tile, grid)
        self.grid, self.tile, self.wrapped = tuple(grid), tuple(int(t) for t in tile), 0
        self.tiles = int(counts.size)
        self.affected = int(np.count_nonzero(counts))
        if counts.ndim == 1:
            n = counts.shape[0]
            step = max(1, -(-n // (cells * cells)))
            c = _binned(counts.reshape(1, -1), 1, step)[0]
            s = _binned(sizes.reshape(1, -1), 1, step)[0]
            width = min(len(c), cells)
            rows = -(-len(c) // width)
            pad = rows * width - len(c)
            self.counts = np.concatenate([c, np.zeros(pad, np.int64)]).reshape(rows, width)
            self.sizes = np.concatenate([s, np.zeros(pad, np.int64)]).reshape(rows, width)
            self.step = (width * step, step) if rows > 1 else (1, step)
            self.wrapped = width * step if rows > 1 else 0
            self.titles = (f"first tile of the row ({width} squares a row)" if rows > 1 else "",
                           "tile" if rows == 1 else "tile, from the row's first")
            return
        if counts.ndim > 2:
            counts = counts.reshape(-1, grid[-1])
            sizes = sizes.reshape(-1, grid[-1])
        rows, cols = counts.shape
        self.rows = rows
        f0, f1 = max(1, -(-rows // cells)), max(1, -(-cols // cells))
        self.counts, self.sizes = _binned(counts, f0, f1), _binned(sizes, f0, f1)
        self.step = (f0, f1)
        lead = len(grid) - 1
        self.titles = (("tile row (axis 0)" if lead == 1 else
                        f"tile-grid axes 0–{lead - 1} flattened (C order)"),
                       f"tile column (axis {lead})")

    @property
    def downsampled(self) -> bool:
        return self.step[1] > 1 or (not self.wrapped and self.step[0] > 1)

    def fractions(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.minimum(self.counts / np.maximum(self.sizes, 1), 1.0)
            return np.where(self.sizes > 0, share, np.nan)

    def where(self, r: int, c: int) -> str:
        """The tiles one square stands for, in the map's own indices."""
        f0, f1 = self.step
        if len(self.grid) == 1:
            first = r * self.wrapped + c * f1 if self.wrapped else c * f1
            last = min(first + f1, self.grid[0]) - 1
            return f"tile {first}" if first == last else f"tiles {first}–{last}"
        rows = (r * f0, min((r + 1) * f0, self.rows) - 1)
        cols = (c * f1, min((c + 1) * f1, self.grid[-1]) - 1)

        def span(a, b):
            return str(a) if a == b else f"{a}–{b}"
        return (f"tile ({span(*rows)}, {span(*cols)})" if rows[0] == rows[1] and cols[0] == cols[1]
                else f"tiles ({span(*rows)}, {span(*cols)})")


def colour(fraction: float) -> str:
    """The fill of a tile in which ``fraction`` of the elements mismatch: grey at 0, then the
    ramp from light (a few) to dark (all), on a square-root scale so that one wrong element in
    256 still shows."""
    if not fraction > 0:
        return NEUTRAL
    t = min(1.0, math.sqrt(fraction)) * (len(RAMP) - 1)
    i = min(int(t), len(RAMP) - 2)
    a, b, w = RAMP[i], RAMP[i + 1], t - i
    return "#" + "".join(f"{round(x + (y - x) * w):02x}" for x, y in zip(a, b))


def _ticks(n: int, most: int = 6) -> list[int]:
    """The squares to label along an axis of ``n`` squares: the first, the last, a few between."""
    if n <= most:
        return list(range(n))
    every = -(-n // (most - 1))
    nice = next((k for k in (1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64) if k >= every), every)
    return sorted({*range(0, n, nice), n - 1})


def _axis_labels(n: int, step: int, total: int, at, width: float, label) -> list[str]:
    """Tile indices along an axis of ``n`` squares of ``step`` tiles (``total`` tiles): one
    tile a square, under the squares' middles; several, at the squares' edges (the last edge
    labelled ``total``, where the tiles end)."""
    if step == 1:
        return [label(at(k) + width / 2, k) for k in _ticks(n)]
    edges = _ticks(n + 1)
    return [label(at(k) - (0.5 if k == n else 0), min(k * step, total)) for k in edges]


def tile_svg(c, cells: int = MAX_CELLS, size: int = 420) -> str:
    """``c``'s tile map as an inline SVG: one square per tile (or per ``step`` tiles when the
    grid is larger than ``cells`` along an axis), its colour the fraction of mismatching
    elements, the axes in tile indices, a legend; a caption above with the tile shape."""
    lay = Layout(c.tile_map, c.shape, c.tile, cells)
    rows, cols = lay.counts.shape
    cell = max(4, min(24, size // max(cols, 1), size // max(rows, 1)))
    gap = 1 if cell >= 6 else 0
    left, top = 64, 8
    pw, ph = cols * cell, rows * cell
    legend_y = top + ph + 34
    width = max(left + pw + 12, left + 450)
    height = legend_y + 36
    frac = lay.fractions()
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" style="{markup.MONO}; font-size: 10px; display: block">',
             f'<title>{escape(c.name)}: mismatching elements per tile, {lay.affected:,} of '
             f'{lay.tiles:,} tiles affected</title>']
    zero, hot = [], []
    for r in range(rows):
        for k in range(cols):
            f = frac[r, k]
            if np.isnan(f):
                continue
            x, y = left + k * cell, top + r * cell
            rect = (f'<rect x="{x}" y="{y}" width="{cell - gap}" height="{cell - gap}"')
            if f > 0:
                tip = (f"{lay.where(r, k)}: {int(lay.counts[r, k]):,} of "
                       f"{int(lay.sizes[r, k]):,} elements mismatch ({100 * f:.3g} %)")
                hot.append(f'{rect} fill="{colour(f)}"><title>{escape(tip)}</title></rect>')
            else:
                zero.append(rect + "/>")
    parts.append(f'<g fill="{NEUTRAL}">{"".join(zero)}</g>')
    parts.append(f'<g stroke="currentColor" stroke-opacity="0.25" stroke-width="0.5">'
                 f'{"".join(hot)}</g>')
    f0, f1 = lay.step
    yt, xt = lay.titles
    text = 'fill="currentColor"'
    parts += _axis_labels(cols, f1, lay.grid[-1], lambda k: left + k * cell, cell - gap,
                          lambda x, label: f'<text x="{x:.1f}" y="{top + ph + 11}" '
                                           f'text-anchor="middle" {text}>{label}</text>')
    if yt:
        parts += _axis_labels(rows, f0, lay.rows if len(lay.grid) > 1 else rows * f0,
                              lambda r: top + r * cell, cell - gap,
                              lambda y, label: f'<text x="{left - 4}" y="{y + 3:.1f}" '
                                               f'text-anchor="end" {text}>{label}</text>')
    parts.append(f'<text x="{left + pw / 2:.0f}" y="{top + ph + 23}" text-anchor="middle" {text} '
                 f'fill-opacity="0.75">{escape(xt)}</text>')
    if yt:
        parts.append(f'<text transform="translate(12 {top + ph / 2:.0f}) rotate(-90)" '
                     f'text-anchor="middle" {text} fill-opacity="0.75">{escape(yt)}</text>')
    parts.append(legend(left, legend_y))
    parts.append("</svg>")
    return "".join(parts)


def legend(x: int, y: int) -> str:
    """Grey: no mismatch; then the ramp, labelled at 1 %, 10 %, 50 %, 100 % of the tile."""
    text = 'fill="currentColor"'
    out = [f'<rect x="{x}" y="{y}" width="10" height="10" fill="{NEUTRAL}"/>',
           f'<text x="{x + 14}" y="{y + 9}" {text}>none</text>']
    bx, bw, n = x + 52, 200, 40
    for i in range(n):
        f = ((i + 0.5) / n) ** 2
        out.append(f'<rect x="{bx + i * bw / n:.1f}" y="{y}" width="{bw / n + 0.3:.1f}" '
                   f'height="10" fill="{colour(f)}"/>')
    for f in LEGEND_STOPS:
        tx = bx + math.sqrt(f) * bw
        out.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{y + 10}" y2="{y + 13}" '
                   f'stroke="currentColor" stroke-opacity="0.6"/>')
        out.append(f'<text x="{tx:.1f}" y="{y + 22}" text-anchor="middle" {text}>'
                   f'{f * 100:.0f} %</text>')
    out.append(f'<text x="{bx + bw + 6}" y="{y + 9}" {text} fill-opacity="0.75">of the tile\'s '
               f'elements mismatch</text>')
    return "".join(out)


def map_caption(c, cells: int = MAX_CELLS) -> str:
    """``4 of 64 tiles have mismatches; tiles of 16 x 16 elements, a grid of 4 x 16 tiles``,
    and how many tiles a square stands for when the grid is downsampled."""
    lay = Layout(c.tile_map, c.shape, c.tile, cells)
    grid = " x ".join(str(n) for n in lay.grid)
    out = (f"{lay.affected:,} of {_n(lay.tiles, 'tile')} have mismatches; "
           f"{tile_text(c.tile)}, a grid of {grid} tiles")
    if lay.wrapped:
        out += f", drawn {lay.wrapped:,} tiles to a row"
    if lay.downsampled:
        f0, f1 = lay.step
        per = f"{f1:,}" if len(lay.grid) == 1 else f"{f0} x {f1}"
        out += f"; downsampled to at most {cells} x {cells} squares: each square is {per} tiles"
    return out


def _has_map(c) -> bool:
    return (not c.passed and c.tile_map is not None and c.tile is not None
            and np.asarray(c.tile_map).size > 0 and int(c.mismatches or 0) > 0)


def worst_tiles(c, n: int = 3) -> str:
    """``(3, 15): 16, (2, 15): 16, (1, 15): 9`` — the tiles with the most mismatches."""
    counts = np.asarray(c.tile_map)
    flat = counts.reshape(-1)
    order = np.argsort(-flat, kind="stable")[:n]
    out = []
    for i in order:
        if flat[i] <= 0:
            break
        where = np.unravel_index(int(i), counts.shape) if counts.ndim > 1 else (int(i),)
        pos = (str(int(where[0])) if len(where) == 1 else
               "(" + ", ".join(str(int(w)) for w in where) + ")")
        out.append(f"{pos}: {int(flat[i]):,}")
    return ", ".join(out)


# -- text and HTML ------------------------------------------------------------------------------

def text(v) -> str:
    """The verdict as plain text: the headline, the table, then the rule(s), the reasons, the
    tiles with the most mismatches, determinism, memory."""
    out = [headline(v)]
    out += text_table(TEXT_HEAD, [_row(c) for c in v.outputs], indent="  ")
    common, rules = _rules(v)
    if common:
        out.append(f"  rule: {common}")
    out += [f"  {name}: rule {rule}" for name, rule in rules]
    for c in v.outputs:
        if c.reason:
            out.append(f"  {c.name}: {c.reason}")
        if _has_map(c):
            out.append(f"  {c.name}: {map_caption(c)}; most in tiles {worst_tiles(c)} "
                       f"(verdict.map({c.name!r}) has the count per tile)")
    if _approximate(v):
        out.append(f"  {P99_NOTE}")
    if (line := determinism(v)) is not None:
        out.append(line)
    out.append(memory(v))
    return "\n".join(out)


def badge(c) -> str:
    """PASS (green), or FAIL (red) and the category's badge (its meaning in the tooltip)."""
    if c is None or c.passed:
        return f'<span style="{BADGE}; {PASS_BADGE}">PASS</span>'
    tip = escape(MEANINGS.get(c.category, str(c.category)), quote=True)
    return (f'<span style="{BADGE}; {FAIL_BADGE}">FAIL</span> '
            f'<span title="{tip}" style="{BADGE}; {CATEGORY_BADGE}">{escape(str(c.category))}'
            f'</span>')


def _nowrap(text: str) -> str:
    return f'<span style="{NOWRAP}">{text}</span>'


def _html_row(c) -> list[str]:
    """The cells of an output's row, each unbroken but the mismatches (which may break before
    the share) and the worst element (its index above its values)."""
    cells = [_nowrap(escape(x)) for x in _row(c)]
    cells[0] = f"<b>{cells[0]}</b>"
    cells[3] = _nowrap(badge(c))
    count, _, share = mismatches(c).partition(" (")
    cells[4] = _nowrap(escape(count)) + (" " + _nowrap(escape(f"({share}")) if share else "")
    if not c.passed and c.mismatches:
        cells[4] = f"<b>{cells[4]}</b>"
    if c.worst is not None:
        whole = integer(c.dtype)
        cells[9] = (_nowrap(escape(index(c.worst)) + ":") + "<br>" + _nowrap(
            f"{escape(value(c.worst_out, whole))} vs {escape(value(c.worst_ref, whole))}"))
    if specials(c) != "0/0/0":
        cells[10] = f"<b>{cells[10]}</b>"
    return [cells[0], f"{cells[1]} {cells[2]}", *cells[3:]]


def _under(c) -> str:
    """The line under an output's row: its reason (failing), the rule that decided."""
    reason = (f'<div style="{markup.WRAP}">{escape(c.reason)}</div>' if c.reason else "")
    rule = (f'<div style="{markup.DIM}; {markup.WRAP}">rule: {escape(c.rule)}</div>'
            if c.rule else "")
    return reason + rule


def table(v) -> str:
    """One row per output, and under it the output's reason and rule (a row across the table)."""
    cell = f"{markup.CELL}; background: transparent"
    line = "border-top: 1px solid rgba(127,127,127,0.3)"
    th = "".join(f'<th style="{cell}; {NOWRAP}; border-bottom: 1px solid rgba(127,127,127,0.5); '
                 f'vertical-align: bottom">{h}</th>' for h in HTML_HEAD)
    rows = []
    for i, c in enumerate(v.outputs):
        top = f"; {line}" if i else ""
        rows.append('<tr style="background: transparent">' + "".join(
            f'<td style="{cell}{top}; padding-top: 3px">{x}</td>' for x in _html_row(c)) + "</tr>")
        under = _under(c)
        if under:
            rows.append(f'<tr style="background: transparent"><td colspan="{len(HTML_HEAD)}" '
                        f'style="{cell}; padding-bottom: 4px; padding-left: 1.5em">{under}</td>'
                        f'</tr>')
    return (f'<div style="overflow-x: auto"><table style="{markup.TABLE}; margin: 0"><thead>'
            f'<tr>{th}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def html(v, cells: int = MAX_CELLS) -> str:
    """The verdict as static HTML: the headline with its badge, the table (each output's reason
    and rule under its row), determinism and memory, then a tile map per failing output that
    has one."""
    failing = _failing(v)
    head = (f'<div style="{markup.MONO}; margin: 2px 0 4px 0">'
            f'{badge(failing[0] if failing else None)} '
            f'<b>{escape(headline(v).split(" · ", 1)[1])}</b></div>')
    body = table(v)
    lines = []
    if _approximate(v):
        lines.append(markup.note(P99_NOTE))
    if (line := determinism(v)) is not None:
        lines.append(markup.note(line, "" if v.deterministic is not False else markup.WARN))
    lines.append(markup.note(memory(v)))
    maps = [f'<figure style="margin: 6px 16px 6px 0">'
            f'<figcaption style="{markup.MONO}; margin-bottom: 3px"><b>{escape(c.name)}</b>: '
            f'{escape(map_caption(c, cells))}</figcaption>{tile_svg(c, cells)}</figure>'
            for c in v.outputs if _has_map(c)]
    box = (f'<div style="display: flex; flex-wrap: wrap; align-items: flex-start">'
           f'{"".join(maps)}</div>' if maps else "")
    return f'<div class="cuda-magic cuda-magic-verify">{head}{body}{"".join(lines)}{box}</div>'


class VerdictView:
    """The view of a :class:`~cuda_magic.correctness.verdict.Verdict`: ``text()`` (terminal,
    ``show``) and ``_repr_html_()`` (notebooks).  ``max_cells``: squares along each axis of a
    tile map at most (a larger tile grid is drawn with several tiles per square)."""

    def __init__(self, verdict, *, max_cells: int = MAX_CELLS):
        if not isinstance(max_cells, int) or isinstance(max_cells, bool) or max_cells < 1:
            raise ShowError(f"max_cells={max_cells!r}: give a whole number of squares >= 1")
        self.verdict, self.max_cells = verdict, max_cells

    def text(self) -> str:
        return text(self.verdict)

    def html(self) -> str:
        return html(self.verdict, self.max_cells)

    def part(self, what: str = "summary", kernel: str | None = None, **_) -> str:
        """What ``show()`` prints: all of it, whatever the part."""
        return self.text()

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(printable(self.text()))

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        return self.text()
