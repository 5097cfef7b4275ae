"""Theoretical occupancy from ptxas figures and per-architecture limits.

:func:`occupancy` follows the rules of the CUDA toolkit's ``cuda_occupancy.h``
(``cudaOccMaxActiveBlocksPerMultiprocessor``) for one block size, with the default
shared-memory carveout (no preference) and the kernel opted in to more than 48 KB
of dynamic shared memory when it asks for it (cuda-magic raises the kernel's limit
at launch).  Resident blocks per SM is the smallest of what each limit allows:

``registers``
    Registers are allocated per warp: ``registers * 32`` rounded up to the register
    allocation unit (256).  Each of the 4 sub-partitions holds
    ``(registers_per_sm / 4) // registers_per_warp`` warps, so the SM holds 4 times
    that, and ``warps_per_sm // warps_per_block`` blocks.  0 when the block's
    registers exceed the per-block limit (also checked, as the hardware does, with
    the block's warps rounded up to a multiple of 4) or ``registers > 255``.
``shared memory``
    ``static + reserved + dynamic`` rounded up to the allocation unit.  0 when that
    exceeds the per-block limit (48 KB, or the opt-in maximum when ``static +
    dynamic`` is over 48 KB; plus the driver's reserved 1 KB on 8.0+).  Otherwise
    ``shared_per_sm // allocated`` where ``shared_per_sm`` is the default carveout
    (the largest supported configuration).
``barriers``
    From 9.0 on, when the kernel uses barriers:
    ``max_blocks_per_sm * barrier_factor // barriers`` (``cuda_occupancy.h`` applies
    this limit to compute capability 9.0 and later only).
``warps``
    ``max_warps_per_sm // ceil(block / 32)``.
``blocks``
    ``max_blocks_per_sm``.
``block size``
    0 when the block has no threads or more than 1024; nothing else is then named.

A limit that does not apply (no registers, no shared memory, no barriers) allows
any number of blocks and is shown as ``None``.

Per-architecture limits (:data:`ARCH_LIMITS`; KB = 1024 bytes).  Every row has
64K 32-bit registers per SM and per block, at most 255 registers per thread,
registers allocated 256 per warp over 4 sub-partitions, 1024 threads per block,
warps of 32 and a default per-block shared-memory limit of 48 KB::

    arch    warps blocks  smem/SM  opt-in/blk  unit  reserved  barrier  carveouts (KB)
            /SM   /SM     (KB)     (KB)        (B)   (B)       factor
    sm_70   64    32       96       96         256   0         2        0 8 16 32 64 96
    sm_72   64    32       96       96         256   0         2        0 8 16 32 64 96
    sm_75   32    16       64       64         256   0         2        32 64
    sm_80   64    32      164      163         128   1024      2        0 8 16 32 64 100 132 164
    sm_86   48    16      100       99         128   1024      1        0 8 16 32 64 100
    sm_87   48    16      164      163         128   1024      1        0 8 16 32 64 100 132 164
    sm_89   48    24      100       99         128   1024      1        0 8 16 32 64 100
    sm_90   64    32      228      227         128   1024      2        0 8 ... 164 196 228
    sm_100  64    32      228      227         128   1024      2        0 8 ... 164 196 228
    sm_103  64    32      228      227         128   1024      2        0 8 ... 164 196 228
    sm_120  48    24      100       99         128   1024      1        0 8 16 32 64 100
    sm_121  48    24      100       99         128   1024      1        0 8 16 32 64 100

An arch's ``a``/``f`` suffix (``sm_90a``, ``sm_100f``) selects its base row;
``compute_XY`` is read as ``sm_XY``.

Not modelled: partitioned global caching (5.x/6.x only), the cache-config /
carveout preference other than the default, and Blackwell's "virtual resources"
limit (``cuda_occupancy.h`` takes the count from the function's attributes, which
ptxas does not report).
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Iterable, Mapping

from ..errors import OccupancyError, OccupancyTypeError

__all__ = [
    "ARCH_LIMITS", "ArchLimits", "Occupancy", "OccupancyError", "OccupancyTypeError",
    "arch_limits", "occupancy", "occupancy_table",
]

KB = 1024

# Order in which tied limiters are named.
_ORDER = ("registers", "shared memory", "barriers", "warps", "blocks")


@dataclass(frozen=True)
class ArchLimits:
    """One compute capability's limits (bytes for shared memory)."""

    name: str                        # "sm_90"
    compute_capability: tuple[int, int]
    max_warps_per_sm: int
    max_blocks_per_sm: int
    shared_per_sm: int               # max carveout
    shared_configs_kb: tuple[int, ...]   # supported carveouts, ascending
    shared_per_block_optin: int
    shared_unit: int                 # shared allocation granularity
    shared_reserved: int             # reserved per block by the driver
    barrier_factor: int              # barriers per SM = max_blocks_per_sm * factor
    shared_per_block: int = 48 * KB  # without opt-in
    registers_per_sm: int = 65536
    registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    register_unit: int = 256         # registers allocated per warp in multiples of this
    sub_partitions: int = 4
    max_threads_per_block: int = 1024
    warp_size: int = 32

    @property
    def barriers_limit(self) -> bool:
        """Whether the barrier count limits occupancy (9.0+, as cuda_occupancy.h has it)."""
        return self.compute_capability >= (9, 0)

    def align_shared(self, size: int) -> int | None:
        """The smallest supported carveout holding ``size`` bytes, or None when none does."""
        for kb in self.shared_configs_kb:
            if size <= kb * KB:
                return kb * KB
        return None


