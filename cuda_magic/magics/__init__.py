"""IPython glue: ``%%cuda``, ``%%cuda_header``, ``%%cuda_compare``, ``%%cuda_tune``,
``%cuda_config`` and how their results display.

The work happens in :mod:`cuda_magic.cell` (compiling), :mod:`cuda_magic.variants`
(variants and sweeps) and :mod:`cuda_magic.display` (views).  Here: ``commands`` (the
:class:`CudaMagics` class: parse, call, display), ``options`` (the options of the magic lines,
each declared once), ``args`` (parsing a magic line), ``session`` (``%cuda_config``'s
transaction over the session's config), ``compiling`` (the status line and the failed compile's
view around a magic's compiles), ``namespace`` (binding into the user namespace) and ``formatters``
(IPython's display formatters for the result types).
"""

from __future__ import annotations

from ..display import frontend as _frontend
from . import formatters
from .commands import CudaMagics

__all__ = ["CudaMagics", "load"]


def load(ip) -> None:
    """Register the magics on ``ip``, show each result type as its view (the formatters of
    :data:`cuda_magic.display.registry.VIEWS`), and close the widgets of a cell's views when the
    cell runs again (:mod:`cuda_magic.display.widget`)."""
    magics = CudaMagics(shell=ip)
    ip.register_magics(magics)
    formatters.register(ip, magics)
    ip.events.register("pre_run_cell", _cell_started)
    ip.events.register("post_run_cell", _cell_ended)


def _cell_started(info) -> None:
    _frontend.cell_started(getattr(info, "cell_id", None))


def _cell_ended(result) -> None:
    _frontend.cell_ended()
