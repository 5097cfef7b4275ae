"""How a :class:`~cuda_magic.variants.tune.Tuning` looks: a header (candidates per status, the
pool, the time of each stage), the winner, a table of every candidate, a plot of their times
(inline SVG, no plotting library), the cell that reproduces the winner, and the notes.  When
every candidate failed the same way (one compile error, one launch error) the table gives way to
that error, shown once: the compiler's errors with the cell lines they point at, and its log.

Text (terminal, ``show``) and HTML (notebooks, nbconvert) read the same rows from here; in
HTML everything from users and compilers is escaped and styles are inline.  :func:`figure` is
the matplotlib form (``Tuning.plot()``).
"""

from __future__ import annotations

from html import escape

from ..compile.backends import CompileError
from ..variants.candidates import DEFAULT_BLOCK
from ..variants.space import c_text
from . import markup
from .frontend import Reprs
from .content import argv_short_text
from .text import table as text_table
from .timing import _axis, duration
from ..errors import NoMatplotlibError, PlotError, ShowError, clip

__all__ = ["TuneView", "PlotError", "header", "winner_line", "occupancy_note", "same_failure",
           "ordered", "columns", "text", "page", "svg", "figure", "grouping", "MAX_TEXT_ROWS",
           "MAX_LOG_LINES"]

MAX_TEXT_ROWS = 40         # rows the text table shows (HTML shows them all)
MAX_LOG_LINES = 40         # lines of a shared failure's compiler log the text shows
STATUSES = ("ok", "winner", "compiled", "pruned", "failed", "wrong", "fault", "timeout", "error")
GREEN, RED, BLUE = "#27ae60", "#c0392b", "#2980b9"
STATUS_STYLE = {"winner": f"color: {GREEN}; font-weight: bold", "wrong": markup.ERR,
                "fault": markup.ERR, "timeout": markup.WARN, "error": markup.WARN,
                "pruned": markup.DIM, "failed": markup.DIM}
DOT = {"winner": GREEN, "wrong": RED}


# -- rows ---------------------------------------------------------------------------------------

def _value(v) -> str:
    return "none" if v is None else c_text(v)


def _num(x: float) -> str:
    return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"


def _seconds(s: float) -> str:
    return duration(s * 1e3)


def counts(t) -> str:
    """``64 candidates: 40 ok, 1 winner, 12 pruned, 3 failed, 2 wrong, 1 fault``; ``12 candidates
    compiled`` (pruned, failed) when all have that status."""
    n = t.counts
    order = [s for s in STATUSES if s in n] + [s for s in n if s not in STATUSES]
    total = len(t.candidates)
    noun = f"{total} candidate{'s' * (total != 1)}"
    if len(order) == 1 and order[0] in ("compiled", "pruned", "failed"):
        return f"{noun} {order[0]}"
    return f"{noun}: {', '.join(f'{n[s]} {s}' for s in order) or 'none'}"


def header(t) -> str:
    """Counts per status (and, when the sweep stopped before the bench stage, why: ``12
    candidates compiled (compile-only: none benched)``) · the pool · the seconds of each stage."""
    parts = [counts(t)]
    if t.stopped and any(c.failure is None for c in t.candidates):
        parts[0] += f" ({t.stopped}: none benched)"
    if t.pool:
        parts.append(f"on {t.pool}")
    if t.seconds:
        parts.append(", ".join(f"{stage} {_seconds(s)}" for stage, s in t.seconds.items()))
    return " · ".join(parts)


def occupancy_note(t) -> str:
    """Which block size the occupancy column is at where neither ``--run`` nor the space gave
    one: ``occupancy at block 256 (no block in the space)``, ``occupancy at the kernel's
    __launch_bounds__ (128 threads)``; "" when every figure is at a launch's or the space's block."""
    bounds = sorted({c.occupancy_block for c in t.candidates if c.occupancy_from == "bounds"})
    default = any(c.occupancy_from == "default" for c in t.candidates)
    sizes = ", ".join(map(str, bounds[:4])) + (", ..." if len(bounds) > 4 else "")
    plain = f"block {DEFAULT_BLOCK} (no block in the space)"
    if bounds and default:
        return f"occupancy at __launch_bounds__ ({sizes}) where a kernel has one, else at {plain}"
    if bounds:
        return f"occupancy at the kernel's __launch_bounds__ ({sizes} threads)"
    return f"occupancy at {plain}" if default else ""


