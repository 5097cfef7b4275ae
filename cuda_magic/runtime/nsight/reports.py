"""The reports of the two tools, one import: :mod:`.ncu_report` (Nsight Compute,
:class:`Profile`) and :mod:`.sanitizer_report` (compute-sanitizer, :class:`Check`), and
:func:`short_dim`, how their messages and views write a grid or block.
"""

from __future__ import annotations

from .ncu_report import *  # noqa: F401,F403
from .ncu_report import __all__ as _ncu
from .sanitizer_report import *  # noqa: F401,F403
from .sanitizer_report import __all__ as _sanitizer

__all__ = [*_ncu, *_sanitizer, "short_dim"]


def short_dim(t) -> str:
    """A grid or block as one writes it: ``(256, 1, 1)`` -> ``256``, ``(8, 8, 1)`` ->
    ``(8, 8)``."""
    t = tuple(t)
    while len(t) > 1 and t[-1] == 1:
        t = t[:-1]
    return str(t[0]) if len(t) == 1 else str(t)
