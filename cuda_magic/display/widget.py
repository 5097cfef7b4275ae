"""The ipywidgets view: a header line over tabs Config, Resources, Log, SASS, PTX, Source.

SASS and PTX are computed the first time their tab is shown (nvdisasm takes
a few hundred milliseconds), with a "working" line meanwhile; a dropdown
picks the kernel (SASS) or the build (PTX) when there are several.
"""

from __future__ import annotations

from typing import Callable, Sequence

from . import html

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
        self.pane = widgets.HTML(html.note("computed when this tab is opened"))
        self.box = widgets.VBox([self.dropdown, self.pane])
        self.shown = False
        self.dropdown.observe(lambda _: self.shown and self.fill(), names="value")

    def fill(self) -> None:
        self.shown = True
        i = self.dropdown.value
        if i not in self.pages:
            self.pane.value = html.note(f"⏳ {self.working} …")
            try:
                self.pages[i] = self.render(i)
            except Exception as exc:   # a missing tool or a failed compile: say so in the tab
                self.pages[i] = html.note(f"{type(exc).__name__}: {exc}", html.ERR)
        self.pane.value = self.pages[i]


def cell_widget(view):
    """Build the widget for a :class:`~cuda_magic.display.CellView`."""
    import ipywidgets as widgets

    c = view.content
    entries = c.entries
    def sass_page(i: int) -> str:
        if not entries:
            return html.note("no kernels in this cell")
        return html.sass(view.sass_of(*entries[i]), c.source)
    sass = LazyPanel(widgets, [e.name for _, e in entries] or ["(no kernels)"], sass_page,
                     "running nvdisasm", "kernel")
    ptx = LazyPanel(widgets, [b.label for b in c.builds],
                    lambda i: html.ptx(view.ptx_of(c.builds[i])), "getting the PTX", "build")
    children = [widgets.HTML(html.config_of(c)), widgets.HTML(html.resources(c)),
                widgets.HTML(html.log(c)), sass.box, ptx.box, widgets.HTML(html.source(c.source))]
    tab = widgets.Tab(children=children, titles=TITLES, selected_index=0)
    lazy = {TITLES.index("SASS"): sass, TITLES.index("PTX"): ptx}

    def opened(change):
        panel = lazy.get(change["new"])
        if panel is not None:
            panel.fill()
    tab.observe(opened, names="selected_index")
    box = widgets.VBox([widgets.HTML(html.header(c)), tab])
    box.tab, box.sass, box.ptx = tab, sass, ptx   # for tests and users poking at it
    return box
