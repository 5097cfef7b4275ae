"""The one table of what has a view: each result type the package returns, the view that shows
it, and how IPython's formatters show it.

``view()`` and ``show()`` look results up here, and ``%load_ext cuda_magic`` registers IPython's
formatters from here (:func:`register_formatters`), so showing a new result type is one
:class:`View` entry in :data:`VIEWS` plus its view class.  Types and views are named as
strings (``module``, ``name``; ``"module:Class"``): nothing is imported until a result is shown,
so a Comparison or a Tuning (NumPy) costs nothing at ``%load_ext``.  ``tests/display/test_views.py``
checks the table against the package (every result type has an entry, every entry resolves,
each view has what its entry says) and against the formatters a shell gets.

A view has ``text()`` (terminal IPython), ``part(what, kernel, raw=, block=)`` (the text
``show()`` prints) and ``_repr_mimebundle_`` or ``_repr_html_`` (notebooks, nbconvert); a view
class writes ``text()`` and ``html()`` and takes IPython's methods from :class:`.frontend.Reprs`
(with a ``widget()``: :class:`.frontend.WidgetReprs`).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass

__all__ = ["View", "VIEWS", "SESSION_VIEWS", "RICH", "lookup", "for_type", "view_class", "keywords",
           "make", "is_view",
           "formatters", "register_formatters"]

RICH = ("mimebundle", "text/html")      # the IPython formatter that shows a view in a notebook


@dataclass(frozen=True)
class View:
    """One result type and its view.

    ``module``/``name``: where the type is defined (its ``__module__`` and ``__qualname__``;
    subclasses are found through the MRO); ``view``: ``"module:Class"``, called as
    ``Class(obj, **options)``; ``rich``: the formatter for notebooks (``mimebundle`` for
    views that pick between a widget and HTML, ``text/html`` for HTML alone); ``options``:
    the ``CudaMagics`` settings the magics pass to the view (``%config CudaMagics.static_sass``);
    ``label``: how errors name the type."""

    module: str
    name: str
    view: str
    rich: str
    label: str
    options: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.module, self.name)


_CELL = "cuda_magic.display:CellView"

VIEWS: tuple[View, ...] = (
    View("cuda_magic.cell.module", "Module", _CELL, "mimebundle", "a %%cuda Module",
         ("static_sass",)),
    View("cuda_magic.compile.compiler", "CompilationResult", _CELL, "mimebundle",
         "a CompilationResult", ("static_sass",)),
    View("cuda_magic.errors", "CompileError", "cuda_magic.display:ErrorView",
         "text/html", "a CompileError"),
    View("cuda_magic.variants.comparison", "Comparison", "cuda_magic.display.compare:CompareView",
         "mimebundle", "a %%cuda_compare Comparison"),
    View("cuda_magic.correctness.verdict", "Verdict", "cuda_magic.display.verdict:VerdictView",
         "text/html", "a verify() Verdict"),
    View("cuda_magic.variants.tune", "Tuning", "cuda_magic.display.tune:TuneView", "mimebundle",
         "a %%cuda_tune Tuning"),
    View("cuda_magic.exports.exporting", "Exported", "cuda_magic.display.export:ExportView",
         "text/html", "an export() Exported"),
    View("cuda_magic.runtime.measure.timeline.events", "Timeline",
         "cuda_magic.display.timeline:TimelineView", "mimebundle", "a k.timeline Timeline"),
    View("cuda_magic.runtime.measure.bench", "Timing", "cuda_magic.display.timing:TimingView", "text/html",
         "a Timing"),
    View("cuda_magic.runtime.measure.ab", "AB", "cuda_magic.display.timing:ABView", "text/html",
         "an A/B verdict, an AB"),
    View("cuda_magic.runtime.measure.history", "History", "cuda_magic.display.timing:HistoryView", "text/html",
         "a History"),
    View("cuda_magic.runtime.remote.across", "Across", "cuda_magic.display.remote:AcrossView",
         "text/html", "an on= Across"),
    View("cuda_magic.runtime.nsight.ncu_report", "Profile", "cuda_magic.display.reports:ProfileView", "text/html",
         "a Profile"),
    View("cuda_magic.runtime.nsight.sanitizer_report", "Check", "cuda_magic.display.reports:CheckView", "text/html",
         "a Check"),
)

#: Views of the session rather than of a result (``%cuda_config``, ``%%cuda_header``): the magics
#: make them directly; ``view()`` and ``show()`` take them as they are.
SESSION_VIEWS: tuple[str, ...] = ("cuda_magic.display:ConfigView", "cuda_magic.display:HeaderView")

_BY_KEY = {v.key: v for v in VIEWS}
_VIEW_SPECS = frozenset(v.view for v in VIEWS) | frozenset(SESSION_VIEWS)


def _spec(cls) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def lookup(obj) -> View | None:
    """The entry for ``obj``'s type (or the nearest base class that has one), else None."""
    return for_type(type(obj))


def for_type(cls: type) -> View | None:
    """The entry for ``cls`` (or its nearest base class that has one), else None."""
    for cls in cls.__mro__:
        entry = _BY_KEY.get((cls.__module__, cls.__qualname__))
        if entry is not None:
            return entry
    return None


def is_view(obj) -> bool:
    """True for a view (``view(obj)`` returns it as it is)."""
    return any(_spec(cls) in _VIEW_SPECS for cls in type(obj).__mro__)


def view_class(entry: View) -> type:
    """The entry's view class (its module imported now)."""
    module, _, name = entry.view.partition(":")
    return getattr(importlib.import_module(module), name)


def keywords(cls: type) -> tuple[str, ...]:
    """The keyword-only options a view class takes (``Class(obj, *, ...)``), in order."""
    params = inspect.signature(cls.__init__).parameters.values()
    return tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY)


def make(entry: View, obj, options: dict | None = None):
    """``obj``'s view; ``options`` go to a view that takes some (its entry's ``options``)."""
    cls = view_class(entry)
    return cls(obj, **options) if entry.options and options else cls(obj)


def _taken(entry: View, options: dict) -> dict:
    return {k: v for k, v in options.items() if k in entry.options}


def formatters(options=dict):
    """``(format, module, name, function)`` for each IPython formatter the table asks for:
    ``text/plain`` for every entry (the view's text), then its ``rich`` one.  ``options()``
    gives the settings passed to views that take them (read at display time)."""
    out = []
    for e in VIEWS:
        out.append(("text/plain", e.module, e.name,
                    lambda obj, p, cycle, e=e: p.text(make(e, obj).text())))
        if e.rich == "mimebundle":
            out.append((e.rich, e.module, e.name,
                        lambda obj, e=e: make(e, obj, _taken(e, options()))._repr_mimebundle_()))
        else:
            out.append((e.rich, e.module, e.name,
                        lambda obj, e=e: make(e, obj, _taken(e, options()))._repr_html_()))
    return out


def register_formatters(display_formatter, options=dict) -> None:
    """Show every result type of :data:`VIEWS` as its view in an IPython shell
    (``ip.display_formatter``); by name, so nothing is imported until a result is shown."""
    for fmt, module, name, function in formatters(options):
        target = (display_formatter.mimebundle_formatter if fmt == "mimebundle"
                  else display_formatter.formatters[fmt])
        target.for_type_by_name(module, name, function)