def same_failure(t):
    """The first candidate when every candidate failed the same way (one compile error, one
    launch error: :attr:`Candidate.failure`), else None."""
    keys = {c.failure for c in t.candidates}
    if len(keys) != 1 or None in keys:
        return None
    return t.candidates[0]


def _failure_lead(t, c) -> str:
    n = len(t.candidates)
    what = "failed to compile" if c.status == "failed" else \
        "timed out" if c.status == "timeout" else "failed"
    if n == 1:
        return f"#{c.index} {c.label} {what}:"
    every = "both candidates" if n == 2 else f"all {n} candidates"
    return f"{every} {what} the same way (#{c.index} {c.label} shown):"


def _log_lines(log: str, limit: int) -> list[str]:
    lines = log.strip("\n").split("\n") if log.strip() else ["(the compiler printed nothing)"]
    if len(lines) <= limit:
        return lines
    return lines[:limit] + [f"... {len(lines) - limit} more lines (t.candidates[0].log)"]


def _rate(c) -> list[str]:
    out = []
    if c.gbps:
        out.append(f"{_num(c.gbps)} GB/s")
    if c.tflops:
        out.append(f"{c.tflops:.3g} TFLOP/s")
    return out


def winner_line(t) -> str:
    """``winner: #3 BM=64 block=256 · 12.31 µs · 3,412 GB/s · GPU 0 (NVIDIA H200)``, or why
    there is none ("" when the sweep stopped before the bench stage: the header says so)."""
    w = t.winner
    if w is None:
        timed = [c for c in t.candidates if c.time_ms is not None or c.status in
                 ("wrong", "fault", "timeout", "error") and c.gpu]
        if not timed and t.stopped:
            return ""          # the header says why nothing was (to be) timed
        if not timed:
            return "no winner: nothing was timed"
        return f"no winner: none of the {len(timed)} candidates that ran gave right outputs"
    parts = [f"winner: #{w.index} {w.label}"]
    if w.time_ms is not None:
        parts.append(duration(w.time_ms))
    parts += _rate(w)
    if w.gpu:
        parts.append(w.gpu)
    if t.margin:
        parts.append(t.margin)
    return " · ".join(parts)


def ordered(t) -> list:
    """The candidates as the table lists them: the winner, the others timed (fastest first),
    then the rest by index."""
    def key(c):
        timed = c.time_ms is not None
        return (c.status != "winner", not timed, c.time_ms if timed else 0.0, c.index)
    return sorted(t.candidates, key=key)


def columns(t) -> list[tuple[str, str, object]]:
    """``[(name, kind, cell)]``: ``kind`` is a parameter's (template, macro, flag, launch) or
    ""; ``cell(candidate)`` gives the text of its cell.  Rates and GPU only when some
    candidate has them."""
    def param(name):
        return lambda c: _value(c.params.get(name))
    cols = [("#", "", lambda c: str(c.index))]
    cols += [(p.name, p.kind, param(p.name)) for p in t.parameters]
    cols += [("registers", "", lambda c: "-" if c.registers is None else str(c.registers)),
             ("spill bytes", "", lambda c: "-" if c.spill_bytes is None else str(c.spill_bytes)),
             ("occupancy", "", lambda c: "-" if c.occupancy is None else
              f"{100 * c.occupancy:.0f}%"),
             ("time", "", lambda c: "-" if c.time_ms is None else duration(c.time_ms))]
    cands = t.candidates
    if any(c.gbps for c in cands):
        cols.append(("GB/s", "", lambda c: _num(c.gbps) if c.gbps else "-"))
    if any(c.tflops for c in cands):
        cols.append(("TFLOP/s", "", lambda c: f"{c.tflops:.3g}" if c.tflops else "-"))
    if any(c.gpu for c in cands):
        cols.append(("GPU", "", lambda c: c.gpu or "-"))
    cols += [("status", "", lambda c: c.status), ("reason", "", lambda c: c.reason)]
    return cols


