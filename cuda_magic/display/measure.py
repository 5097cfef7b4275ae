"""The base of the views of measurements: :class:`MeasureView` gives ``show()``'s part, the
terminal's text and the notebook's HTML from a subclass's ``text()`` and ``html()``.  The views
live beside their renderings: a Timing's and a History's in :mod:`.timing`, a Profile's and a
Check's in :mod:`.reports`.  Which view shows which type is :data:`.registry.VIEWS`."""

from __future__ import annotations

from .frontend import Reprs

__all__ = ["MeasureView"]


class MeasureView(Reprs):
    """The view of a measurement: ``text()`` and ``html()`` from its subclass."""

    def __init__(self, obj):
        self.obj = obj

    def text(self) -> str:
        raise NotImplementedError

    def html(self) -> str:
        raise NotImplementedError

    def part(self, what: str = "summary", kernel: str | None = None, **_) -> str:
        """What ``show()`` prints: all of it, whatever the part."""
        return self.text().rstrip("\n")
