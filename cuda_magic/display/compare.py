"""How a :class:`~cuda_magic.variants.comparison.Comparison` looks: variants, resource and SASS diffs, numbers.

Text (terminal, ``show``) and HTML (nbconvert, the widget's panes) read the
same rows from here.  SASS diffs pair each variant with the baseline, side by
side (sdiff-style markers ``|``, ``<``, ``>``) or unified; ``.FTZ`` is marked.
Register numbering is normalised (renumbering alone changes no line); the raw
diff is one click away (the widget's "raw registers", a ``<details>`` in HTML,
``show(c, "sass", raw=True)``).  Each pair says in one line what changed
(:func:`cuda_magic.inspect.diff.summary`).  :func:`text_pair` and :func:`html_pair`
render one diff; the arch view (:mod:`.archs`) uses them too.  :func:`compare_widget` is the
same rows as ipywidgets, with toggles that rebuild the last variant.

One concept, the view of a Comparison, in text, HTML and a widget: hence over 500 lines.

One concept: a comparison's view; its text, HTML and widget draw on the same diffs and rows.
"""

from __future__ import annotations

import base64
import io
import time
from html import escape

from ..errors import ShowError, clip
from ..inspect import diff
from ..variants import TOGGLES
from . import markup
from .frontend import WidgetReprs, live, shown
from .content import (ARGV_HINT, RESOURCE_COLUMNS, argv_short_text, argv_shortened, argv_text,
                      compilers, version_note)
from .text import numbered, table as text_table

__all__ = ["CompareView", "COMPARE_TITLES", "compare_widget", "builds", "resource_diff", "header", "notes", "changes", "text_pair",
           "html_pair"]

FOLD = 8           # equal runs longer than this fold to their ends
CONTEXT = 3
BG = {"replace": "background: rgba(241,196,15,0.22)", "delete": "background: rgba(231,76,60,0.18)",
      "insert": "background: rgba(46,204,113,0.20)", "equal": ""}
MARK = {"replace": "|", "delete": "<", "insert": ">", "equal": " "}
FTZ = "color: #c0392b; font-weight: bold"


# -- rows ---------------------------------------------------------------------------------------

def builds(cmp) -> list[tuple[str, str, object]]:
    """``[(label, variant, CompilationResult)]`` per variant and build (the label names the
    kernels when a variant has several builds)."""
    out = []
    for name in cmp.names:
        results = cmp.modules[name].results
        for r in results:
            kernels = [k for k in cmp.kernels if cmp.result(name, k) is r]
            out.append((name if len(results) == 1 else f"{name} ({', '.join(kernels) or 'cell'})",
                        name, r))
    return out


def toggles(cmp, name: str) -> str:
    s = cmp.state(name)
    return " ".join(f"{t}={'on' if s[t] else 'off'}" if t == "fast-math" else
                    f"{t}={'true' if s[t] else 'false'}" for t in TOGGLES)


def resource_diff(cmp) -> list[tuple[str, str, list[str], bool]]:
    """``[(kernel, metric, [value per variant], differs)]``."""
    rows = []
    for k in cmp.kernels:
        for attr, label in RESOURCE_COLUMNS:
            values = []
            for name in cmp.names:
                res = cmp.result(name, k).resources.get(cmp.symbol(name, k))
                values.append("–" if res is None else str(getattr(res, attr)))
            rows.append((k, label, values, len(set(values)) > 1))
        counts = [str(len(cmp.instructions(n, k))) for n in cmp.names]
        rows.append((k, "SASS lines", counts, len(set(counts)) > 1))
        ftz = [str(cmp.ftz(n, k)) for n in cmp.names]
        rows.append((k, ".FTZ instructions", ftz, len(set(ftz)) > 1))
        mixes = [cmp.mix(n, k) for n in cmp.names]
        for cls in mixes[0]:
            if any(m[cls] for m in mixes):
                values = [str(m[cls]) + _delta(m[cls] - mixes[0][cls]) for m in mixes]
                rows.append((k, f"{cls} instructions", values,
                             any(m[cls] != mixes[0][cls] for m in mixes)))
    return rows


def _delta(n: int) -> str:
    return "" if not n else f" (+{n})" if n > 0 else f" (\u2212{-n})"


