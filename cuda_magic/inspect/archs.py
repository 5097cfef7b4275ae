"""An arch list side by side: per kernel and arch, ptxas's figures and the theoretical occupancy.

``%%cuda --arch sm_80,sm_90a`` builds the cell once per arch; :func:`arch_rows` lays the
builds of each kernel out as rows (``Module.arch_matrix(block)`` returns them).  No tool
runs: registers, spills and shared memory come from ``ptxas -v``, occupancy from
:mod:`.occupancy`.  The SASS of two archs is compared with :mod:`.diff`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from .occupancy import Occupancy, OccupancyError, occupancy

__all__ = ["ArchRow", "arch_rows", "BLOCK_SIZES"]

BLOCK_SIZES = (32, 64, 128, 192, 256, 384, 512, 768, 1024)   # the view's block-size choices


@dataclass(frozen=True)
class ArchRow:
    """One kernel built for one arch.  The figures are None where ptxas gave none (a PTX build)."""

    kernel: str
    arch: str
    registers: int | None
    spill_stores: int | None       # bytes
    spill_loads: int | None        # bytes
    shared: int | None             # static shared memory, bytes
    occupancy: Occupancy | None    # at the matrix's block size
    bound: bool = False            # the build the notebook's kernel launches
    result: object = None          # the CompilationResult

    @property
    def spills(self) -> str:
        """``"0 / 0"``: spill stores / loads in bytes."""
        return "–" if self.spill_stores is None else f"{self.spill_stores} / {self.spill_loads}"


def arch_rows(items: Iterable[tuple[str, str, Mapping[str, object], str]], block: int = 256,
              shared: int = 0) -> list[ArchRow]:
    """``items``: ``(kernel, symbol, {arch: CompilationResult}, bound arch)`` per kernel; one
    :class:`ArchRow` per kernel and arch, in that order."""
    if isinstance(block, bool) or not isinstance(block, int) or not 1 <= block <= 1024:
        raise OccupancyError(f"block={block!r}: threads per block, an int from 1 to 1024", "block")
    rows = []
    for kernel, symbol, builds, bound in items:
        for arch, result in builds.items():
            res = result.resources.get(symbol)
            occ = None
            if res is not None:
                try:
                    occ = occupancy(arch, block, registers=res.registers,
                                    static_shared=res.shared, dynamic_shared=shared,
                                    barriers=res.barriers)
                except OccupancyError:      # an arch without published limits here
                    occ = None
            rows.append(ArchRow(kernel, arch,
                                None if res is None else res.registers,
                                None if res is None else res.spill_stores,
                                None if res is None else res.spill_loads,
                                None if res is None else res.shared,
                                occ, arch == bound, result))
    return rows
