"""The per-line cost as the views show it: the Source tab's heat map, the hottest lines in the
Resources tab, the ``show(m, "lines")`` table and ``cuda_magic.lines()`` as data.

The figures come from :mod:`cuda_magic.inspect.lines` (one nvdisasm run per build, made when
first asked for); every view says which binary they were read from.
"""

from __future__ import annotations

from html import escape

from ..inspect.lines import METRICS, KernelLines, LineCost
from . import html
from .text import table as text_table

__all__ = ["text_table_of", "hottest_text", "heat_map", "hottest_html", "METRIC_LABELS"]

METRIC_LABELS = {"registers": "live registers", "spills": "spill instructions",
                 "instructions": "instructions"}
HEAD = ["line", "instr", "regs", "pred", "ureg", "spill st", "spill ld", "local B", "FTZ", "mem",
        "float", "int", "ctrl", "tensor", "notable", "source"]


def _cells(r: LineCost) -> list[str]:
    return [r.where.replace("line ", ""), str(r.instructions), str(r.registers),
            str(r.predicates), str(r.uniform), str(r.spill_stores), str(r.spill_loads),
            str(r.local_bytes), str(r.ftz), *(str(r.count(c)) for c in
                                              ("memory", "float", "integer", "control", "tensor")),
            ", ".join(r.notable), (r.text or "").strip()[:60]]


def text_table_of(name: str, kl: KernelLines) -> str:
    """The per-line table of one kernel as text (``show(m, "lines")``)."""
    head = [f"{name}: peak {kl.peak} live registers; read from {kl.binary}"]
    return "\n".join(head + text_table(HEAD, [_cells(r) for r in kl.rows]))


def _n(count: int, what: str) -> str:
    return f"{count} {what}" + ("" if count == 1 else "s")


def _hot(r: LineCost) -> str:
    """``line 12: 168 live registers, 48 B spilled (12 spill instructions), 40 instructions``."""
    return (f"{r.where}: {_n(r.registers, 'live register')}" +
            (f", {r.spill_bytes} B spilled ({_n(r.spills, 'spill instruction')})" if r.spills
             else "") + f", {_n(r.instructions, 'instruction')}")


def hottest_text(name: str, kl: KernelLines, n: int = 5) -> list[str]:
    return [f"{name}: hottest lines"] + [f"  {_hot(r)}" for r in kl.hottest(n)]


# -- HTML ---------------------------------------------------------------------------------------

HEAT = {"registers": (231, 76, 60), "spills": (211, 84, 0), "instructions": (41, 128, 185)}


def _value(r: LineCost, metric: str) -> int:
    return getattr(r, metric)


def heat_map(source: str, kl: KernelLines, metric: str = "registers") -> str:
    """The cell's source, each line coloured by ``metric`` (live registers, spills or
    instructions) with the figures in a gutter; a line that made code opens to its SASS."""
    if metric not in METRICS:
        raise ValueError(f"metric={metric!r}: choose one of {', '.join(METRICS)}")
    rows = {r.line: r for r in kl.rows if r.file == "cell.cu" and r.line is not None}
    top = max((_value(r, metric) for r in rows.values()), default=0) or 1
    red, green, blue = HEAT[metric]
    gutter = "padding: 0 6px; text-align: right; opacity: 0.8; white-space: pre"
    out = []
    for n, line in enumerate(source.split("\n"), 1):
        r = rows.get(n)
        code = escape(line) or "&nbsp;"
        if r is None:
            out.append(f'<tr><td style="{gutter}">{n}</td><td></td><td></td><td></td>'
                       f'<td style="white-space: pre">{code}</td></tr>')
            continue
        alpha = 0.08 + 0.55 * _value(r, metric) / top
        bg = f"background: rgba({red},{green},{blue},{alpha:.2f})"
        tip = escape(_hot(r) + (f"; notable: {', '.join(r.notable)}" if r.notable else ""),
                     quote=True)
        sass = html.pre("\n".join(r.sass))
        spill = f"{r.spills}" if r.spills else ""
        out.append(f'<tr style="{bg}" title="{tip}"><td style="{gutter}">{n}</td>'
                   f'<td style="{gutter}">{r.registers}</td><td style="{gutter}">{spill}</td>'
                   f'<td style="{gutter}">{r.instructions}</td>'
                   f'<td><details><summary style="white-space: pre; cursor: pointer">{code}'
                   f'</summary>{sass}</details></td></tr>')
    others = [r for r in kl.rows if r.file != "cell.cu" or r.line is None]
    tail = "".join(html.note(f"{r.where if r.line is not None else '(no line)'}"
                             f"{'' if r.file == 'cell.cu' else ' (' + r.file + ')'}: "
                             f"{r.instructions} instructions, {r.registers} live registers")
                   for r in others)
    head = (f'<tr style="opacity: 0.7"><th style="{gutter}">line</th><th style="{gutter}">regs'
            f'</th><th style="{gutter}">spills</th><th style="{gutter}">instr</th>'
            f'<th style="text-align: left">source (colour: {METRIC_LABELS[metric]}; click a line '
            f'for its SASS)</th></tr>')
    lead = html.note(f"{kl.kernel}: peak {kl.peak} live registers; read from {kl.binary}")
    return (lead + f'<table style="border-collapse: collapse; {html.MONO}; line-height: 1.35">'
            f"{head}{''.join(out)}</table>" + tail)


def unavailable(exc: Exception, name: str | None = None) -> str:
    """Why a view has no per-line cost (no nvdisasm, no cubin), as a warning note."""
    return html.note(f"{name + ': ' if name else ''}per-line cost unavailable: "
                     f"{type(exc).__name__}: {exc}", html.WARN)


def hottest_html(name: str, kl: KernelLines, n: int = 5) -> str:
    hot = kl.hottest(n)
    items = "".join(f"<li>{escape(_hot(r))}" + (f" <i>{escape((r.text or '').strip()[:80])}</i>"
                                                if r.text else "") + "</li>" for r in hot)
    return (f'<div style="{html.MONO}"><b>{escape(name)}</b>: peak {kl.peak} live registers '
            f'<span style="{html.DIM}">({escape(kl.binary)})</span><ol style="margin: 2px 0">'
            f"{items}</ol></div>")


def rows(kl: KernelLines):
    """``cuda_magic.lines()``'s answer: a pandas DataFrame when pandas is installed, else a
    list of dicts (one per line)."""
    data = [r.row() for r in kl.rows]
    try:
        import pandas
    except ImportError:
        return data
    return pandas.DataFrame(data)