def changes(cmp) -> list[str]:
    """What changed per kernel and variant against the baseline, one line each:
    ``scale · ftz=true: 1 FMUL → FMUL.FTZ``."""
    return [f"{k} \u00b7 {name}: {cmp.summary(name, k)}" for k in cmp.kernels
            for name in cmp.names[1:]]


def folded(rows: list[diff.Row]) -> list[diff.Row | int]:
    """Rows with long equal runs replaced by the number of lines left out."""
    out: list[diff.Row | int] = []
    i = 0
    while i < len(rows):
        j = i
        while j < len(rows) and rows[j].tag == "equal":
            j += 1
        run = j - i
        if run > FOLD:
            head = CONTEXT if i > 0 else 0
            tail = CONTEXT if j < len(rows) else 0
            out += rows[i:i + head]
            out.append(run - head - tail)
            out += rows[j - tail:j]
        else:
            out += rows[i:j]
        if j < len(rows):
            out.append(rows[j])
        i = j + 1
    return out


def _results(cmp) -> list:
    return [r for name in cmp.names for r in cmp.modules[name].results]


def header(cmp) -> str:
    n = len(cmp.names)
    ftz = ", ".join(f"{name} {sum(cmp.ftz(name, k) for k in cmp.kernels)}" for name in cmp.names)
    names = [cmp.baseline if cmp.baseline == "baseline" else f"{cmp.baseline} (baseline)",
             *cmp.names[1:]]
    archs = " / ".join(dict.fromkeys(r.arch for r in _results(cmp)))
    return " · ".join([f"{n} variants: {' vs '.join(names)}",
                       ", ".join(cmp.kernels) or "no kernels", archs,
                       compilers(_results(cmp)), f".FTZ: {ftz}"])


def notes(cmp) -> list[str]:
    """Under the header: the variants' compilers differ in version (their SASS may differ for
    that reason alone)."""
    note = version_note(_results(cmp))
    return [note] if note else []


def _pairs(cmp, kernel: str, raw: bool = False):
    """Per variant: its name, its diff against the baseline, the raw diff's changed lines."""
    for name in cmp.names[1:]:
        yield name, cmp.diff(name, kernel, raw=raw), cmp.diff(name, kernel, raw=True).changed


def changed_text(d: diff.Diff, raw_changed: int | None = None) -> str:
    """``1 line changed``, and how many with register numbers when normalising hid some."""
    n = d.changed
    out = f"{n} line{'s' if n != 1 else ''} changed"
    if d.normalized and raw_changed is not None and raw_changed != n:
        out += f" ({raw_changed} with register numbers)"
    return out


def _ftz(cmp, name: str, kernel: str) -> str:
    return f"; .FTZ {cmp.ftz(cmp.baseline, kernel)} -> {cmp.ftz(name, kernel)}"


def _number_rows(cmp) -> list[list[str]]:
    rows = []
    for d in cmp.numbers or ():
        rows.append([d.name, d.variant + (" (baseline)" if d.variant == cmp.baseline else ""),
                     f"{d.dtype}[{d.size}]", str(d.differ), str(d.flushed), f"{d.max_abs:.6g}",
                     str(d.max_ulp)])
    return rows


NUMBER_HEAD = ["array", "variant", "dtype", "differ", "flushed to 0", "max abs diff", "max ULP"]


# -- text ---------------------------------------------------------------------------------------

def text_pair(kernel: str, left: str, right: str, d: diff.Diff, mode: str, *,
              raw_changed: int | None = None, extra: str = "", summary: str | None = None
              ) -> list[str]:
    """One SASS diff as text: ``kernel: right vs left: N lines changed``, what changed, rows."""
    out = [f"{kernel}: {right} vs {left}: {changed_text(d, raw_changed)}{extra}"]
    if summary:
        out.append(f"  {summary}")
    if d.equal:
        return out
    if mode == "unified":
        return out + ["  " + line for line in d.unified(left, right)]
    width = min(max([len(x) for x in d.a] + [len(left)]), 60)
    out.append(f"  {left:<{width}}   {right}")
    for row in folded(d.rows()):
        if isinstance(row, int):
            out.append(f"  … {row} equal lines")
        else:
            out.append(f"  {(row.left or ''):<{width}} {MARK[row.tag]} {row.right or ''}".rstrip())
    return out


def text_sass(cmp, kernel: str, mode: str, raw: bool = False) -> list[str]:
    out = []
    for name, d, raw_n in _pairs(cmp, kernel, raw):
        out += text_pair(kernel, cmp.baseline, name, d, mode, raw_changed=raw_n,
                         extra=_ftz(cmp, name, kernel), summary=cmp.summary(name, kernel))
    return out


