"""How results show in an IPython shell: the display formatters of every result type, made from
the one table of views (:data:`cuda_magic.display.registry.VIEWS`), with the view options the
table names read from the magics' settings (``%config CudaMagics.static_sass``)."""

from __future__ import annotations

from ..display.registry import VIEWS, register_formatters


def register(ip, magics) -> None:
    """Show each result type of :data:`VIEWS` as its view in ``ip``; the options its entry
    names (``static_sass``) are read from ``magics`` each time a result is shown."""
    names = sorted({option for entry in VIEWS for option in entry.options})
    register_formatters(ip.display_formatter,
                        lambda: {option: getattr(magics, option) for option in names})
