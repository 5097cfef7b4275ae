"""The ipywidgets view: a header line over tabs Config, Resources, Log, SASS, PTX, Source.

SASS and PTX are computed the first time their tab is shown (nvdisasm takes
a few hundred milliseconds), with a live "working" line meanwhile; a dropdown
picks the kernel (SASS) or the build (PTX) when there are several.  The Source
tab is the heat map of the chosen kernel (each line coloured by live registers,
spills or instructions; click a line for its SASS) and the Resources tab lists
the hottest lines: both read the per-line cost (one nvdisasm run per build) the
first time they are opened.  Syntax colours stop at :data:`.markup.HIGHLIGHT_LINES`
lines or :data:`.markup.HIGHLIGHT_BYTES` bytes (the rest is plain text).
"""

from __future__ import annotations

from typing import Callable, Sequence

from . import markup
from .archs import add_tab
from .frontend import live

__all__ = ["TITLES", "LazyPanel", "cell_widget"]

TITLES = ("Config", "Resources", "Log", "SASS", "PTX", "Source")


class LazyPanel:
    """A dropdown and an HTML pane whose content is made on first view, per option."""

    def __init__(self, widgets, options: Sequence[str], render: Callable[[int], str],
                 working: str, what: str):
        self.render, self.working = render, working
        self.pages: dict[int, str] = {}
        self.dropdown = widgets.Dropdown(options=[(o, i) for i, o in enumerate(options)], value=0,
                                         description=what)
        if len(options) < 2:
            self.dropdown.layout.display = "none"
        self.pane = widgets.HTML(markup.note("computed when this tab is opened"))
        self.box = widgets.VBox([self.dropdown, self.pane])
        self.shown = False
        self.dropdown.observe(lambda _: self.shown and self.fill(), names="value")

    def fill(self) -> None:
        self.shown = True
        i = self.dropdown.value
        if i not in self.pages:
            try:
                with live(self.pane, self.working):
                    self.pages[i] = self.render(i)
            except Exception as exc:   # a missing tool or a failed compile: say so in the tab
                self.pages[i] = markup.note(f"{type(exc).__name__}: {exc}", markup.ERR)
        self.pane.value = self.pages[i]


def cell_widget(view):
    """Build the widget for a :class:`~cuda_magic.display.CellView`."""
    import ipywidgets as widgets

    c = view.content
    entries = c.entries
    def sass_page(i: int) -> str:
        if not entries:
            return markup.note("no kernels in this cell")
        return markup.sass(view.sass_of(*entries[i]), c.source, entries[i][0].result.inputs)
    sass = LazyPanel(widgets, [e.name for _, e in entries] or ["(no kernels)"], sass_page,
                     "running nvdisasm", "kernel")
    ptx = LazyPanel(widgets, [b.label for b in c.builds],
                    lambda i: markup.ptx(view.ptx_of(c.builds[i])), "getting the PTX", "build")
    # The Source tab: the heat map (each line coloured by live registers, spills or
    # instructions; one nvdisasm run per build) when the tab is first opened.
    from .line_cost import METRIC_LABELS, heat_map, hottest_html, unavailable
    metric = widgets.ToggleButtons(options=[(label, m) for m, label in METRIC_LABELS.items()],
                                   value="registers", style={"button_width": "auto"},
                                   description="colour by")

    small = len(c.source) <= markup.HIGHLIGHT_BYTES and c.source.count("\n") < markup.HIGHLIGHT_LINES

    def heat_page(i: int) -> str:
        if not entries:
            return markup.source(c.source)
        if not small:                # a big cell: its source, capped; show(m, "lines") has figures
            return markup.note("a big cell: no heat map; cuda_magic.show(m, 'lines') prints the "
                             "cost of each line") + markup.source(c.source)
        try:
            return heat_map(c.source, view.lines_of(*entries[i]), metric.value)
        except Exception as exc:     # no nvdisasm, no cubin: the plain source, and why
            return unavailable(exc) + markup.source(c.source)
    heat = LazyPanel(widgets, [e.name for _, e in entries] or ["(no kernels)"], heat_page,
                     "reading the registers of each line (nvdisasm)", "kernel")

    def recolour(_):
        heat.pages.clear()
        if heat.shown:
            heat.fill()
    metric.observe(recolour, names="value")
    if small:                        # the coloured source at once; the heat map when opened
        heat.pane.value = markup.source(c.source)
    else:
        heat.pane.value = markup.note("computed when this tab is opened (a big cell)")
    source = widgets.VBox([widgets.HBox([heat.dropdown, metric]), heat.pane])
    # The Resources tab: ptxas figures and occupancy now; the hottest lines when first opened.
    hot = widgets.HTML(markup.note("hottest lines: computed when this tab is opened"))

    def fill_hot() -> None:
        parts = []
        with live(hot, "reading the registers of each line (nvdisasm)"):
            for b, e in entries:
                try:
                    parts.append(hottest_html(e.name, view.lines_of(b, e)))
                except Exception as exc:
                    parts.append(unavailable(exc, e.name))
        hot.value = "".join(parts) or markup.note("no kernels in this cell")
    resources = widgets.VBox([widgets.HTML(markup.resources(c)), hot])
    children = [widgets.HTML(markup.config_of(c)), resources,
                widgets.HTML(markup.log(c)), sass.box, ptx.box, source]
    tab = widgets.Tab(children=children, titles=TITLES, selected_index=0)
    add_tab(widgets, tab, view.obj)      # "Archs", when the cell was built for several archs
    lazy = {TITLES.index("SASS"): sass, TITLES.index("PTX"): ptx, TITLES.index("Source"): heat}
    pending = {"hot": True}

    def opened(change):
        panel = lazy.get(change["new"])
        if panel is not None:
            panel.fill()
        elif change["new"] == TITLES.index("Resources") and pending.pop("hot", False):
            fill_hot()
    tab.observe(opened, names="selected_index")
    box = widgets.VBox([widgets.HTML(markup.header(c)), tab])
    box.tab, box.sass, box.ptx, box.heat, box.metric, box.hot = tab, sass, ptx, heat, metric, hot
    return box