def text_parts(cmp, kernel: str | None = None, ptx: bool | None = None, raw: bool = False,
               summaries: bool = True) -> dict[str, list[str]]:
    """The text view by part (what ``show`` prints): config, resources (then what changed, with
    ``summaries``), sass, numbers, ptx (the PTX diff only with ``ptx=True``, by default as the
    comparison was asked); ``raw``: SASS diffs of the raw text (register numbers as they are)."""
    kernels = [k for k in cmp.kernels if kernel in (None, k)]
    bs = builds(cmp)
    parts = {"config": text_table(["variant", "toggles", "argv"],
                                  [[label, toggles(cmp, name), argv_short_text(r.argv)]
                                   for label, name, r in bs], indent="")
             + ([f"({ARGV_HINT.format('c')})"]
                if any(argv_shortened(r.argv) for *_, r in bs) else []),
             "argv": [f"{label}: {argv_text(r.argv)}" for label, _, r in bs]}
    parts["resources"] = text_table(["kernel", "", *cmp.names],
                                    [[k, label, *values, "*" if differs else ""]
                                     for k, label, values, differs in resource_diff(cmp) if k in kernels],
                                    indent="")
    if summaries and len(cmp.names) > 1:
        parts["resources"] += [line for line in changes(cmp)
                               if line.split(" \u00b7 ", 1)[0] in kernels]
    parts["sass"] = [line for k in kernels for line in text_sass(cmp, k, cmp.diff_mode, raw)]
    if cmp.numbers is None:
        parts["numbers"] = [cmp.note or 'not run: give --run "kernel[grid, block](args)"']
    elif not cmp.numbers:
        parts["numbers"] = ["no output array changed in any variant"]
    else:
        parts["numbers"] = text_table(NUMBER_HEAD, _number_rows(cmp), indent="")
    base = cmp.ptx(cmp.baseline) if (cmp.show_ptx if ptx is None else ptx) else None
    parts["ptx"] = [] if base is None else [
        line for name in cmp.names[1:]
        for line in diff.unified(base, cmp.ptx(name), cmp.baseline, name)
        or [f"{name}: same PTX as {cmp.baseline}"]]
    return parts


def text(cmp) -> str:
    parts = text_parts(cmp, summaries=False)      # what changed: once, under the header
    titles = {"config": "variants", "resources": "resources",
              "sass": f"SASS ({'unified' if cmp.diff_mode == 'unified' else 'side by side'})",
              "numbers": "numbers", "ptx": "PTX"}
    out = [header(cmp), *(f"! {n}" for n in notes(cmp))]
    if cmp.kernels and len(cmp.names) > 1:
        out += ["what changed", *("  " + line for line in changes(cmp))]
    for key, title in titles.items():
        if parts[key]:
            out += [title, *("  " + line for line in parts[key])]
    return "\n".join(out)


# -- HTML ---------------------------------------------------------------------------------------

def _code(line: str | None) -> str:
    if line is None:
        return ""
    parts = line.split(".FTZ")
    return f'<span style="{FTZ}">.FTZ</span>'.join(escape(p) for p in parts)


def _unified_html(lines: list[str], code) -> str:
    """A unified diff, added and removed lines coloured (not the ---/+++/@@ headers)."""
    rows = []
    for line in lines:
        tag = "equal" if line.startswith(("+++", "---", "@@")) else \
            "insert" if line.startswith("+") else "delete" if line.startswith("-") else "equal"
        rows.append(f'<div style="{BG[tag]}">{code(line) or "&nbsp;"}</div>')
    return f'<div style="{markup.PRE}">{"".join(rows)}</div>'


def _rows_html(left: str, right: str, d: diff.Diff, mode: str) -> str:
    """The rows of one diff: side by side (folded) or unified."""
    if mode == "unified":
        return _unified_html(d.unified(left, right), _code)
    cell = f"padding: 0 8px; {markup.MONO}; white-space: pre"
    rows = [f'<tr><th style="{cell}; text-align: left">{escape(left)}</th><th></th>'
            f'<th style="{cell}; text-align: left">{escape(right)}</th></tr>']
    for row in folded(d.rows()):
        if isinstance(row, int):
            rows.append(f'<tr><td colspan="3" style="{cell}; {markup.DIM}">… {row} equal lines</td></tr>')
            continue
        rows.append(f'<tr style="{BG[row.tag]}"><td style="{cell}">{_code(row.left)}</td>'
                    f'<td style="{cell}; {markup.DIM}">{MARK[row.tag]}</td>'
                    f'<td style="{cell}">{_code(row.right)}</td></tr>')
    return (f'<div style="{markup.PRE}; white-space: normal"><table style="border-collapse: '
            f'collapse">{"".join(rows)}</table></div>')


