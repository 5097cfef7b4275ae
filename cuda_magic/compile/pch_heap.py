"""Where NVRTC's precompiled-header heap lives, so one process's PCH serves the next.

A PCH is a snapshot of NVRTC's PCH heap, pointers included, so NVRTC uses one only when its
heap sits at the same virtual address as in the process that made it (otherwise warning #20282,
"incompatible precompiled header (PCH) heap allocation address").  NVRTC maps the heap with
``mmap(NULL, size)`` at the first compile that creates or uses a PCH (and again after
``nvrtcSetPCHHeapSize``), and keeps it for the life of the process.  Under address-space
randomisation that address differs in every process, so a PCH written by yesterday's notebook,
or by the notebook beside this one, was refused (measured: NVRTC 13.0, CPU machine).  (That
compile also lifts the process's stack limit to unlimited, so the processes it starts
afterwards get Linux's legacy bottom-up address-space layout.)

:func:`place` puts the heap at :data:`ADDRESS` in every process: it reserves (``PROT_NONE``,
nothing committed) the free space next to ``[ADDRESS, ADDRESS + size)`` and the middle of every
other free gap large enough to hold the heap (less than a heap is left free at their ends, so
other allocations still find room), checks with a trial mapping of its own that
``mmap(NULL, size)`` now lands at ``ADDRESS`` (searching down or up; a Linux 6.7+ kernel aligns
such a mapping to 2 MiB and needs 1 MiB free on each side), asks NVRTC for its heap
(``allocate``: a compile that opens a PCH that does not exist, ~5 ms), and drops the
reservations, all in a few milliseconds.  Nothing already mapped is touched
(``MAP_FIXED_NOREPLACE``); afterwards ``/proc/self/maps`` says whether the heap landed there.

The result is a token naming the heap for :mod:`.pch`'s file names: ``"600000000000+512M"``
when placed (shared by every process), or ``"process 1234.1"`` when it could not be (not
Linux, a ``ulimit -v`` too small for the reservations, the address taken): PCHs are then made
and used by this process alone, under names no other process looks up (:mod:`.pch` says so
once).
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from typing import Callable

__all__ = ["ADDRESS", "place", "token"]

ADDRESS = 0x6000_0000_0000      # 96 TiB: above a PIE program and its brk heap (~85 TiB), below
_PAGE = 4096                    # the shared libraries and mmap area (~127 TiB), on x86-64 and
_LOCK = threading.Lock()        # aarch64 with 48-bit addresses
_state: dict = {"size": None, "token": None, "n": 0}


def token() -> str | None:
    """The token of the heap placed last (None before :func:`place`)."""
    return _state["token"]


def place(size: int, resize: Callable[[int], object], allocate: Callable[[], object]) -> str:
    """Have NVRTC's PCH heap of ``size`` bytes mapped at :data:`ADDRESS`: ``resize(size)`` sets
    its size (``nvrtcSetPCHHeapSize``: the old heap is freed), ``allocate()`` makes NVRTC map it.
    Returns the heap's token; cheap once a heap of that size is placed."""
    with _LOCK:
        if _state["size"] == size and _state["token"] is not None:
            return _state["token"]
        resize(size)
        held = _steer(ADDRESS, size) if sys.platform.startswith("linux") else None
        try:
            allocate()
        finally:
            _release(held or ())
        placed = held is not None and _covered(ADDRESS, ADDRESS + size)
        _state["n"] += 1
        _state["size"] = size
        _state["token"] = (f"{ADDRESS:x}+{size >> 20}M" if placed
                           else f"process {os.getpid()}.{_state['n']}")
        return _state["token"]


# ---- the address space -------------------------------------------------------------------------

def _mapped() -> list[tuple[int, int]]:
    """(start, end) of each mapping of this process in user space, in address order."""
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 5 and fields[5] == "[vsyscall]":     # above user space
                continue
            lo, hi = fields[0].split("-")
            out.append((int(lo, 16), int(hi, 16)))
    return sorted(out)


def _covered(lo: int, hi: int) -> bool:
    """Whether ``[lo, hi)`` is mapped from ``lo`` on without a gap (the heap may show as several
    mappings, or merged with a neighbour)."""
    at = None
    for start, end in _mapped():
        if at is None and start <= lo < end:
            at = end
        elif at is not None and start == at:
            at = end
        if at is not None and at >= hi:
            return True
    return False


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


_NOREPLACE, _PRIVATE, _ANONYMOUS, _NORESERVE = 0x100000, 0x02, 0x20, 0x4000
_PAD = 1 << 20      # Linux 6.7+ aligns large anonymous mappings to 2 MiB and so asks for 2 MiB more


def _steer(address: int, size: int) -> list[tuple[int, int]] | None:
    """Reserve address space so that the next ``mmap(NULL, size)`` returns ``address``; the
    reservations, or None (nothing held) when that cannot be had.  Two layouts are tried, each
    checked with a trial mapping of our own: the target alone free, or with 1 MiB free on each
    side (a kernel that aligns the mapping to 2 MiB needs a run 2 MiB longer, and still puts it
    at ``address``, searching down or up)."""
    try:
        libc = _libc()
        for pad in (0, _PAD):
            held = _reserve(libc, address, size, pad)
            if held is None:
                return None
            got = libc.mmap(None, size, 0, _PRIVATE | _ANONYMOUS | _NORESERVE, -1, 0)
            if got not in (None, ctypes.c_void_p(-1).value):
                libc.munmap(got, size)
            if got == address:
                return held
            _release(held)
    except (OSError, AttributeError):
        pass
    return None


def _reserve(libc, address: int, size: int, pad: int) -> list[tuple[int, int]] | None:
    """Reserve (``PROT_NONE``, nothing committed) all free space near the target
    ``[address, address + size)`` except ``pad`` bytes on each side of it, and the middle of every
    other gap that could hold ``size`` bytes, keeping less than ``size`` free at each end so other
    mappings still find room.  None (nothing reserved) when the target is not free or a
    reservation fails."""
    spans = [(0, 0), *_mapped()]      # from address 0 (the lowest pages are refused: kept free)
    lo_t, hi_t = address - pad, address + size + pad
    if any(lo < hi_t and hi > lo_t for lo, hi in spans):
        return None
    want = []
    for (_, lo), (hi, _) in zip(spans, spans[1:]):      # each gap [lo, hi)
        if lo <= lo_t and hi_t <= hi:                   # the target's: reserved up to it
            want.append((lo + _room(lo_t - lo, size), lo_t))
            want.append((hi_t, hi - _room(hi - hi_t, size)))
        elif hi - lo >= size:
            room = _room((hi - lo) // 2, size)
            want.append((lo + room, hi - room))
    held: list[tuple[int, int]] = []
    for start, stop in want:
        if stop - start < _PAGE:
            continue
        got = libc.mmap(start, stop - start, 0, _PRIVATE | _ANONYMOUS | _NORESERVE | _NOREPLACE,
                        -1, 0)
        if got != start:            # refused (a limit), or an old kernel that took it as a hint
            if got not in (None, ctypes.c_void_p(-1).value):
                libc.munmap(got, stop - start)
            _release(held)
            return None
        held.append((start, stop - start))
    return held


def _room(free: int, size: int) -> int:
    """What to leave free at the far end of ``free`` bytes: less than ``size``, at least a page
    less than ``free``."""
    return max(0, min(size - _PAGE, free - _PAGE)) // _PAGE * _PAGE


def _release(held) -> None:
    if held:
        libc = _libc()
        for start, n in held:
            libc.munmap(start, n)