# Sources:
# - CUDA C++ Programming Guide, "Technical Specifications per Compute Capability":
#   max warps per SM, shared memory per SM and max per block (opt-in), registers
#   per SM / per block / per thread (64K / 64K / 255), 1024 threads per block.
# - CUDA toolkit 13 cuda_occupancy.h: cudaOccMaxBlocksPerMultiprocessor (max blocks
#   per SM), cudaOccAlignUpShmemSizeVoltaPlus (carveouts), cudaOccSMemAllocation-
#   Granularity (256 B on 7.x, 128 B on 8.0+), cudaOccRegAllocationGranularity (256),
#   cudaOccSubPartitionsPerMultiprocessor (4), cudaOccMaxBlocksPerSMBlockBarrierLimit
#   (barrier factor), cudaOccSMemPerBlock (driver's reserved shared memory per block
#   counted from 8.0; its size, 1 KB, is cudaDeviceProp::reservedSharedMemPerBlock).
_VOLTA = (0, 8, 16, 32, 64, 96)
_TURING = (32, 64)
_GA100 = (0, 8, 16, 32, 64, 100, 132, 164)
_GA10X = (0, 8, 16, 32, 64, 100)
_HOPPER = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)


def _row(cc: str, warps: int, blocks: int, smem_kb: int, optin_kb: int, configs: tuple[int, ...],
         barrier_factor: int) -> ArchLimits:
    major, minor = int(cc[:-1]), int(cc[-1])
    ampere_plus = major >= 8
    return ArchLimits(
        name=f"sm_{cc}", compute_capability=(major, minor), max_warps_per_sm=warps,
        max_blocks_per_sm=blocks, shared_per_sm=smem_kb * KB, shared_configs_kb=configs,
        shared_per_block_optin=optin_kb * KB, shared_unit=128 if ampere_plus else 256,
        shared_reserved=1 * KB if ampere_plus else 0, barrier_factor=barrier_factor)


#: Limits by base arch name ("sm_90").
ARCH_LIMITS: Mapping[str, ArchLimits] = MappingProxyType({r.name: r for r in (
    #    cc     warps blocks smem optin carveouts barrier factor
    _row("70",  64,   32,    96,  96,   _VOLTA,   2),
    _row("72",  64,   32,    96,  96,   _VOLTA,   2),
    _row("75",  32,   16,    64,  64,   _TURING,  2),
    _row("80",  64,   32,   164, 163,   _GA100,   2),
    _row("86",  48,   16,   100,  99,   _GA10X,   1),
    _row("87",  48,   16,   164, 163,   _GA100,   1),
    _row("89",  48,   24,   100,  99,   _GA10X,   1),
    _row("90",  64,   32,   228, 227,   _HOPPER,  2),
    _row("100", 64,   32,   228, 227,   _HOPPER,  2),
    _row("103", 64,   32,   228, 227,   _HOPPER,  2),
    _row("120", 48,   24,   100,  99,   _GA10X,   1),
    _row("121", 48,   24,   100,  99,   _GA10X,   1),
)})

