"""What :func:`cuda_magic.cell.parse_cell` reads from a cell: :class:`ParsedCell` (its own module
so that :mod:`.module` can name it without importing the package)."""

from __future__ import annotations

from dataclasses import dataclass

from .decls import KernelDecl

__all__ = ["ParsedCell"]


@dataclass(frozen=True)
class ParsedCell:
    """What the cell declares: its header layer and its kernels with their own layers."""

    source: str
    header: dict                       # the cell's //| layer (validated, flat)
    header_lines: dict                 # key -> cell line (the tune key's too)
    kernels: tuple[KernelDecl, ...]
    kernel_headers: dict               # kernel declaration line -> (layer, {key: line})
    tune: object = None                # the header's tune: value, for %%cuda_tune (unchecked)
    header_end: int = 0                # the last cell line of the cell header (0: none)
