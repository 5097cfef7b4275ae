"""Views of measurements: a Timing and a History (:mod:`cuda_magic.runtime.measure.bench`), a Profile
and a Check (:mod:`cuda_magic.runtime.nsight.reports`).  The measurements are plain data; these give
their text (terminal, ``show``) and HTML (notebooks, nbconvert) from :mod:`.timing` and
:mod:`.reports`.  Which view shows which type is :data:`.registry.VIEWS`."""

from __future__ import annotations

from . import reports, timing
from .frontend import Reprs

__all__ = ["MeasureView", "TimingView", "HistoryView", "ProfileView", "CheckView"]


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


class TimingView(MeasureView):
    """A :class:`~cuda_magic.runtime.measure.bench.Timing` (``k.bench``)."""

    def text(self) -> str:
        return timing.text(self.obj)

    def html(self) -> str:
        return timing.html(self.obj)


class HistoryView(MeasureView):
    """A kernel's :class:`~cuda_magic.runtime.measure.bench.History` (``cuda_magic.history``)."""

    def text(self) -> str:
        return timing.history_text(self.obj)

    def html(self) -> str:
        return timing.history_html(self.obj)


class ProfileView(MeasureView):
    """A :class:`~cuda_magic.runtime.nsight.reports.Profile` (``k.profile``); ``show(p, "lines")``
    prints its per-line metrics."""

    def text(self) -> str:
        return reports.profile_text(self.obj)

    def html(self) -> str:
        return reports.profile_html(self.obj)

    def lines(self, n: int | None = None) -> str:
        """The per-line metrics (all lines, or the ``n`` hottest)."""
        return reports.lines_text(self.obj, n)

    def part(self, what: str = "summary", kernel: str | None = None, **_) -> str:
        return (self.lines() if what == "lines" else self.text()).rstrip("\n")


class CheckView(MeasureView):
    """A :class:`~cuda_magic.runtime.nsight.reports.Check` (``k.check``)."""

    def text(self) -> str:
        return reports.check_text(self.obj)

    def html(self) -> str:
        return reports.check_html(self.obj)