def html_pair(kernel: str, left: str, right: str, d: diff.Diff, mode: str, *,
              raw_changed: int | None = None, raw: diff.Diff | None = None, extra: str = "",
              summary: str | None = None) -> str:
    """One SASS diff as HTML: a bold line (how many lines changed), the summary, the rows; with
    ``raw`` (the un-normalised diff) a ``<details>`` holding it when it differs."""
    if raw is not None:
        raw_changed = raw.changed
    out = [markup.note(f"{kernel}: {right} vs {left}: {changed_text(d, raw_changed)}{extra}",
                     "font-weight: bold")]
    if summary:
        out.append(markup.note(summary, ""))
    if not d.equal:
        out.append(_rows_html(left, right, d, mode))
    if raw is not None and d.normalized and raw.changed != d.changed:
        out.append(f'<details><summary style="{markup.MONO}; {markup.DIM}; cursor: pointer">raw '
                   f'registers: {changed_text(raw)}</summary>{_rows_html(left, right, raw, mode)}'
                   f'</details>')
    return "".join(out)


def html_sass(cmp, kernel: str, mode: str, raw: bool = False, details: bool = False) -> str:
    """The SASS diffs of ``kernel``, each variant against the baseline; ``raw``: register
    numbers as they are; ``details``: the raw diff in a ``<details>`` under each (static HTML;
    the widget has a checkbox instead)."""
    blocks = []
    for name, d, raw_n in _pairs(cmp, kernel, raw):
        blocks.append(html_pair(
            kernel, cmp.baseline, name, d, mode, raw_changed=raw_n,
            raw=cmp.diff(name, kernel, raw=True) if details and not raw else None,
            extra=f" · .FTZ {cmp.ftz(cmp.baseline, kernel)} → {cmp.ftz(name, kernel)}",
            summary=cmp.summary(name, kernel)))
    return "".join(blocks) or markup.note("one variant only")


def html_variants(cmp) -> str:
    bs = builds(cmp)
    configs = markup.config([(label, r.config) for label, _, r in bs], [(label, r.argv) for label, _, r in bs])
    states = markup.table(["variant", *TOGGLES, "what it sets"],
                         [[escape(n), *[_flag(cmp, n, t) for t in TOGGLES],
                           escape(v.describe())] for n, v in zip(cmp.names, cmp.variants)])
    return states + configs


def _flag(cmp, name: str, toggle: str) -> str:
    on = cmp.state(name)[toggle]
    base = cmp.state(cmp.baseline)[toggle]
    text = "on" if on else "off"
    return f"<b>{text}</b>" if on != base else text


def html_resources(cmp) -> str:
    if not cmp.kernels:
        return markup.note("no kernels in this cell")
    body = [[escape(k), escape(label), *[f"<b>{escape(v)}</b>" if differs else escape(v) for v in values]]
            for k, label, values, differs in resource_diff(cmp)]
    return markup.table(["kernel", "", *map(escape, cmp.names)], body) + markup.note(
        "bold: differs between variants") + html_changes(cmp)


def html_changes(cmp) -> str:
    """What changed, per kernel and variant (one line each)."""
    lines = changes(cmp) if len(cmp.names) > 1 else []
    return "".join(markup.note(line, "") for line in lines)


def png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def html_numbers(cmp, plot: bool = True) -> str:
    if cmp.numbers is None:
        return markup.note(cmp.note or 'not run: give --run "kernel[grid, block](args)" to compare '
                                     "the numbers", markup.WARN if cmp.note else markup.DIM)
    if not cmp.numbers:
        return markup.note("no output array changed in any variant")
    rows = [[escape(c) for c in r] for r in _number_rows(cmp)]
    for r, d in zip(rows, cmp.numbers):
        if d.differ or d.flushed:
            r[3], r[4] = f"<b>{r[3]}</b>", f"<b>{r[4]}</b>"
    out = markup.table(NUMBER_HEAD, rows) + markup.note(
        "differ: elements not equal to the baseline's; flushed to 0: zero here where another "
        "variant kept a subnormal; ULP: units in the last place")
    if plot and len(cmp.names) > 1:
        try:
            image = cmp.derived.get("plot") or cmp.derived.setdefault("plot", png(cmp.plot()))
        except ImportError:
            return out + markup.note("pip install matplotlib for a plot of the ULP difference per element")
        out += f'<img alt="ULP difference per element" src="data:image/png;base64,{image}"/>'
    return out


