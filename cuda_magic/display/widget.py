"""The ipywidgets view: a header line over tabs Config, Resources, Log, SASS, PTX, Source, and
the widgets' lifetime.

SASS and PTX are computed the first time their tab is shown (nvdisasm takes
a few hundred milliseconds), with a live "working" line meanwhile; a dropdown
picks the kernel (SASS) or the build (PTX) when there are several.  The Source
tab is the heat map of the chosen kernel (each line coloured by live registers,
spills or instructions; click a line for its SASS) and the Resources tab lists
the hottest lines: both read the per-line cost the first time they are opened.
The SASS and the per-line cost of a build come from one nvdisasm run, and in a
Jupyter kernel that run (and the first kernel's per-line cost) starts in a
background thread as soon as the view is shown (:func:`prefetch_tabs`):
the tab opened later finds it made, or waits for it rather than running it again.
The SASS tab heads each kernel's listing with its C++ name (the selector's), its
mangled symbol in a small note, and folds the alignment NOPs after its end; each
listing is coloured once per build.  Syntax colours stop at :data:`.markup.HIGHLIGHT_LINES`
lines or :data:`.markup.HIGHLIGHT_BYTES` bytes (the rest is plain text).

Widgets cost the kernel memory until they are closed, so a view makes few: the SASS, PTX and
Source tabs start as empty boxes whose dropdowns and panes are made when the tab is first
opened, and the static panes share one layout and one style (13 widgets for a cell, 52
before).  A view shown while a cell runs is recorded under that cell (the id the frontend
gives it; without one, the ``--name`` of its magic): when that cell runs again, its output
is replaced, and the widgets of the views it showed are closed (:mod:`.frontend`: every view's
widgets, the Comparison's and the Tuning's too).  A view built with ``widget()`` while a cell
runs counts as shown by that cell.
"""

from __future__ import annotations

from typing import Callable, Sequence

from . import frontend, markup
from .archs import add_tab
from .frontend import live, shown

__all__ = ["TITLES", "LazyPanel", "cell_widget", "prefetch_tabs"]

TITLES = ("Config", "Resources", "Log", "SASS", "PTX", "Source")


class LazyPanel:
    """A dropdown and an HTML pane in ``box`` whose content is made on first view, per option;
    the dropdown and the pane themselves are made when first needed (:meth:`fill`, or reading
    ``dropdown``/``pane``).  ``initial``: the pane's text until then (a function: called then);
    ``extra``: a function making widgets to put beside the dropdown (called then)."""

    def __init__(self, widgets, options: Sequence[str], render: Callable[[int], str],
                 working: str, what: str, *, box=None, initial: str | Callable[[], str] | None = None,
                 extra: Callable[[], Sequence] | None = None):
        self.widgets, self.options, self.what = widgets, list(options), what
        self.render, self.working = render, working
        self.initial, self.extra = initial, extra
        self.pages: dict[int, str] = {}
        self.box = box if box is not None else widgets.VBox()
        self.shown = False
        self._made = None

    def _make(self):
        if self._made is None:
            w = self.widgets
            dropdown = w.Dropdown(options=[(o, i) for i, o in enumerate(self.options)], value=0,
                                  description=self.what)
            if len(self.options) < 2:
                dropdown.layout.display = "none"
            initial = self.initial() if callable(self.initial) else self.initial
            pane = w.HTML(initial or markup.note("computed when this tab is opened"))
            self._made = (dropdown, pane)
            extra = list(self.extra()) if self.extra else []
            self.box.children = (w.HBox([dropdown, *extra]) if extra else dropdown, pane)
            dropdown.observe(lambda _: self.shown and self.fill(), names="value")
        return self._made

    @property
    def dropdown(self):
        return self._make()[0]

    @property
    def pane(self):
        return self._make()[1]

    def fill(self) -> None:
        pane = self.pane
        self.shown = True
        i = self.dropdown.value
        if i not in self.pages:
            try:
                with live(pane, self.working):
                    self.pages[i] = self.render(i)
            except Exception as exc:   # a missing tool or a failed compile: say so in the tab
                self.pages[i] = markup.note(f"{type(exc).__name__}: {exc}", markup.ERR)
        pane.value = self.pages[i]


def prefetch_tabs(view):
    """In a Jupyter kernel, start making what the SASS and Source tabs of ``view`` (a
    :class:`~cuda_magic.display.CellView`) show first: the first kernel's build, its one
    nvdisasm run and then its per-line cost, in a background thread
    (:func:`cuda_magic.inspect.lines.prefetch`), so that the tab opens at once.  A tab opened
    meanwhile waits for it; a failure is the tab's to say.  Called once the view's bundle is
    made (its static HTML, which shows SASS only where it was made, is then made already, so
    the saved page does not depend on how fast the thread was).  Returns the thread or None."""
    entries = view.content.entries
    if not entries or not frontend.in_kernel():
        return None
    from ..inspect.lines import prefetch
    return prefetch([entries[0][0].result])