_ARCH = re.compile(r"(?:sm|compute)_(\d+)[af]?")


def arch_limits(arch: str) -> ArchLimits:
    """The limits row for ``arch`` ("sm_90a" -> the sm_90 row); an error names unknown ones."""
    if not isinstance(arch, str):
        raise OccupancyTypeError(f"arch must be a string such as 'sm_90a', not {type(arch).__name__}",
                                 "arch")
    m = _ARCH.fullmatch(arch.strip().lower())
    row = ARCH_LIMITS.get(f"sm_{m.group(1)}") if m else None
    if row is None:
        raise OccupancyError(f"no occupancy limits for arch {arch!r}; known: "
                             f"{', '.join(ARCH_LIMITS)} (an a/f suffix selects the base row)",
                             "arch")
    return row


@dataclass(frozen=True)
class Occupancy:
    """Theoretical occupancy of one kernel at one block size on one arch."""

    arch: str                  # as given ("sm_90a")
    block: int                 # threads per block
    registers: int             # per thread
    static_shared: int         # bytes
    dynamic_shared: int        # bytes
    blocks: int                # resident blocks per SM
    warps: int                 # active warps per SM (blocks x warps per block)
    max_warps: int             # per SM
    occupancy: float           # warps / max_warps, 0..1
    limiter: str               # binding limit(s), e.g. "registers" or "warps and blocks"
    limits: Mapping[str, int | None] = field(hash=False)   # blocks each limit allows; None: any
    barriers: int = 0
    base_arch: str = ""        # the row used ("sm_90")
    shared_allocated: int = 0  # bytes per block, reserved and rounding included
    registers_allocated: int = 0   # per block, after per-warp rounding
    driver: int | None = None  # blocks/SM from the driver (cuOccupancyMaxActiveBlocksPerMultiprocessor)

    @property
    def percent(self) -> str:
        pct = 100 * self.occupancy
        return f"{pct:.0f}%" if pct == round(pct) else f"{pct:.1f}%"

    def __str__(self) -> str:
        driver = "" if self.driver is None else f"; driver: {self.driver} blocks/SM"
        return (f"{self.block} threads: {self.blocks} blocks/SM, {self.warps}/{self.max_warps} warps, "
                f"{self.percent} ({self.limiter}){driver}")


def threads(block) -> int:
    """Threads per block from a block as a launch takes it: an int, or 1 to 3 ints
    (``(32, 32)`` is 1024 threads)."""
    if isinstance(block, (tuple, list)):
        if not 1 <= len(block) <= 3:
            raise OccupancyError(f"block {tuple(block)!r}: give 1 to 3 dimensions, as a launch "
                                 f"takes them", "block")
        return math.prod(_count("block", d, minimum=1) for d in block)
    return _count("block", block)


