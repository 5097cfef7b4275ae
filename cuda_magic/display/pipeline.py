"""The async-pipeline table (:mod:`cuda_magic.inspect.pipeline`) as text and HTML: one column
per build of a kernel (each arch of an arch list, each variant of a comparison), one row per
stage any of them uses, then setmaxnreg, warpgroups, cluster, registers and static shared
memory, then the warnings (the deadlock-prone patterns of :mod:`cuda_magic.inspect.deadlock`
among them).  ``show(m, "pipeline")`` prints it; the Resources tab shows it for a cell whose
source uses the async machinery, and the warnings alone of a kernel with no async pipeline
whose source has a block-wide barrier (:func:`worth_showing`).
"""

from __future__ import annotations

import re
from html import escape

from ..inspect.pipeline import ROWS, Pipeline, pipeline
from . import markup
from .text import table as text_table

__all__ = ["text", "html", "worth_showing", "resources_html", "of_content", "columns_text"]

# what in a cell's source says it has an async pipeline to show (cheap: no tool runs without it)
_HINTS = re.compile(r"cp\.async\.bulk|wgmma|tcgen05|mbarrier|setmaxnreg|__cluster_dims__|"
                    r"CUtensorMap|cluster_group|cuda::barrier|cuda::pipeline|griddepcontrol|"
                    r"cudaGridDependencySynchronize|cute::|cutlass::")
# a block-wide barrier: the deadlock check reads it on any arch
_BARRIERS = re.compile(r"__syncthreads|\bbar(rier)?\.(cta\.)?(sync|red)\b|\.sync\(\)|__barrier_sync")
_WHAT = {name: what for name, what, _ in ROWS}


def worth_showing(source: str, archs) -> bool:
    """Whether a cell's Resources tab gets the pipeline table: an sm_90+ build and a source that
    uses TMA, wgmma, tcgen05, mbarriers, setmaxnreg, clusters or PDL."""
    new = any(re.fullmatch(r"sm_(9|1\d)\d[af]?", a or "") for a in archs)
    return new and _HINTS.search(source or "") is not None


def resources_html(c) -> str:
    """What the Resources tab shows of a view's Content: the pipeline tables and warnings when
    :func:`worth_showing`; else, for a source with a block-wide barrier (``__syncthreads()``,
    any arch), the deadlock check's warnings alone; else nothing."""
    if worth_showing(c.source, [b.result.arch for b in c.builds]):
        return html(of_content(c))
    if _BARRIERS.search(c.source or ""):
        return html(of_content(c), deadlocks_only=True)
    return ""


def of_content(c) -> dict[str, dict[str, Pipeline]]:
    """``{kernel: {arch: Pipeline}}`` over a view's Content (every build of each kernel)."""
    out: dict = {}
    for b, e in c.entries:
        if e.symbol:
            name = e.kernel.name if e.kernel is not None else e.name    # one name for its archs
            out.setdefault(name, {})[b.result.arch] = pipeline(b.result, e.symbol, name, c.source)
    return out


def _rows(columns: dict[str, Pipeline]) -> list[tuple[str, list[str]]]:
    ps = list(columns.values())
    rows = [(name, [str(p.counts[name]) for p in ps]) for name, _, _ in ROWS
            if name != "setmaxnreg" and any(p.counts[name] for p in ps)]
    if any(p.setmaxnreg for p in ps):
        rows.append(("setmaxnreg", [", ".join(f"{k} {n}" for k, n in p.setmaxnreg) or "-"
                                    for p in ps]))
        rows.append(("registers after setmaxnreg", [
            f"{p.register_total:,} of 65,536" if p.register_total is not None else "-" for p in ps]))
    rows.append(("warpgroups (__launch_bounds__)", [str(p.warpgroups or "-") for p in ps]))
    if any(p.cluster for p in ps):
        rows.append(("cluster (__cluster_dims__)", ["x".join(map(str, p.cluster)) if p.cluster
                                                    else "-" for p in ps]))
    rows.append(("registers (ptxas)", [str(p.registers) for p in ps]))
    rows.append(("static shared bytes", [f"{p.shared:,}" for p in ps]))
    return rows


def columns_text(title: str, columns: dict[str, Pipeline]) -> list[str]:
    """One kernel's table, a column per build (``{label: Pipeline}``), then its warnings."""
    ps = list(columns.values())
    lines = [title] + text_table(["stage", *columns], [[n, *v] for n, v in _rows(columns)])
    if not any(p.active for p in ps):
        lines.append("  no TMA, wgmma, tcgen05, mbarrier, cluster or setmaxnreg instructions")
    for w, labels in _warnings(columns).items():
        lines.append(f"  warning{' (' + ', '.join(labels) + ')' if len(columns) > 1 else ''}: {w}")
    return lines


def _warnings(columns: dict[str, Pipeline], deadlocks_only: bool = False) -> dict[str, list[str]]:
    """Each warning once, with the columns (archs, variants) that have it (``deadlocks_only``:
    the deadlock check's alone)."""
    out: dict[str, list[str]] = {}
    for label, p in columns.items():
        said = {f"{p.kernel}: {f.message}" for f in p.deadlocks}
        for w in p.warnings:
            if not deadlocks_only or w in said:
                out.setdefault(w, []).append(label)
    return out


def text(pipes: dict[str, dict[str, Pipeline]]) -> str:
    return "\n\n".join("\n".join(columns_text(k, cols)) for k, cols in pipes.items())


def html(pipes: dict[str, dict[str, Pipeline]], deadlocks_only: bool = False) -> str:
    """The tables of every kernel that uses the async machinery, with their warnings
    (``deadlocks_only``: the deadlock check's warnings of each kernel, no tables)."""
    parts = []
    for k, cols in pipes.items():
        ps = list(cols.values())
        warned = _warnings(cols, deadlocks_only)
        if not (warned or (not deadlocks_only and any(p.active for p in ps))):
            continue
        if not deadlocks_only:
            rows = [[f'<span title="{escape(_WHAT.get(n, n))}">{escape(n)}</span>',
                     *map(escape, v)] for n, v in _rows(cols)]
            parts.append(f'<div style="margin-top: 6px"><b>{escape(k)}</b>: async pipeline</div>'
                         + markup.table(["stage", *map(escape, cols)], rows))
        else:                           # the deadlock check's warnings alone: no table
            parts.append(f'<div style="margin-top: 6px"><b>{escape(k)}</b>: before the launch</div>')
        parts += [markup.note(w + (f" ({', '.join(labels)})" if len(cols) > 1 else ""), markup.WARN)
                  for w, labels in warned.items()]
    return "".join(parts)
