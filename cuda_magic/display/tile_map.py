"""A tile map drawn as an inline SVG: one square per tile of an output, coloured by the fraction
of the tile's elements that mismatch (grey: none; light to dark: a few to all, on a square-root
scale), its axes the tile grid's, with a legend.  A grid larger than ``cells`` (64) along an axis
is drawn with several tiles per square (:class:`Layout` says how many).  No JavaScript; colours
that read on light and dark themes (text in ``currentColor``).  What :mod:`.verdict` shows under a
failing output."""

from __future__ import annotations

import math
from html import escape

import numpy as np

from . import markup

__all__ = ["MAX_CELLS", "NEUTRAL", "Layout", "colour", "legend", "tile_sizes", "tile_svg"]

MAX_CELLS = 64             # squares along each axis of a drawn tile map, at most

# grey for a tile with no mismatch, then light to dark as more of it mismatches
NEUTRAL = "rgba(127,127,127,0.22)"
RAMP = ((254, 224, 139), (253, 174, 97), (244, 109, 67), (215, 48, 39), (140, 10, 40))
LEGEND_STOPS = (0.01, 0.1, 0.5, 1.0)


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
