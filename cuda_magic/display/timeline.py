"""How a :class:`~cuda_magic.runtime.measure.timeline.Timeline` (``k.timeline[grid, block](*args)``)
looks: a header line (kernel, grid, block, events, lost in red, ``%globaltimer``'s resolution,
who records), the Gantt chart (:mod:`.gantt`: rows SMs or the warps of chosen blocks, one
colour per range name, marks as ticks, hover on every shape), a legend, the summary per name
(count, median, p90, share of the warps' time, role) and the instrumented build's argv, folded.

Three forms, as for every result: the widget (a rows switch, a blocks selector and a time-range
slider that redraws the chart), static HTML (the chart of every SM, no script: nbconvert and a
saved notebook show it offline) and text (terminal IPython, ``show``: the header and the
summary).  Names come from the user's source: every one is escaped.
"""

from __future__ import annotations

from html import escape

import numpy as np

from ..errors import ShowError, quote
from . import frontend, markup
from .frontend import WidgetReprs
from .gantt import MAX_RECTS, Arrays, block_text, chart, colour, ns
from .text import table as text_table

__all__ = ["TimelineView", "header", "header_html", "summary_rows", "summary_html", "legend",
           "text", "html", "timeline_widget", "MAX_BLOCK_OPTIONS"]

MAX_BLOCK_OPTIONS = 512     # blocks the selector offers (the first to start)
SWATCH = "display: inline-block; vertical-align: middle; margin-right: 4px"
CELL = f"{markup.CELL}; white-space: nowrap"
ROOT = "line-height: 1.35"     # a widget's HTML pane has the line height of a button otherwise


# -- header -------------------------------------------------------------------------------------

def launch(t) -> str:
    return f"{t.kernel}[grid={tuple(t.grid)}, block={tuple(t.block)}]"


def _resolution(t) -> str:
    return (f"%globaltimer resolution {t.resolution_ns} ns" if t.resolution_ns
            else "%globaltimer resolution unknown")


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}{'s' * (count != 1)}"


def header(a: Arrays) -> list[tuple[str, str]]:
    """The header's parts, each (text, level): level "lost" for a count of lost events > 0."""
    t = a.timeline
    marks = int(a.mark.sum())
    warps = len(np.unique(a.track))
    return [(launch(t), "bold"),
            (f"{_n(len(t.events), 'event')} ({_n(len(t.events) - marks, 'range')}, "
             f"{_n(marks, 'mark')}) from {_n(warps, 'warp')}", ""),
            (f"{t.lost:,} lost", "lost" if t.lost else ""),
            (f"{ns(t.duration)} first to last event", ""),
            (_resolution(t), ""),
            (f"recorded by {t.recorder}", ""),
            (f"capacity {t.capacity:,} events per warp", "")]


def header_html(a: Arrays) -> str:
    style = {"bold": "font-weight: bold", "lost": markup.ERR, "": ""}
    parts = [f'<span style="{style[level]}">{escape(part)}</span>' for part, level in header(a)]
    return f'<div style="{markup.MONO}; margin: 2px 0">{" · ".join(parts)}</div>'


# -- summary ------------------------------------------------------------------------------------

def _share(x) -> str:
    return "" if x is None else f"{x:.1%}"


def _time(x) -> str:
    return "" if x is None else ns(x)