def cell_widget(view):
    """Build the widget for a :class:`~cuda_magic.display.CellView` (recorded by :func:`shown`)."""
    import ipywidgets as widgets

    c = view.content
    entries = c.entries
    # one layout and one style for every static pane and box of this view (each widget would
    # otherwise make its own: two more widgets apiece)
    shared = {"layout": widgets.Layout()}
    header = widgets.HTML(markup.header(c), **shared)
    style = {"style": header.style, **shared}

    def sass_page(i: int) -> str:
        if not entries:
            return markup.note("no kernels in this cell")
        b, e = entries[i]
        return markup.sass(view.sass_of(b, e), c.source, b.result.inputs, name=e.name)
    names = [e.name for _, e in entries] or ["(no kernels)"]
    sass = LazyPanel(widgets, names, sass_page, "running nvdisasm", "kernel",
                     box=widgets.VBox(**shared))
    ptx = LazyPanel(widgets, [b.label for b in c.builds],
                    lambda i: markup.ptx(view.ptx_of(c.builds[i])), "getting the PTX", "build",
                    box=widgets.VBox(**shared))
    # The Source tab: the heat map (each line coloured by live registers, spills or
    # instructions; one nvdisasm run per build) when the tab is first opened.
    from .line_cost import METRIC_LABELS, heat_map, hottest_html, unavailable
    small = len(c.source) <= markup.HIGHLIGHT_BYTES and c.source.count("\n") < markup.HIGHLIGHT_LINES
    box = widgets.VBox(**shared)
    chosen = {"metric": "registers"}

    def heat_page(i: int) -> str:
        if not entries:
            return markup.source(c.source)
        if not small:                # a big cell: its source, capped; show(m, "lines") has figures
            return markup.note("a big cell: no heat map; cuda_magic.show(m, 'lines') prints the "
                             "cost of each line") + markup.source(c.source)
        try:
            return heat_map(c.source, view.lines_of(*entries[i]), chosen["metric"])
        except Exception as exc:     # no nvdisasm, no cubin: the plain source, and why
            return unavailable(exc) + markup.source(c.source)

    def metric_buttons():
        # a flex row: the "colour by" label on the buttons' line, centred on them (the widget's
        # own block layout put the label above the buttons)
        metric = widgets.ToggleButtons(options=[(label, m) for m, label in METRIC_LABELS.items()],
                                       value=chosen["metric"], style={"button_width": "auto"},
                                       description="colour by",
                                       layout=widgets.Layout(display="flex", flex_flow="row nowrap",
                                                             align_items="center"))

        def recolour(change):
            chosen["metric"] = change["new"]
            heat.pages.clear()
            if heat.shown:
                heat.fill()
        metric.observe(recolour, names="value")
        box.metric = metric
        return [metric]
    # the coloured source at once when the tab is made (a small cell); the heat map when opened
    heat = LazyPanel(widgets, names, heat_page, "reading the registers of each line (nvdisasm)",
                     "kernel", box=widgets.VBox(**shared), extra=metric_buttons,
                     initial=(lambda: markup.source(c.source)) if small else
                     markup.note("computed when this tab is opened (a big cell)"))
    # The Resources tab: ptxas figures and occupancy now; the hottest lines when first opened.
    hot = widgets.HTML(markup.note("hottest lines: computed when this tab is opened"), **style)

    def fill_hot() -> None:       # and the async pipeline of a TMA/wgmma/tcgen05 cell
        from . import pipeline as pipeline_view
        parts = []
        with live(hot, "reading the registers of each line (nvdisasm)"):
            for b, e in entries:
                try:
                    parts.append(hottest_html(e.name, view.lines_of(b, e)))
                except Exception as exc:
                    parts.append(unavailable(exc, e.name))
            try:                  # the pipeline table, or the deadlock check's warnings alone
                parts.append(pipeline_view.resources_html(c))
            except Exception as exc:
                parts.append(unavailable(exc, "the async pipeline"))
        hot.value = "".join(parts) or markup.note("no kernels in this cell")
    resources = widgets.VBox([widgets.HTML(markup.resources(c), **style), hot], **shared)
    children = [widgets.HTML(markup.config_of(c), **style), resources,
                widgets.HTML(markup.log(c), **style), sass.box, ptx.box, heat.box]
    tab = widgets.Tab(children=children, titles=TITLES, selected_index=0, **shared)
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
    box.children = (header, tab)
    box.tab, box.sass, box.ptx, box.heat, box.hot = tab, sass, ptx, heat, hot
    shown(box, view.obj)
    return box
