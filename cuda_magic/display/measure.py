"""Views of measurements: a Timing and a History (:mod:`cuda_magic.runtime.bench`), a Profile
and a Check (:mod:`cuda_magic.runtime.reports`).  The measurements are plain data; these give
their text (terminal, ``show``) and HTML (notebooks, nbconvert)."""

from __future__ import annotations

from ..config import printable
from . import profile, timing

__all__ = ["MeasureView", "KINDS"]

_RENDER = {
    ("cuda_magic.runtime.bench", "Timing"): (timing.text, timing.html),
    ("cuda_magic.runtime.bench", "History"): (timing.history_text, timing.history_html),
    ("cuda_magic.runtime.reports", "Profile"): (profile.profile_text, profile.profile_html),
    ("cuda_magic.runtime.reports", "Check"): (profile.check_text, profile.check_html),
}
KINDS = tuple(_RENDER)       # (module, class name): what IPython's formatters are given


def kind(obj) -> tuple[str, str] | None:
    key = (type(obj).__module__, type(obj).__name__)
    return key if key in _RENDER else None


class MeasureView:
    """The view of a Timing, History, Profile or Check."""

    def __init__(self, obj):
        self.obj = obj
        self._text, self._html = _RENDER[kind(obj)]

    def text(self) -> str:
        return self._text(self.obj)

    def html(self) -> str:
        return self._html(self.obj)

    def lines(self, n: int | None = None) -> str:
        """A Profile's per-line metrics (all lines, or the ``n`` hottest)."""
        return profile.lines_text(self.obj, n)

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(printable(self.text()))

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        return self.text()
