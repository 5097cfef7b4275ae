"""How a :class:`~cuda_magic.correctness.verdict.Verdict` (``cuda_magic.verify``, ``k.verify``)
looks: a plain-text table (terminal, ``show``) and static HTML (notebooks, nbconvert).

One row per output: its dtype and shape, PASS or FAIL with the category, the mismatches, the
largest and the 99th-percentile ULP distance (``≈`` when the percentile comes from a histogram),
the largest absolute and relative error, the worst element (index: out vs ref), the NaN, Inf and
±0 placed differently, and the rule that decided.  Under the table, each failing output's reason;
a line on determinism when the kernel ran more than once; the peak extra memory of the check and
where it was taken.

Each failing output that has a tile map gets an inline SVG (:mod:`.tile_map`): one square per
tile of the output, coloured by the fraction of the tile's elements that mismatch, with a caption
stating the tile shape and, for a grid larger than ``max_cells`` (64) along an axis, how many
tiles a square stands for.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np

from ..errors import ShowError
from . import markup
from .frontend import Reprs
from .text import table as text_table
from .tile_map import MAX_CELLS, Layout, tile_svg

__all__ = ["VerdictView", "MEANINGS", "text", "html", "tile_svg", "MAX_CELLS"]


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
    on = f" · on {v.ran_on}" if getattr(v, "ran_on", "") else ""     # a remote GPU's launches
    return f"verify: {state} · {count} · max {ulp(max_ulp(v))} ULP{on}"


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
        if _floor(c):
            out.append(f"  {c.name}: {_floor(c)}")
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
    floor = f"; {_floor(c)}" if _floor(c) else ""
    rule = (f'<div style="{markup.DIM}; {markup.WRAP}">rule: {escape(c.rule + floor)}</div>'
            if c.rule else "")
    return reason + rule


def _floor(c) -> str:
    """How many elements only the default rule's floor passed ("" for none)."""
    note = getattr(c, "floor_note", None)
    return note() if callable(note) else ""


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


class VerdictView(Reprs):
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
