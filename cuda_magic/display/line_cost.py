"""The per-line cost as the views show it: the Source tab's heat map, the hottest lines in the
Resources tab, the ``show(m, "lines")`` table and ``cuda_magic.lines()`` as data.

The figures come from :mod:`cuda_magic.inspect.lines` (one nvdisasm run per build, made when
first asked for); every view says which binary they were read from.
"""

from __future__ import annotations

from html import escape

from ..inspect.lines import METRICS, KernelLines, LineCost
from . import markup
from .text import table as text_table

__all__ = ["text_table_of", "hottest_text", "heat_map", "hottest_html", "METRIC_LABELS"]

METRIC_LABELS = {"registers": "live registers", "spills": "spill instructions",
                 "instructions": "instructions"}
HEAD = ["line", "instr", "regs", "pred", "ureg", "spill st", "spill ld", "local B", "FTZ", "mem",
        "float", "int", "ctrl", "tensor", "notable", "source"]


def _cells(r: LineCost, sub: bool = False) -> list[str]:
    """One row of the text table; a line inlined at a cell line (``sub``) is marked ``↳`` and
    names its file and line in the source column."""
    where = "  ↳" if sub else r.where.replace("line ", "")
    text = (r.text or "").strip()
    source = f"{r.where}  {text}"[:100] if sub else text[:60]
    return [where, str(r.instructions), str(r.registers),
            str(r.predicates), str(r.uniform), str(r.spill_stores), str(r.spill_loads),
            str(r.local_bytes), str(r.ftz), *(str(r.count(c)) for c in
                                              ("memory", "float", "integer", "control", "tensor")),
            ", ".join(r.notable), source]


# What "live" means beside ptxas's registers figure (Resources), which is higher or equal.
LIVE_NOTE = ("live: registers holding a value at once; ptxas's 'registers' (Resources) is what it "
             "allocates per thread, reserved ones such as the stack pointer included")


def text_table_of(name: str, kl: KernelLines) -> str:
    """The per-line table of one kernel as text (``show(m, "lines")``): each cell line, the
    lines of other files inlined at it (``↳``) under it, counted in its row."""
    head = [f"{name}: peak {kl.peak} live registers; read from {kl.binary}", f"  ({LIVE_NOTE})"]
    cells = [c for r in kl.rows for c in [_cells(r)] + [_cells(s, True) for s in r.inlined]]
    return "\n".join(head + text_table(HEAD, cells))


def _n(count: int, what: str) -> str:
    return f"{count} {what}" + ("" if count == 1 else "s")


def _hot(r: LineCost) -> str:
    """``line 12: 168 live registers, 48 B spilled (12 spill instructions), 40 instructions``,
    plus ``(38 inlined)`` when other files' code was inlined at the line."""
    return (f"{r.where}: {_n(r.registers, 'live register')}" +
            (f", {r.spill_bytes} B spilled ({_n(r.spills, 'spill instruction')})" if r.spills
             else "") + f", {_n(r.instructions, 'instruction')}" +
            (f" ({r.inlined_instructions} inlined)" if r.inlined else ""))


def hottest_text(name: str, kl: KernelLines, n: int = 5) -> list[str]:
    return [f"{name}: hottest lines"] + [f"  {_hot(r)}" for r in kl.hottest(n)]


# -- HTML ---------------------------------------------------------------------------------------

HEAT = {"registers": (231, 76, 60), "spills": (211, 84, 0), "instructions": (41, 128, 185)}
LIGHT, DARK = 0.08, 0.63            # the background's alpha at the bottom and the top of the scale
# the gutter's figures: right-aligned, never wrapped, at the top of their row (an opened line
# has its SASS below, a wrapped one its rest)
GUTTER = "padding: 0 6px; text-align: right; vertical-align: top; opacity: 0.8; white-space: pre"
# the column between the figures and the code: "▸" where a click opens the line's SASS, the
# same width on every line, so that each line's own indentation lines up with its neighbours'
OPENER = ("width: 1.2em; padding: 0; text-align: center; vertical-align: top; opacity: 0.6; "
          "white-space: pre")