def summary_rows(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """(the head, the cells as text) of ``Timeline.summary()``'s ``rows``: per name its kind,
    role, count, open (when any range is), median, p90 and share; a mark its count only."""
    opened = any(r.get("open") for r in rows)
    head = ["name", "kind", "role", "count"] + (["open"] if opened else []) + \
        ["median", "p90", "share"]
    cells = []
    for r in rows:
        kind = r.get("kind", "range")
        c = [r["name"], kind, r.get("role") or "", f"{r['count']:,}"]
        if opened:
            c.append(f"{r.get('open') or 0:,}" if kind == "range" else "")
        c += [_time(r.get("median_ns")), _time(r.get("p90_ns")), _share(r.get("share"))]
        cells.append(c)
    return head, cells


SHARE_NOTE = ("share: the range's total time over the warps' time (the span first to last event "
              "x the warps that recorded); nested ranges count in each")


def text(a: Arrays, rows: list[dict]) -> str:
    """The header and the summary (``rows``: ``Timeline.summary()``), the notes, the argv."""
    t = a.timeline
    parts = header(a)
    lines = [f"timeline of {parts[0][0]}: " + ", ".join(p for p, _ in parts[1:4]),
             "  " + "; ".join(p for p, _ in parts[4:])]
    head, cells = summary_rows(rows)
    if rows:
        lines += text_table(head, cells)
        lines.append(f"  {SHARE_NOTE}")
    else:
        lines.append("  no ranges or marks recorded")
    lines += [f"  {'! ' if 'lost' in n else ''}{n}" for n in t.notes]
    if t.argv:
        from .content import argv_short_text
        lines.append(f"  instrumented build: {argv_short_text(t.argv)}")
    return "\n".join(lines)


def _swatch(i: int, kind: str, opened: bool = False) -> str:
    c = colour(i)
    if kind == "mark":           # as the chart draws it: a tick, a triangle on top
        return (f'<svg width="8" height="12" style="{SWATCH}"><path d="M4,1 V12 M1,1 h6 l-3,4 z" '
                f'stroke="{c}" fill="{c}" stroke-width="1.5" stroke-linejoin="round"/></svg>')
    extra = f"; opacity: 0.5; outline: 1px dashed {c}" if opened else ""
    return f'<span style="{SWATCH}; width: 12px; height: 10px; background: {c}{extra}"></span>'


def summary_html(a: Arrays, rows: list[dict]) -> str:
    head, cells = summary_rows(rows)
    if not rows:
        return markup.note("no ranges or marks recorded")
    index = {n: i for i, n in enumerate(a.names)}
    body = []
    for r, c in zip(rows, cells):
        out = [escape(x) for x in c]
        out[0] = _swatch(index[r["name"]], c[1]) + out[0]
        share = r.get("share")
        if share:
            bar = min(share, 1) * 60
            out[-1] = (f'<span style="{SWATCH}; width: {bar:.0f}px; height: 8px; '
                       f'background: {colour(index[r["name"]])}"></span>{out[-1]}')
        body.append(out)
    th = "".join(f'<th style="{CELL}; border-bottom: 1px solid rgba(127,127,127,0.5)">'
                 f'{escape(h)}</th>' for h in head)
    trs = "".join("<tr>" + "".join(f'<td style="{CELL}">{c}</td>' for c in r) + "</tr>"
                  for r in body)
    return (f'<div style="overflow-x: auto; max-width: 100%; contain: inline-size; '
            f'margin: 4px 0"><table style='
            f'"{markup.TABLE}"><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table></div>'
            + markup.note(SHARE_NOTE))


def legend(a: Arrays) -> str:
    """A swatch per name (a tick for a name only marks have), and how an open range looks."""
    ranged = set(a.name[~a.mark].tolist())
    items = [f'<span style="margin-right: 14px; white-space: nowrap">'
             f'{_swatch(i, "range" if i in ranged else "mark")}{escape(name)}</span>'
             for i, name in enumerate(a.names)]
    if a.open.any():
        items.append(f'<span style="margin-right: 14px; white-space: nowrap; {markup.DIM}">'
                     f'{_swatch(0, "range", True)}open: no END (kernel ended or buffer full)'
                     f'</span>')
    return (f'<div style="{markup.MONO}; margin: 4px 0; display: flex; flex-wrap: wrap; '
            f'row-gap: 2px">{"".join(items)}</div>')


def _argv(t) -> str:
    if not t.argv:
        return ""
    return (f'<details style="margin: 4px 0"><summary style="{markup.MONO}; cursor: pointer">'
            f'instrumented build (argv)</summary>{markup.argv_html(t.argv)}</details>')


def _notes(t) -> str:
    return "".join(markup.note(n, markup.WARN if "lost" in n else markup.DIM) for n in t.notes)


def html(a: Arrays, rows: list[dict], chart_html: str) -> str:
    """The static page: header, notes, legend, ``chart_html``, the summary (``rows``), the
    argv (folded)."""
    t = a.timeline
    return (f'<div class="cuda-magic cuda-magic-timeline" style="{ROOT}">{header_html(a)}'
            f'{_notes(t)}{legend(a)}{chart_html}{summary_html(a, rows)}{_argv(t)}</div>')


# -- the view ------------------------------------------------------------------------------------

def _blocks(value, t) -> list[int]:
    """``blocks=`` as linear block indices: ints, or (x, y, z) tuples inside the grid."""
    gx, gy, gz = t.grid
    if isinstance(value, (int, tuple)) and not isinstance(value, bool):
        value = [value]
    try:
        items = list(value)
    except TypeError:
        items = None
    out = []
    for b in items or []:
        if isinstance(b, int) and not isinstance(b, bool) and 0 <= b < gx * gy * gz:
            out.append(b)
        elif isinstance(b, tuple) and len(b) == 3 and all(
                isinstance(v, int) and not isinstance(v, bool) and 0 <= v < n
                for v, n in zip(b, t.grid)):
            out.append(b[0] + gx * (b[1] + gy * b[2]))
        else:
            items = None
            break
    if not items:
        raise ShowError(f"blocks={quote(value, 80)}: give blocks of the grid {tuple(t.grid)}, "
                        f"as linear indices (0 to {gx * gy * gz - 1}) or (x, y, z) tuples")
    return list(dict.fromkeys(out))


def _window(value, t):
    if value is None:
        return None
    try:
        t0, t1 = (float(v) for v in value)
        ok = 0 <= t0 < t1
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ShowError(f"window={quote(value, 80)}: give (start, end) in ns since the first "
                        f"event, 0 <= start < end (the kernel spans 0 to {t.duration})")
    return int(t0), int(t1)


class TimelineView(WidgetReprs):
    """The view of a :class:`~cuda_magic.runtime.measure.timeline.Timeline`.  ``rows``: ``"sm"`` (each
    SM, its lanes the warps resident at once) or ``"warps"`` (each warp of ``blocks``: linear
    indices or (x, y, z); by default the first block to start); ``window``: ``(start, end)`` in
    ns; ``max_rects``: shapes the chart draws at most (ranges closer than a pixel join)."""

    def __init__(self, timeline, *, rows: str = "sm", blocks=None, window=None,
                 max_rects: int = MAX_RECTS):
        if rows not in ("sm", "warps"):
            raise ShowError(f"rows={quote(rows, 40)}: choose 'sm' (a row per SM) or 'warps' "
                            f"(a row per warp of the chosen blocks)")
        if not isinstance(max_rects, int) or isinstance(max_rects, bool) or max_rects < 100:
            raise ShowError(f"max_rects={quote(max_rects, 40)}: give a whole number >= 100")
        self.timeline, self.rows, self.max_rects = timeline, rows, max_rects
        self._blocks = None if blocks is None else _blocks(blocks, timeline)
        self.window = _window(window, timeline)
        self._arrays = self._summary = self._chart = None

    @property
    def summary(self) -> list[dict]:
        """``Timeline.summary()``, read once."""
        if self._summary is None:
            self._summary = self.timeline.summary()
        return self._summary

    @property
    def arrays(self) -> Arrays:
        if self._arrays is None:
            self._arrays = Arrays(self.timeline)
        return self._arrays

    @property
    def blocks(self) -> list[int]:
        if self._blocks is None:
            self._blocks = self.arrays.blocks()[:1]
        return self._blocks

    @blocks.setter
    def blocks(self, value) -> None:
        self._blocks = _blocks(value, self.timeline)

    def chart(self, window=None):
        """The :class:`~.gantt.Chart` of the view's rows in ``window`` (else the view's)."""
        window = _window(window, self.timeline) if window is not None else self.window
        blocks = tuple(self.blocks) if self.rows == "warps" else ()
        key = (self.rows, blocks, window, self.max_rects)
        if self._chart is None or self._chart[0] != key:     # the widget and the page share it
            self._chart = key, chart(self.arrays, self.rows, blocks, window,
                                     max_rects=self.max_rects)
        return self._chart[1]

    def text(self) -> str:
        return text(self.arrays, self.summary)

    def html(self) -> str:
        return html(self.arrays, self.summary, self.chart().html())

    def widget(self):
        return timeline_widget(self)


# -- the widget ----------------------------------------------------------------------------------

def _slider_format(us: float) -> tuple[float, str]:
    """(the slider's step in µs, its readout format) for a kernel of ``us`` µs."""
    step = max(us / 2000, 0.001)
    return step, ".3f" if us < 100 else ".1f" if us < 10_000 else ",.0f"


def timeline_widget(view):
    """The widget of a :class:`TimelineView`: the header, a rows switch (SMs, warps of blocks),
    the blocks selector (warps only), a time-range slider in µs and a button back to the whole
    kernel, the legend, the chart (redrawn on each change), the summary, the argv folded."""
    import ipywidgets as widgets

    t, a = view.timeline, view.arrays
    # a flex row: the "rows" label beside the buttons, not above them
    mode = widgets.ToggleButtons(options=[("SMs", "sm"), ("warps of blocks", "warps")],
                                 value=view.rows, description="rows",
                                 style={"button_width": "auto"},
                                 layout=widgets.Layout(display="flex", flex_flow="row nowrap",
                                                       align_items="center"))
    ids, at = np.unique(a.block, return_index=True)
    order = np.argsort(at, kind="stable")          # the blocks in the order they started
    gx, gy = t.grid[0], t.grid[1]
    options = [(f"block {block_text((b % gx, b // gx % gy, b // (gx * gy)), t.grid)} (SM {sm})",
                b) for b, sm in zip(ids[order][:MAX_BLOCK_OPTIONS].tolist(),
                                    a.sm[at[order][:MAX_BLOCK_OPTIONS]].tolist())]
    picked = [b for b in view.blocks if b in {v for _, v in options}] or \
        ([options[0][1]] if options else [])
    blocks = widgets.SelectMultiple(options=options, value=picked, rows=4, description="blocks")
    if view.rows != "warps":
        blocks.layout.display = "none"
    us = max(a.duration, 1) / 1e3
    step, fmt = _slider_format(us)
    lo, hi = view.window or (0, a.duration)
    zoom = widgets.FloatRangeSlider(min=0.0, max=us, step=step,
                                    value=(lo / 1e3, min(hi, a.duration) / 1e3),
                                    description="time µs", continuous_update=False,
                                    readout_format=fmt, layout=widgets.Layout(width="60%"))
    whole = widgets.Button(description="whole kernel", layout=widgets.Layout(width="auto"))
    more = "" if len(ids) <= MAX_BLOCK_OPTIONS else \
        markup.note(f"the selector offers the first {MAX_BLOCK_OPTIONS} of {len(ids):,} blocks "
                    f"to start; TimelineView(t, rows='warps', blocks=[...]) shows any")
    wide = widgets.Layout(width="100%", margin="0")     # the chart and tables scroll inside it
    drawn = widgets.HTML(layout=wide)

    def redraw(_=None):
        view.rows = mode.value
        blocks.layout.display = "" if mode.value == "warps" else "none"
        if blocks.value:
            view.blocks = list(blocks.value)
        t0, t1 = (round(v * 1e3) for v in zoom.value)
        view.window = None if (t0, t1) == (0, round(us * 1e3)) else (t0, max(t1, t0 + 1))
        try:
            drawn.value = view.chart().html() + (more if mode.value == "warps" else "")
        except Exception as exc:           # say it in the pane; the rest stays usable
            drawn.value = markup.note(f"{type(exc).__name__}: {exc}", markup.ERR)

    def reset(_=None):
        zoom.value = (0.0, us)
    for w in (mode, blocks, zoom):
        w.observe(redraw, names="value")
    whole.on_click(reset)
    redraw()
    def pane(body: str):
        return widgets.HTML(f'<div style="{ROOT}">{body}</div>', layout=wide)
    box = widgets.VBox([pane(header_html(a) + _notes(t)), widgets.HBox([mode, blocks]),
                        widgets.HBox([zoom, whole]), pane(legend(a)), drawn,
                        pane(summary_html(a, view.summary) + _argv(t))])
    box.view, box.mode, box.blocks, box.zoom, box.whole, box.chart = \
        view, mode, blocks, zoom, whole, drawn
    frontend.shown(box, t)
    return box