# -- text ---------------------------------------------------------------------------------------

def _lines(t) -> list[str]:
    """The header, the winner line and the occupancy note (those that say something)."""
    return [x for x in (header(t), winner_line(t), occupancy_note(t)) if x]


def _failure_text(t, c) -> list[str]:
    out = [_failure_lead(t, c), ""]
    if isinstance(c.error, CompileError):
        out += [str(c.error), f"argv: {argv_short_text(c.error.argv)}", "", "log:"]
        out += _log_lines(c.log, MAX_LOG_LINES)
    else:
        out += [str(c.error) if c.error is not None else c.reason]
    return out


def text(t, max_rows: int = MAX_TEXT_ROWS) -> str:
    """The whole view as plain text; the table shows at most ``max_rows`` candidates (none when
    every candidate failed the same way: that failure, once)."""
    out = _lines(t) + [""]
    failed = same_failure(t)
    if failed is not None:
        out += _failure_text(t, failed)
    else:
        cols = columns(t)
        rows = [[cell(c) for _, _, cell in cols] for c in ordered(t)]
        for r in rows:
            r[-1] = clip(r[-1], 100)
        kinds = [kind for _, kind, _ in cols]
        shown = rows[:max_rows]
        out += text_table([name for name, _, _ in cols], ([kinds] if any(kinds) else []) + shown)
        if len(rows) > len(shown):
            out.append(f"  ... {len(rows) - len(shown)} more (t.rows())")
    if t.cell is not None:
        out += ["", "Reproduce the winner:", t.cell.rstrip("\n")]
    if t.notes:
        out += [""] + [f"  {n}" for n in t.notes]
    return "\n".join(out)


# -- the plot -----------------------------------------------------------------------------------

def grouping(t, by: str | None = None) -> str | None:
    """The parameter the plot groups by: ``by``, else ``t.group``, else the first parameter with
    more than one value (None: one group)."""
    names = [p.name for p in t.parameters]
    by = by if by is not None else t.group
    if by is not None:
        if by not in names:
            raise PlotError(f"by={clip(repr(by), 80)} is not a parameter of the sweep; the "
                            f"parameters are {', '.join(names) or 'none'}")
        return by
    return next((p.name for p in t.parameters if len(p.values) > 1), None)


def groups(t, by: str | None) -> list[tuple[str, list]]:
    """``[(label, [timed candidates by index])]`` in the order of the parameter's values."""
    timed = sorted((c for c in t.candidates if c.time_ms is not None), key=lambda c: c.index)
    if by is None:
        return [("", timed)] if timed else []
    values = next(p.values for p in t.parameters if p.name == by)
    out = []
    for v in values:
        members = [c for c in timed if (type(c.params.get(by)), c.params.get(by)) == (type(v), v)]
        if members:
            out.append((f"{by}={_value(v)}", members))
    return out