# a line of code: its spaces kept, wrapped (anywhere, if need be) where it is wider than the
# view, so that every character can be seen; the wrapped part stays in the code column
CODE = "white-space: pre-wrap; overflow-wrap: anywhere"
# the <summary> without its disclosure triangle (the opener column shows "▸" instead)
SUMMARY = f"display: block; list-style: none; {CODE}; cursor: pointer"
# the table's own box: as wide as the view (width 0, at least 100%: so its content does not
# widen the widget around it), scrolled sideways if something still is wider (an opened SASS)
SCROLL = "overflow-x: auto; width: 0; min-width: 100%"


def _value(r: LineCost, metric: str) -> int:
    return getattr(r, metric)


def scale(values) -> tuple[int, int]:
    """(low, high): the range of ``values`` (the lines with code) that the colours span."""
    values = list(values)
    return (min(values), max(values)) if values else (0, 0)


def shade(value: int, low: int, high: int) -> float:
    """The background's alpha for ``value`` on the scale ``low..high``: :data:`LIGHT` at ``low``,
    :data:`DARK` at ``high`` (every line the same: all :data:`DARK` when it is not zero)."""
    if high <= low:
        return DARK if high > 0 else LIGHT
    return LIGHT + (DARK - LIGHT) * (value - low) / (high - low)


def legend(metric: str, low: int, high: int) -> str:
    """What the colours mean: ``live registers, lightest 13 … darkest 22 (the range over the
    lines with code)``, or ``spill instructions: 0 on every line with code``."""
    label = METRIC_LABELS[metric]
    if high <= low:
        return f"{label}: {high} on every line with code"
    return f"{label}, lightest {low} … darkest {high} (the range over the lines with code)"


def _hanging(line: str) -> str:
    """Where a wrapped line goes on: four columns right of its own indentation (the first
    part stays where it is written)."""
    lead = line[:len(line) - len(line.lstrip(" \t"))]
    indent = len(lead) + 3 * lead.count("\t")          # a tab as four columns
    return f"padding-left: {indent + 4}ch; text-indent: -{indent + 4}ch"


def heat_map(source: str, kl: KernelLines, metric: str = "registers") -> str:
    """The cell's source, each line coloured by ``metric`` (live registers, spills or
    instructions) with the figures in a gutter; a line that made code opens to its SASS.

    The colours span the values the lines with code have (lightest at the least, darkest at
    the most; the header says which), not 0 to the peak: in a kernel at its register limit
    every loop line is near the peak, and 0..peak painted them all alike.  Every line has the
    same columns (line, regs, spills, instr, opener, code), so indentation lines up; a line
    wider than the view wraps within the code column (its spaces kept)."""
    if metric not in METRICS:
        raise ValueError(f"metric={metric!r}: choose one of {', '.join(METRICS)}")
    rows = {r.line: r for r in kl.rows if r.file == "cell.cu" and r.line is not None}
    low, high = scale(_value(r, metric) for r in rows.values())
    red, green, blue = HEAT[metric]
    gutter = GUTTER
    out = []
    for n, line in enumerate(source.split("\n"), 1):
        r = rows.get(n)
        code = escape(line) or "&nbsp;"
        wrap = _hanging(line)
        if r is None:
            out.append(f'<tr><td style="{gutter}">{n}</td><td></td><td></td><td></td>'
                       f'<td style="{OPENER}"></td><td><div style="{CODE}; {wrap}">{code}</div>'
                       f'</td></tr>')
            continue
        alpha = shade(_value(r, metric), low, high)
        bg = f"background: rgba({red},{green},{blue},{alpha:.2f})"
        tip = escape(_hot(r) + (f"; notable: {', '.join(r.notable)}" if r.notable else ""),
                     quote=True)
        sass = _inlined_html(r) + markup.pre("\n".join(r.sass))
        if r.inlined:
            code += (f'<span style="{markup.DIM}">    ← {_n(len(r.inlined), "inlined line")} '
                     f'({escape(_families(r))})</span>')
        spill = f"{r.spills}" if r.spills else ""
        out.append(f'<tr style="{bg}" title="{tip}"><td style="{gutter}">{n}</td>'
                   f'<td style="{gutter}">{r.registers}</td><td style="{gutter}">{spill}</td>'
                   f'<td style="{gutter}">{r.instructions}</td><td style="{OPENER}">▸</td>'
                   f'<td><details><summary style="{SUMMARY}; {wrap}">{code}'
                   f'</summary>{sass}</details></td></tr>')
    others = [r for r in kl.rows if r.file != "cell.cu" or r.line is None]
    tail = "".join(markup.note(_hot(r)) for r in others)
    head = (f'<tr style="opacity: 0.7"><th style="{gutter}">line</th><th style="{gutter}">regs'
            f'</th><th style="{gutter}">spills</th><th style="{gutter}">instr</th><th></th>'
            f'<th style="text-align: left">source (colour: '
            f'{escape(legend(metric, low, high))}; ▸ click a line for its SASS)</th></tr>')
    lead = markup.note(f"{kl.kernel}: peak {kl.peak} live registers; read from {kl.binary}")
    return (lead + f'<div style="{SCROLL}">'
            f'<table style="border-collapse: collapse; {markup.MONO}; line-height: 1.35">'
            f"{head}{''.join(out)}</table></div>" + tail)