def _count(name: str, value, *, minimum: int = 0) -> int:
    if isinstance(value, bool):
        raise OccupancyTypeError(f"{name} must be an integer, not bool", name)
    try:
        n = operator.index(value)
    except TypeError:
        raise OccupancyTypeError(f"{name} must be an integer, not {type(value).__name__} "
                                 f"({value!r})", name) from None
    if n < minimum:
        raise OccupancyError(f"{name} must be {'positive' if minimum else 'non-negative'}, "
                             f"got {n}", name)
    return n


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def _registers_limit(row: ArchLimits, registers: int, warps_per_block: int) -> tuple[int | None, int]:
    """Blocks per SM the register file allows, and registers allocated per block."""
    per_warp = _round_up(registers * row.warp_size, row.register_unit)
    per_block = per_warp * warps_per_block
    # The hardware check assumes allocation to all sub-partitions at once.
    assumed = per_warp * _round_up(warps_per_block, row.sub_partitions)
    if (assumed > row.registers_per_block or per_block > row.registers_per_block
            or registers > row.max_registers_per_thread):
        return 0, per_block
    if per_warp == 0:
        return None, per_block
    warps_per_sub = (row.registers_per_sm // row.sub_partitions) // per_warp
    return (warps_per_sub * row.sub_partitions) // warps_per_block, per_block


def _shared_limit(row: ArchLimits, static: int, dynamic: int) -> tuple[int | None, int]:
    """Blocks per SM shared memory allows, and bytes allocated per block."""
    allocated = _round_up(static + row.shared_reserved + dynamic, row.shared_unit)
    opted_in = static + dynamic > row.shared_per_block
    per_block = (row.shared_per_block_optin if opted_in else row.shared_per_block) + row.shared_reserved
    if allocated > per_block:
        return 0, allocated
    per_sm = row.align_shared(row.shared_per_sm)       # default carveout: the maximum
    if per_sm is None or per_sm < allocated:
        per_sm = row.align_shared(allocated)
        if per_sm is None:
            return 0, allocated
    if allocated == 0:
        return None, allocated
    return per_sm // allocated, allocated


def occupancy(arch: str, block: int, *, registers: int, static_shared: int = 0,
              dynamic_shared: int = 0, barriers: int = 0) -> Occupancy:
    """Theoretical occupancy of a kernel launched with ``block`` threads per block (an int, or
    1 to 3 dimensions as a launch takes them: ``(32, 32)``).

    ``registers`` per thread, ``static_shared`` bytes and ``barriers`` as ptxas reports
    them (:class:`~cuda_magic.compile.ptxas.Resources`), ``dynamic_shared`` bytes per
    launch.  See the module docstring for the rules.
    """
    row = arch_limits(arch)
    block = threads(block)
    registers = _count("registers", registers)
    static_shared = _count("static_shared", static_shared)
    dynamic_shared = _count("dynamic_shared", dynamic_shared)
    barriers = _count("barriers", barriers)

    warps_per_block = math.ceil(block / row.warp_size)
    block_ok = 1 <= block <= row.max_threads_per_block

    regs_blocks, regs_alloc = _registers_limit(row, registers, warps_per_block) if block else (None, 0)
    smem_blocks, smem_alloc = _shared_limit(row, static_shared, dynamic_shared)
    bar_blocks = (row.max_blocks_per_sm * row.barrier_factor // barriers
                  if barriers and row.barriers_limit else None)
    limits: dict[str, int | None] = {
        "registers": regs_blocks,
        "shared memory": smem_blocks,
        "barriers": bar_blocks,
        "warps": row.max_warps_per_sm // warps_per_block if block else None,
        "blocks": row.max_blocks_per_sm,
        "block size": None if block_ok else 0,
    }
    if block_ok:
        blocks = min(v for v in limits.values() if v is not None)
        limiter = " and ".join(k for k in _ORDER if limits[k] == blocks)
    else:
        blocks, limiter = 0, "block size"
    warps = blocks * warps_per_block
    return Occupancy(
        arch=arch, block=block, registers=registers, static_shared=static_shared,
        dynamic_shared=dynamic_shared, blocks=blocks, warps=warps,
        max_warps=row.max_warps_per_sm, occupancy=warps / row.max_warps_per_sm, limiter=limiter,
        limits=MappingProxyType(limits), barriers=barriers, base_arch=row.name,
        shared_allocated=smem_alloc, registers_allocated=regs_alloc)


def occupancy_table(arch: str, *, registers: int, static_shared: int = 0, dynamic_shared: int = 0,
                    barriers: int = 0, blocks: Iterable[int] = (32, 64, 128, 256, 512, 1024),
                    ) -> list[Occupancy]:
    """:func:`occupancy` for each block size in ``blocks``."""
    if isinstance(blocks, (str, bytes)) or not isinstance(blocks, Iterable):
        raise OccupancyTypeError(f"blocks must be a sequence of block sizes, not "
                                 f"{type(blocks).__name__}", "blocks")
    return [occupancy(arch, b, registers=registers, static_shared=static_shared,
                      dynamic_shared=dynamic_shared, barriers=barriers) for b in blocks]


BLOCKS = (32, 64, 128, 256, 512, 1024)     # the block sizes the views show


def of_result(result, symbol: str, block: int, shared: int = 0) -> Occupancy:
    """The occupancy of kernel ``symbol`` of a compile result (its ptxas figures and arch) at
    ``block`` threads and ``shared`` bytes of dynamic shared memory."""
    res = result.resources.get(symbol)
    if res is None:
        raise OccupancyError(f"no ptxas figures for {symbol} (a {result.format} build"
                             + (": ptxas runs at load time" if result.format == "ptx" else
                                ": add -v to the ptxas flags") + ")", "kernel")
    return occupancy(result.arch, block, registers=res.registers, static_shared=res.shared,
                     dynamic_shared=shared, barriers=res.barriers)
