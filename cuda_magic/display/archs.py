"""How an arch list looks (``%%cuda --arch sm_80,sm_90a``): the builds side by side.

Per kernel, registers, spill stores/loads, static shared memory and the theoretical
occupancy at a block size (``Module.arch_matrix``) in one column per arch, then the SASS
diff between two archs (register numbering normalised, what changed in one line; the
renderers of :mod:`.compare`).  Text and static HTML show the table and the diff of the
first two archs; the widget's "Archs" tab has a block-size dropdown and picks the kernel
and the two archs.
"""

from __future__ import annotations

from html import escape

from .. import inspect
from ..inspect import diff
from ..inspect.archs import BLOCK_SIZES
from . import markup
from .compare import html_pair, text_pair
from .frontend import live
from .text import WIDTH, table as text_table

__all__ = ["several", "matrix", "pair", "text", "html_section", "add_tab", "BLOCK"]

BLOCK = 256         # the block size the table starts at


def several(obj) -> bool:
    """Whether ``obj`` is a ``%%cuda`` Module built for several archs."""
    from ..cell import Module
    return isinstance(obj, Module) and len(obj.archs) > 1


def _occupancy(o) -> str:
    return "–" if o is None else \
        f"{o.percent} · {o.blocks} block{'' if o.blocks == 1 else 's'} ({o.limiter})"


def matrix(m, block: int = BLOCK, kernel: str | None = None):
    """``(head, rows)``: rows ``(kernel, metric, [value per arch], differs)``."""
    by: dict[str, dict] = {}
    for row in m.arch_matrix(block):
        if kernel in (None, row.kernel):
            by.setdefault(row.kernel, {})[row.arch] = row
    bound = {r.arch for rows in by.values() for r in rows.values() if r.bound}
    head = ["kernel", "", *[f"{a} (bound)" if bound == {a} else a for a in m.archs]]
    metrics = (("registers", lambda r: "–" if r.registers is None else str(r.registers)),
               ("spills st/ld B", lambda r: r.spills),
               ("shared B", lambda r: "–" if r.shared is None else str(r.shared)),
               (f"occupancy @{block}", lambda r: _occupancy(r.occupancy)))
    rows = []
    for name, per_arch in by.items():
        for label, get in metrics:
            values = [get(per_arch[a]) if a in per_arch else "–" for a in m.archs]
            rows.append((name, label, values, len(set(values)) > 1))
    return head, rows


def _instructions(result, symbol: str) -> list[str]:
    return diff.instructions(inspect.sass(result, symbol))


def pair(m, kernel: str, a: str, b: str, raw: bool = False):
    """``kernel`` built for ``a`` against ``b``: ``(diff, raw diff, summary)`` (runs nvdisasm
    once per build, cached)."""
    k = m[kernel]
    symbol = k.symbol or kernel
    ra, rb = m.result_of(kernel, a), m.result_of(kernel, b)
    ia, ib = _instructions(ra, symbol), _instructions(rb, symbol)
    raw_diff = diff.compare(ia, ib, normalize=False)
    d = raw_diff if raw else diff.compare(ia, ib)
    summary = diff.summary(ia, ib, resources=(ra.resources.get(symbol), rb.resources.get(symbol)))
    return d, raw_diff, summary


def _pairs(m, a: str, b: str, kernel: str | None = None):
    """The kernels built for both ``a`` and ``b``."""
    for name in m.kernels:
        if kernel in (None, name) and _built(m, name, a) and _built(m, name, b):
            yield name, a, b


def _built(m, kernel: str, arch: str) -> bool:
    try:
        m.result_of(kernel, arch)
    except LookupError:       # NoKernelError: a kernel that set its own arch
        return False
    return True


def text(m, block: int = BLOCK, raw: bool = False, kernel: str | None = None) -> list[str]:
    """The table, then the SASS diff of the first two archs per kernel."""
    if not several(m):
        return []
    head, rows = matrix(m, block, kernel)
    a, b = m.archs[:2]
    table = text_table(head, [[k, label, *values, "*" if differs else ""]
                              for k, label, values, differs in rows])
    if max(map(len, table)) > WIDTH:        # too many archs side by side: an arch per row
        labels = list(dict.fromkeys(label for _, label, _, _ in rows))
        by = {(k, label): values for k, label, values, _ in rows}
        kernels = list(dict.fromkeys(k for k, _, _, _ in rows))
        table = text_table(["kernel", "arch", *labels],
                           [[k, arch, *[by[k, label][i] for label in labels]]
                            for k in kernels for i, arch in enumerate(head[2:])])
    out = [f"archs ({', '.join(m.archs)}; occupancy at {block} threads per block)", *table,
           f"SASS {b} vs {a}" + (" (raw registers)" if raw else "")
           + " (the first two archs; the widget's Archs tab compares any two)"]
    for name, x, y in _pairs(m, a, b, kernel):
        d, raw_diff, summary = pair(m, name, x, y, raw)
        lines = text_pair(name, x, y, d, "side", summary=summary, raw_changed=raw_diff.changed)
        if max(map(len, lines)) + 2 > WIDTH:       # the two sides do not fit: one above the other
            lines = text_pair(name, x, y, d, "unified", summary=summary,
                              raw_changed=raw_diff.changed)
        out += ["  " + line for line in lines]
    return out


