"""Timeline buffers written on the host exactly as ``<cuda_magic/timeline.h>`` writes them on the
GPU, for the CPU tests: per warp region ``r = linear block * warps_per_block + warp``,
``capacity`` 16-byte slots (``<QII``: %globaltimer ns, FNV-1a id of the name,
``kind | lane << 8 | smid << 16``) and a u32 count of the events the warp attempted; slots past
the capacity are not written, the count goes on."""

from __future__ import annotations

import struct

KIND = {"begin": 0, "end": 1, "mark": 2}


def fnv1a(name: str) -> int:
    """The header's name id, written out here again (not the package's function)."""
    h = 0x811C9DC5
    for b in name.encode():
        h = ((h ^ b) * 0x01000193) % 2**32
    return h


def region(grid, block, where, warp) -> int:
    wpb = (block[0] * block[1] * block[2] + 31) // 32
    x, y, z = where
    return (x + grid[0] * (y + grid[1] * z)) * wpb + warp


def write(slots: bytearray, counts: bytearray, capacity: int, r: int, events) -> None:
    """Events ``(time ns, name or id, kind, sm[, lane])`` of region ``r``, appended as the
    header appends them (the count is read from ``counts``)."""
    for ev in events:
        time, name, kind, sm = ev[:4]
        lane = ev[4] if len(ev) > 4 else 0
        n = struct.unpack_from("<I", counts, 4 * r)[0]
        if n < capacity:
            ident = fnv1a(name) if isinstance(name, str) else name
            struct.pack_into("<QII", slots, (r * capacity + n) * 16, time, ident,
                             KIND[kind] | lane << 8 | sm << 16)
        struct.pack_into("<I", counts, 4 * r, n + 1)


def buffers(grid, block, capacity: int, warps: dict) -> tuple[bytes, bytes]:
    """(slots, counts) for ``warps``: ``{(block xyz, warp): [events]}`` (see :func:`write`)."""
    wpb = (block[0] * block[1] * block[2] + 31) // 32
    regions = grid[0] * grid[1] * grid[2] * wpb
    slots = bytearray(b"\xa5" * (regions * capacity * 16))     # garbage where nothing was written
    counts = bytearray(4 * regions)
    for (where, warp), events in warps.items():
        write(slots, counts, capacity, region(grid, block, where, warp), events)
    return bytes(slots), bytes(counts)