def html_ptx(cmp) -> str:
    base = cmp.ptx(cmp.baseline)
    parts = []
    for name in cmp.names[1:]:
        lines = diff.unified(base, cmp.ptx(name), cmp.baseline, name)
        if not lines:
            parts.append(markup.note(f"{name}: same PTX as {cmp.baseline}"))
            continue
        parts.append(_unified_html(lines, escape))
    return "".join(parts)


def page(cmp) -> str:
    parts = [f'<div style="{markup.MONO}; margin: 2px 0"><b>{escape(header(cmp))}</b></div>',
             *(markup.note(n, markup.WARN) for n in notes(cmp)), html_changes(cmp),
             markup.section("Variants", html_variants(cmp)),
             markup.section("Resources", html_resources(cmp)),
             markup.section("SASS diff", "".join(html_sass(cmp, k, cmp.diff_mode, details=True)
                                               for k in cmp.kernels)
                           or markup.note("no kernels in this cell")),
             markup.section("Numbers", html_numbers(cmp))]
    if cmp.show_ptx:
        parts.append(markup.section("PTX diff", html_ptx(cmp)))
    parts.append(markup.section("Source", markup.source(cmp.source)))
    return f'<div class="cuda-magic">{"".join(parts)}</div>'


class CompareView(WidgetReprs):
    """The view of a comparison: text, static HTML, or the widget with toggles."""

    def __init__(self, cmp):
        self.comparison = cmp

    def text(self) -> str:
        return text(self.comparison)

    def html(self) -> str:
        return page(self.comparison)

    def widget(self):
        return compare_widget(self.comparison)

    def part(self, what: str = "summary", kernel: str | None = None, *, raw: bool = False,
             **_) -> str:
        """What ``show(c, what, kernel)`` prints: config (the variants and their argv), sass and
        ptx (the diffs), numbers, resources, source, pipeline (each kernel's async pipeline, a
        column per variant); summary and log: everything."""
        cmp = self.comparison
        if kernel is not None and kernel not in cmp.kernels:
            raise ShowError(f"kernel={clip(repr(kernel), 80)}: no such kernel here; the kernels are "
                            f"{', '.join(cmp.kernels) or 'none'}")
        if what in ("archs", "lines"):
            raise ShowError(f"what={what!r} is for a %%cuda Module; compare archs with "
                            f"%%cuda_compare --vary arch=sm_80,sm_90a and show(c, 'sass')")
        if what == "pipeline":           # each kernel's async pipeline, a column per variant
            from .pipeline import columns_text
            from ..inspect.pipeline import pipeline
            blocks = []
            for name in ([kernel] if kernel is not None else cmp.kernels):
                cols = {}
                for variant in cmp.names:
                    mod = cmp.modules[variant]
                    k = mod[name]
                    cols[variant] = pipeline(k.result, k.symbol, name, mod.source)
                blocks.append("\n".join(columns_text(name, cols)))
            body = "\n\n".join(blocks)
        elif what == "source":
            body = numbered(cmp.source)
        elif what in ("summary", "log"):
            body = self.text()
        else:
            body = "\n".join(text_parts(cmp, kernel, ptx=what == "ptx", raw=raw)[what])
        return body.rstrip("\n")


# -- the widget ---------------------------------------------------------------------------------

COMPARE_TITLES = ("Variants", "Resources", "SASS diff", "Numbers", "PTX diff", "Source")