def _table_html(m, block: int) -> str:
    head, rows = matrix(m, block)
    body = [[escape(k), escape(label),
             *[f"<b>{escape(v)}</b>" if differs else escape(v) for v in values]]
            for k, label, values, differs in rows]
    return markup.table([escape(h) for h in head], body) + markup.note(
        f"occupancy at {block} threads per block, from ptxas figures and each arch's limits; "
        f"bold: differs between archs")


def _diff_html(m, kernel: str, a: str, b: str, mode: str = "side", raw: bool = False,
               details: bool = False) -> str:
    d, raw_diff, summary = pair(m, kernel, a, b, raw)
    return html_pair(kernel, a, b, d, mode, raw_changed=raw_diff.changed,
                     raw=raw_diff if details and not raw else None, summary=summary)


def html_section(m, sass: bool = True) -> str:
    """The Archs section of the static HTML (``sass=False``: the SASS diff only where both
    builds were disassembled already)."""
    if not several(m):
        return ""
    a, b = m.archs[:2]
    parts = [markup.note(m.arch_note() or "", ""), _table_html(m, BLOCK),
             markup.note(f"SASS {b} vs {a} (the first two archs)", "font-weight: bold")]
    for name, x, y in _pairs(m, a, b):
        ready = sass or all(inspect.has_sass(m.result_of(name, arch)) for arch in (x, y))
        if not ready:
            parts.append(markup.note(f"{name}: the SASS diff is made when the Archs tab is opened, "
                                   f'or by cuda_magic.show(m, "archs")'))
            continue
        try:
            parts.append(_diff_html(m, name, x, y, details=True))
        except Exception as exc:        # no nvdisasm: the table still shows
            parts.append(markup.note(f"{name}: SASS diff unavailable: {exc}", markup.WARN))
    return f'<div class="cuda-magic">{markup.section("Archs", "".join(parts))}</div>'


def add_tab(widgets, tab, m) -> None:
    """Add the "Archs" tab to ``tab`` when ``m`` has several archs: the table with a block-size
    dropdown, and the SASS diff of a kernel between two archs (made when first shown)."""
    if not several(m):
        return
    block = widgets.Dropdown(options=list(BLOCK_SIZES), value=BLOCK, description="block")
    table = widgets.HTML(_table_html(m, BLOCK))
    names = list(m.kernels) or ["(no kernels)"]
    kernel = widgets.Dropdown(options=names, description="kernel")
    if len(names) < 2:
        kernel.layout.display = "none"
    left = widgets.Dropdown(options=list(m.archs), value=m.archs[0], description="arch",
                            layout=widgets.Layout(width="auto"))
    right = widgets.Dropdown(options=list(m.archs), value=m.archs[1], description="vs",
                             layout=widgets.Layout(width="auto"))
    mode = widgets.ToggleButtons(options=[("side by side", "side"), ("unified", "unified")],
                                 value="side", style={"button_width": "auto"})
    raw = widgets.Checkbox(value=False, description="raw registers", indent=False,
                           layout=widgets.Layout(width="auto", margin="0 0 0 14px"))
    pane = widgets.HTML(markup.note("the SASS diff is made when this tab is opened"))
    state = {"shown": False}

    def show_table(_=None):
        table.value = _table_html(m, block.value)

    def show_diff(_=None):
        if not state["shown"]:
            return
        if not m.kernels:
            pane.value = markup.note("no kernels in this cell")
            return
        try:
            with live(pane, "running nvdisasm"):
                page = _diff_html(m, kernel.value, left.value, right.value, mode.value, raw.value)
            pane.value = page
        except Exception as exc:        # a missing tool: say so in the tab
            pane.value = markup.note(f"{type(exc).__name__}: {exc}", markup.ERR)

    def opened(change):
        if change["new"] == index and not state["shown"]:
            state["shown"] = True
            show_diff()
    block.observe(show_table, names="value")
    for w in (kernel, left, right, mode, raw):
        w.observe(show_diff, names="value")
    box = widgets.VBox([block, table, widgets.HBox([kernel, left, right, mode, raw]), pane])
    box.block, box.table, box.kernel, box.left, box.right, box.mode, box.raw, box.pane = \
        block, table, kernel, left, right, mode, raw, pane
    box.fill = lambda: opened({"new": index})
    titles = tuple(tab.titles)
    index = len(titles)
    tab.children = (*tab.children, box)
    tab.titles = (*titles, "Archs")
    tab.observe(opened, names="selected_index")
    tab.archs = box