def svg(t, by: str | None = None) -> str:
    """Each timed candidate's time as a dot, grouped along x by parameter ``by`` (see
    :func:`grouping`); the winner green and ringed, wrong outputs red.  "" when nothing was
    timed."""
    by = grouping(t, by)
    grouped = groups(t, by)
    if not grouped:
        return ""
    n = sum(len(m) for _, m in grouped)
    gap = 1.5                              # slots between groups
    slots = n + gap * (len(grouped) - 1)
    left, right, top, bottom = 64, 12, 10, 32
    pw = min(max(slots * 20, 280), 640)
    step = pw / slots
    width, height = int(left + pw + right), 180
    ph = height - top - bottom
    times = [c.time_ms for _, m in grouped for c in m]
    lo, hi = _axis(min(times), max(times))

    def y(v):
        return top + ph - (v - lo) / (hi - lo) * ph
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" style="{markup.MONO}; font-size: 10px">',
             f'<title>time per candidate{escape(f", grouped by {by}" if by else "")}</title>',
             f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}" stroke="currentColor" '
             f'stroke-opacity="0.4"/>']
    x0 = float(left)
    for gi, (name, members) in enumerate(grouped):
        if gi:
            sep = x0 - gap * step / 2
            parts.append(f'<line x1="{sep:.1f}" x2="{sep:.1f}" y1="{top}" y2="{top + ph}" '
                         f'stroke="currentColor" stroke-opacity="0.2" stroke-dasharray="2,3"/>')
        for i, c in enumerate(members):
            cx, cy = x0 + (i + 0.5) * step, y(c.time_ms)
            tip = escape(f"#{c.index} {c.label}: {duration(c.time_ms)} ({c.status})")
            if c.status == "winner":
                parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="none" '
                             f'stroke="{GREEN}" stroke-width="1.5"/>')
            parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{3.5 if c.status == "winner" else 2.5}" '
                         f'fill="{DOT.get(c.status, BLUE)}"><title>{tip}</title></circle>')
        w = len(members) * step
        if name:
            room = max(int(w / 6), 1)     # characters that fit under the group (~6 px each)
            shown = name if len(name) <= room or len(grouped) == 1 else name.split("=", 1)[1][:room]
            parts.append(f'<text x="{x0 + w / 2:.1f}" y="{top + ph + 12}" text-anchor="middle" '
                         f'fill="currentColor">{escape(shown)}<title>{escape(name)}</title></text>')
        x0 += w + gap * step
    for v in (min(times), max(times)):
        parts.append(f'<text x="{left - 4}" y="{y(v) + 3:.1f}" text-anchor="end" '
                     f'fill="currentColor">{escape(duration(v))}</text>')
    what = f"{n} timed candidate{'s' * (n != 1)}" + (f", grouped by {by}" if by else "")
    parts.append(f'<text x="{left + pw / 2:.0f}" y="{height - 4}" text-anchor="middle" '
                 f'fill="currentColor" fill-opacity="0.7">{escape(what)}</text>')
    parts.append("</svg>")
    return "".join(parts)


LEGEND = ("time: the sum of the medians of a candidate's launches; green (ringed): the winner; "
          "red: wrong outputs")