def _families(r: LineCost) -> str:
    """The files the inlined lines come from, shortest form: ``<cccl>/cub, <cccl>/cuda``."""
    seen = []
    for s in r.inlined:
        top = "/".join(s.file.split("/")[:2]) if s.file.startswith("<") else s.file
        if top not in seen:
            seen.append(top)
    return ", ".join(seen)


def _inlined_html(r: LineCost) -> str:
    """The lines of other files inlined at ``r``, one row each, most instructions first."""
    if not r.inlined:
        return ""
    td = "padding: 0 6px; white-space: pre"
    rows = "".join(f'<tr title="{escape(_hot(s), quote=True)}"><td style="{td}">{escape(s.where)}'
                   f'</td><td style="{td}; text-align: right">{_n(s.instructions, "instruction")}'
                   f'</td><td style="{td}; text-align: right">{s.registers} regs</td>'
                   f'<td style="{td}; {markup.DIM}">{escape((s.text or "").strip()[:80])}</td></tr>'
                   for s in r.inlined)
    return (f'<div style="{markup.DIM}">{r.inlined_instructions} of its '
            f'{_n(r.instructions, "instruction")} inlined from:</div>'
            f'<table style="border-collapse: collapse">{rows}</table>')


def unavailable(exc: Exception, name: str | None = None) -> str:
    """Why a view has no per-line cost (no nvdisasm, no cubin), as a warning note."""
    return markup.note(f"{name + ': ' if name else ''}per-line cost unavailable: "
                     f"{type(exc).__name__}: {exc}", markup.WARN)


def hottest_html(name: str, kl: KernelLines, n: int = 5) -> str:
    hot = kl.hottest(n)
    items = "".join(f"<li>{escape(_hot(r))}" + (f" <i>{escape((r.text or '').strip()[:80])}</i>"
                                                if r.text else "") + "</li>" for r in hot)
    return (f'<div style="{markup.MONO}"><b>{escape(name)}</b>: peak {kl.peak} live registers '
            f'<span style="{markup.DIM}">({escape(kl.binary)})</span><ol style="margin: 2px 0">'
            f'{items}</ol><span style="{markup.DIM}">{escape(LIVE_NOTE)}</span></div>')


def rows(kl: KernelLines):
    """``cuda_magic.lines()``'s answer: a pandas DataFrame when pandas is installed, else a
    list of dicts (one per line)."""
    data = [r.row() for r in kl.rows]
    try:
        import pandas
    except ImportError:
        return data
    return pandas.DataFrame(data)
