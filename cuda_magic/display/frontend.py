"""What the frontend can show, and a live status line in a widget pane.

:func:`in_kernel` (a Jupyter kernel: HTML and widgets can be shown), :func:`widgets_available`
(ipywidgets importable) and :func:`live` (a pane that counts the seconds while work runs) are
what every view module asks; they live here, below the views, so no view imports another's
package to ask.  So does the widgets' lifetime: a view's widgets, shown while a cell runs, are
recorded under that cell (:func:`shown`) and closed when it runs again (:func:`cell_started`;
without cell ids, by the ``--name`` of its magic: :func:`replaced`).  And what IPython asks every
view for, written once: :class:`Reprs` (and :class:`WidgetReprs` for a view with a widget).
"""

from __future__ import annotations

import threading
import time
import weakref
from contextlib import contextmanager

from ..errors import printable
from . import markup

__all__ = ["in_kernel", "widgets_available", "live", "close", "shown", "cell_started", "cell_ended",
           "running", "replaced", "named", "bundle", "Reprs", "WidgetReprs"]


def in_kernel() -> bool:
    """True inside a Jupyter kernel (a frontend that can show HTML and widgets)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return getattr(get_ipython(), "kernel", None) is not None


def widgets_available() -> bool:
    """True when ipywidgets imports."""
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def bundle(widget, html) -> dict:
    """A view's ``_repr_mimebundle_``: in a kernel with ipywidgets the widget ``widget()``
    with ``html()`` as its static HTML (what a saved notebook and nbconvert show); without
    ipywidgets that HTML alone; in terminal IPython nothing (``_repr_pretty_`` gives the
    text)."""
    if not in_kernel():
        return {}
    if not widgets_available():
        return {"text/html": html()}
    out = widget()._repr_mimebundle_()
    out.pop("text/plain", None)
    out["text/html"] = html()
    return out


class Reprs:
    """What IPython and ``show()`` ask a view for, from the view's ``text()`` and ``html()``:
    terminal IPython's ``_repr_pretty_`` (the text, with what the terminal cannot encode
    escaped), a notebook's ``_repr_html_`` (the HTML), ``repr()`` (the text) and ``part()``
    (what ``show()`` prints: the whole text; a view with parts overrides it)."""

    def part(self, what: str = "summary", kernel: str | None = None, **_) -> str:
        """What ``show()`` prints: all of it, whatever the part."""
        return self.text()

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(printable(self.text()))

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        return self.text()


class WidgetReprs(Reprs):
    """:class:`Reprs` for a view with a ``widget()`` too: a notebook shows the widget, with
    ``html()`` as its static HTML (:func:`bundle`)."""

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return bundle(self.widget, self.html)


@contextmanager
def live(pane, what: str, every: float = 0.25):
    """While the block runs, ``pane`` (an HTML widget) reads "what … 1.2 s" (plain text: an emoji renders as a box without an emoji font), the time
    counted by a timer thread (widget updates reach the browser from any thread)."""
    started = time.monotonic()
    pane.value = markup.note(f"{what} …")
    done = threading.Event()

    def count():
        while not done.wait(every):
            pane.value = markup.note(f"{what} … {time.monotonic() - started:.1f} s")
    timer = threading.Thread(target=count, name="cuda-magic status", daemon=True)
    timer.start()
    try:
        yield
    finally:
        done.set()
        timer.join()


# -- lifetime -----------------------------------------------------------------------------------

_LOCK = threading.Lock()
_SHOWN: dict[object, list] = {}      # a cell (its id, or ("name", NAME)) -> the views it showed
_TAGS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # result -> ("name", NAME)
_RUNNING: list = [None]              # the id of the cell running now (None: none, or no id)


def close(widget) -> None:
    """Close ``widget`` and every widget under it (children, layouts, styles), each once."""
    from ipywidgets import Widget
    seen, todo = set(), [widget]
    while todo:
        w = todo.pop()
        if id(w) in seen or not isinstance(w, Widget):
            continue
        seen.add(id(w))
        for name in w.keys:
            value = getattr(w, name, None)
            if isinstance(value, Widget):
                todo.append(value)
            elif isinstance(value, (tuple, list)):
                todo.extend(v for v in value if isinstance(v, Widget))
        w.close()


def _close_shown(key) -> None:
    with _LOCK:
        views = _SHOWN.pop(key, [])
    for w in views:
        close(w)


def cell_started(cell_id: str | None) -> None:
    """A cell starts running (IPython's ``pre_run_cell``): the frontend replaces its output, so
    the widgets of the views it showed last time are closed; views shown now are its own."""
    _RUNNING[0] = cell_id
    if cell_id is not None:
        _close_shown(cell_id)


def cell_ended() -> None:
    """The cell finished (IPython's ``post_run_cell``)."""
    _RUNNING[0] = None


def running() -> str | None:
    """The id of the cell running now, if the frontend gave one."""
    return _RUNNING[0]


def replaced(name: str) -> None:
    """A magic with ``--name NAME`` starts where the frontend gives no cell ids: close the
    widgets of the views of the last result of that name (:func:`named`)."""
    _close_shown(("name", name))


def named(result, name: str) -> None:
    """``result`` is the one of ``--name NAME``: its views are recorded under that name where the
    frontend gives no cell ids."""
    try:
        _TAGS[result] = ("name", name)
    except TypeError:       # not weakly referable: its views are not recorded
        pass


def shown(widget, result) -> None:
    """Record ``widget``, a view of ``result`` being shown, under the cell running now (or the
    ``--name`` its magic gave ``result``), to be closed when that cell runs again."""
    try:
        key = _RUNNING[0] if _RUNNING[0] is not None else _TAGS.get(result)
    except TypeError:
        key = None
    if key is not None:
        with _LOCK:
            _SHOWN.setdefault(key, []).append(widget)