def figure(t, by: str | None = None):
    """A matplotlib Figure: each timed candidate's time, grouped along x by parameter ``by``
    (default: ``t.group``, else the first parameter with more than one value); the winner
    marked.  Needs matplotlib."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise NoMatplotlibError("Tuning.plot() needs matplotlib: pip install matplotlib") from None
    by = grouping(t, by)
    grouped = groups(t, by)
    if not grouped:
        raise PlotError("nothing was timed: the plot needs candidates that ran on a GPU "
                        "(this sweep was compile-only, had no GPU or no --run)")
    times = [c.time_ms for _, m in grouped for c in m]
    scale, unit = (1e3, "µs") if max(times) < 1 else (1.0, "ms")
    fig = Figure(figsize=(min(max(4.5, 2.5 + 0.12 * len(times)), 12), 3.2), layout="constrained")
    ax = fig.subplots()
    x0, ticks = 0.0, []
    points: dict[str, tuple[list, list]] = {}
    for name, members in grouped:
        for i, c in enumerate(members):
            kind = c.status if c.status in DOT else "ok"
            xs, ys = points.setdefault(kind, ([], []))
            xs.append(x0 + i)
            ys.append(c.time_ms * scale)
        ticks.append((x0 + (len(members) - 1) / 2, name))
        x0 += len(members) + 1.5
    labels = {"ok": "candidate", "winner": "winner", "wrong": "wrong outputs"}
    style = {"ok": dict(marker="o", s=14, color=BLUE), "winner": dict(marker="*", s=120, color=GREEN),
             "wrong": dict(marker="x", s=24, color=RED)}
    for kind in ("ok", "wrong", "winner"):
        if kind in points:
            ax.scatter(*points[kind], label=labels[kind], zorder=3, **style[kind])
    ax.set_xticks([x for x, _ in ticks], [name for _, name in ticks],
                  rotation=30 if len(ticks) > 8 else 0, fontsize=8)
    if by is None:
        ax.set_xticks([])
    ax.set_ylabel(f"time ({unit})")
    ax.set_title(f"time per candidate{f', grouped by {by}' if by else ''}", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


# -- HTML ---------------------------------------------------------------------------------------

SCROLL = "max-height: 36em; overflow: auto; margin: 4px 0"
REASON = "white-space: normal; min-width: 16em; max-width: 40em; overflow-wrap: anywhere"


def _table(t) -> str:
    cols = columns(t)
    head = "".join(
        f'<th style="{markup.CELL}; position: sticky; top: 0; background: var(--jp-layout-color1, '
        f'white); border-bottom: 1px solid rgba(127,127,127,0.5)">{escape(name)}'
        + (f'<br><span style="{markup.DIM}; font-weight: normal">{escape(kind)}</span>' if kind else "")
        + "</th>" for name, kind, _ in cols)
    body = []
    for c in ordered(t):
        style = STATUS_STYLE.get(c.status, "")
        cells = []
        for name, _, cell in cols:
            value = escape(cell(c))
            if name == "status" and style:
                value = f'<span style="{style}">{value}</span>'
            extra = f"; {REASON}" if name == "reason" else "; white-space: nowrap"
            cells.append(f'<td style="{markup.CELL}{extra}">{value}</td>')
        row_style = ' style="background: rgba(39,174,96,0.12)"' if c.status == "winner" else \
            f' style="{markup.DIM}"' if c.status in ("pruned", "failed") else ""
        body.append(f"<tr{row_style}>{''.join(cells)}</tr>")
    return (f'<div style="{SCROLL}"><table style="{markup.TABLE}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _failure_html(t, c) -> str:
    lead = markup.note(_failure_lead(t, c), markup.WARN)
    if isinstance(c.error, CompileError):
        return lead + markup.error(c.error)
    return lead + markup.pre(str(c.error) if c.error is not None else c.reason,
                             f"{markup.WRAP}; {markup.ERR}")


def page(t) -> str:
    """The whole view as static HTML: header, winner, table (every row, scrollable; or the one
    way every candidate failed), plot, the cell that reproduces the winner, notes."""
    w_style = f"color: {GREEN}; font-weight: bold" if t.winner else markup.WARN
    parts = [f'<div style="{markup.MONO}; margin: 2px 0"><b>{escape(header(t))}</b></div>']
    if winner_line(t):
        parts.append(markup.note(winner_line(t), w_style))
    if occupancy_note(t):
        parts.append(markup.note(occupancy_note(t)))
    failed = same_failure(t)
    parts.append(_failure_html(t, failed) if failed is not None else _table(t))
    plot = svg(t)
    if plot:
        parts.append(markup.section("Time per candidate", plot + markup.note(LEGEND)))
    if t.cell is not None:
        parts.append(markup.section("Reproduce the winner:", markup.pre(t.cell.rstrip("\n"))))
    parts += [markup.note(n) for n in t.notes]
    return f'<div class="cuda-magic cuda-magic-tune">{"".join(parts)}</div>'


# -- the view -----------------------------------------------------------------------------------

class TuneView(Reprs):
    """The view of a sweep (:class:`~cuda_magic.variants.tune.Tuning`): ``text()`` for
    terminals and ``show()``, ``html()`` for notebooks and nbconvert."""

    def __init__(self, tuning):
        self.tuning = tuning

    def text(self, max_rows: int = MAX_TEXT_ROWS) -> str:
        return text(self.tuning, max_rows)

    def html(self) -> str:
        return page(self.tuning)

    def figure(self, by: str | None = None):
        return figure(self.tuning, by)

    def part(self, what: str = "summary", kernel: str | None = None, **_) -> str:
        """What ``show(t)`` prints: the whole sweep (its rows as data: ``t.rows()``)."""
        if what != "summary" or kernel is not None:
            raise ShowError(f"a Tuning shows whole: show(t); its rows: t.rows(), the winner's "
                            f"cell: t.cell, its build: show(t.module, {what!r})")
        return self.text().rstrip("\n")

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        bundle = {"text/plain": self.text(), "text/html": self.html()}
        return {k: v for k, v in bundle.items()
                if (include is None or k in include) and (exclude is None or k not in exclude)}
