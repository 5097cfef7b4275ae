"""IPython glue: ``%%cuda``, ``%%cuda_header``, ``%%cuda_compare``, ``%%cuda_tune``,
``%cuda_config`` and how their results display.

The work happens in :mod:`cuda_magic.cell` (compiling), :mod:`cuda_magic.variants`
(variants and sweeps) and :mod:`cuda_magic.display` (views).  Here: ``magics`` (the
:class:`CudaMagics` class: parse, call, display), ``options`` (the options of the magic lines,
each declared once), ``args`` (parsing a magic line), ``session`` (``%cuda_config``'s
transaction over the session's config), ``compiling`` (the status line and the failed compile's
view around a magic's compiles), ``names`` (binding into the namespace) and ``formatters``
(IPython's display formatters for the result types).
"""

from __future__ import annotations

from . import formatters
from .magics import CudaMagics

__all__ = ["CudaMagics", "load"]


def load(ip) -> None:
    """Register the magics on ``ip``, and show each result type as its view (the formatters of
    :data:`cuda_magic.display.registry.VIEWS`)."""
    magics = CudaMagics(shell=ip)
    ip.register_magics(magics)
    formatters.register(ip, magics)