def compare_widget(cmp):
    """The widget for a :class:`~cuda_magic.variants.comparison.Comparison`: a header, toggles for the last
    variant (each change rebuilds it through the compile cache and re-runs it; the baseline stays),
    then tabs.  ``box.comparison`` is the comparison shown now."""
    import ipywidgets as widgets


    box = widgets.VBox()
    box.comparison = cmp
    head = widgets.HTML()
    status = widgets.HTML(markup.note(f"the toggles set variant {cmp.names[-1]!r}; the baseline "
                                    f"{cmp.baseline!r} stays fixed"))
    toggles = {t: widgets.Checkbox(value=False, description=t, indent=False,
                                   layout=widgets.Layout(width="auto", margin="0 14px 0 0"))
               for t in TOGGLES}
    kernel = widgets.Dropdown(options=cmp.kernels or ["(no kernels)"], description="kernel")
    if len(cmp.kernels) < 2:
        kernel.layout.display = "none"
    mode = widgets.ToggleButtons(options=[("side by side", "side"), ("unified", "unified")],
                                 value=cmp.diff_mode, style={"button_width": "auto"})
    raw = widgets.Checkbox(value=False, description="raw registers", indent=False,
                           layout=widgets.Layout(width="auto", margin="0 0 0 14px"))
    sass = widgets.HTML()
    panes = {"Variants": widgets.HTML(), "Resources": widgets.HTML(),
             "SASS diff": widgets.VBox([widgets.HBox([kernel, mode, raw]), sass]),
             "Numbers": widgets.HTML(), "PTX diff": widgets.HTML(), "Source": widgets.HTML()}
    tab = widgets.Tab(children=[panes[t] for t in COMPARE_TITLES], titles=COMPARE_TITLES,
                      selected_index=2)
    quiet = {"on": False}

    def show_sass(_=None):
        c = box.comparison
        sass.value = html_sass(c, kernel.value, mode.value, raw.value) if c.kernels else \
            markup.note("no kernels in this cell")

    def show_ptx():
        try:
            with live(panes["PTX diff"], "getting the PTX"):
                page = html_ptx(box.comparison)
            panes["PTX diff"].value = page
        except Exception as exc:
            panes["PTX diff"].value = markup.note(f"{type(exc).__name__}: {exc}", markup.ERR)

    def refresh():
        c = box.comparison
        head.value = f'<div style="{markup.MONO}"><b>{markup.escape(header(c))}</b></div>' + \
            "".join(markup.note(n, markup.WARN) for n in notes(c)) + html_changes(c)
        panes["Variants"].value = html_variants(c)
        panes["Resources"].value = html_resources(c)
        panes["Numbers"].value = html_numbers(c)
        panes["Source"].value = markup.source(c.source)
        show_sass()
        if tab.selected_index == COMPARE_TITLES.index("PTX diff"):
            show_ptx()
        else:
            panes["PTX diff"].value = markup.note("computed when this tab is opened")
        quiet["on"] = True
        try:
            for t, w in toggles.items():
                w.value = c.state(c.names[-1])[t]
        finally:
            quiet["on"] = False

    def toggled(change):
        if quiet["on"]:
            return
        t = change["owner"].description
        start = time.perf_counter()
        try:
            with live(status, f"{t} → {'on' if change['new'] else 'off'}: rebuilding variant "
                              f"{box.comparison.names[-1]!r}"):
                new = box.comparison.toggled(t, change["new"])
        except Exception as exc:     # a compile or run error: keep what is shown, say why
            status.value = markup.note(f"{t}={change['new']}: {type(exc).__name__}: {exc}", markup.ERR)
            quiet["on"] = True
            change["owner"].value = change["old"]
            quiet["on"] = False
            return
        took = (time.perf_counter() - start) * 1e3
        results = new.modules[new.names[-1]].results
        how = "from the cache" if all(r.cache_hit for r in results) else "compiled"
        box.comparison = new
        refresh()
        status.value = markup.note(f"{t} → {'on' if change['new'] else 'off'}: variant "
                                 f"{new.names[-1]!r} {how} in {took:.0f} ms"
                                 + (", re-run" if new.numbers is not None else ""))

    for w in toggles.values():
        w.observe(toggled, names="value")
    kernel.observe(show_sass, names="value")
    mode.observe(show_sass, names="value")
    raw.observe(show_sass, names="value")
    tab.observe(lambda ch: ch["new"] == COMPARE_TITLES.index("PTX diff") and show_ptx(),
                names="selected_index")
    refresh()
    box.children = [head, widgets.HBox(list(toggles.values())), status, tab]
    box.tab, box.toggles, box.status, box.panes, box.kernel, box.mode, box.raw = \
        tab, toggles, status, panes, kernel, mode, raw
    shown(box, cmp)         # closed when the cell that showed it runs again
    return box
