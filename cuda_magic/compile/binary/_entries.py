"""The kernel entries a binary holds, named and typed, and each one's machine code.

:func:`entries` reads the raw ``(symbol, parameter layout)`` pairs of a cubin
(:mod:`._cubin`), PTX (:mod:`._ptx`) or fatbin (:mod:`._fatbin`), leaves out the kernels
that are never the cell's (:data:`NOT_THE_CELLS`), demangles the symbols
(:mod:`._demangle`) and splits the text into a name and parameter types
(:mod:`cuda_magic.compile.cpptypes`).  :func:`kernel_code`: the bytes each entry runs.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ..cpptypes import c_type, close_angles, split_signature
from . import _elf
from ._cubin import cubin_entries
from ._demangle import demangle
from ._fatbin import fatbin_entries
from ._format import FORMATS, BinaryFormatError, as_bytes
from ._ptx import ptx_entries


@dataclass(frozen=True)
class Entry:
    """One kernel entry of a binary.

    ``name`` and ``param_types`` are the demangler's text with two spellings
    normalised to what a C++ programmer writes: ``float const*`` ->
    ``const float*`` (the pointee's ``const`` moved to the front) and
    ``> >`` -> ``>>``; ``signature`` is the demangler's text unchanged.
    """

    symbol: str                                   # as in the binary
    name: str                                     # "ns::k<256>", "scale"
    signature: str | None                         # demangled; None for extern "C"
    param_types: tuple[str, ...] | None           # ("float*", "int"); None for extern "C"
    params: tuple[tuple[int, int], ...] | None    # (offset, size); None if the binary does not say
    # PTX: offsets as the PTX ABI lays them out (see ._ptx); () for no parameters


def entries(binary: bytes | str, fmt: str, *, arch: str | None = None) -> tuple[Entry, ...]:
    """The kernel entries (never device functions) of ``binary``, sorted by name then symbol.

    ``fmt`` is ``"cubin"``, ``"ptx"`` or ``"fatbin"``.  For a fatbin with
    several SASS images, ``arch`` (``"sm_90a"``) picks the image for it;
    without it (or if none matches) the entries of all images are merged,
    the highest arch's winning where they differ.
    """
    raw = [(sym, params) for sym, params in _raw(binary, fmt, arch) if not NOT_THE_CELLS.search(sym)]
    names = demangle(sym for sym, _ in raw)
    out = []
    for sym, params in raw:
        text = names[sym]
        if text == sym:
            out.append(Entry(sym, sym, None, None, params))
            continue
        name, types = split_signature(text)
        out.append(Entry(sym, close_angles(name), text, tuple(c_type(t) for t in types), params))
    return tuple(sorted(out, key=lambda e: (e.name, e.symbol)))


def entry_symbols(binary: bytes | str, fmt: str, *, arch: str | None = None) -> list[str]:
    """Every kernel entry's symbol, those of :data:`NOT_THE_CELLS` too (unsorted)."""
    return [sym for sym, _ in _raw(binary, fmt, arch)]


def _raw(binary, fmt: str, arch: str | None):
    return _raw_entries(binary if isinstance(binary, (bytes, str)) else bytes(binary), fmt, arch)


@functools.lru_cache(maxsize=4)   # entries() and entry_symbols() of one binary read it once
def _raw_entries(binary, fmt: str, arch: str | None) -> tuple[tuple[str, tuple | None], ...]:
    if fmt == "cubin":
        return tuple(cubin_entries(as_bytes(binary)))
    if fmt == "ptx":
        return tuple(ptx_entries(binary.decode("utf-8", "replace") if isinstance(binary, bytes)
                                 else binary))
    if fmt == "fatbin":
        return tuple(fatbin_entries(as_bytes(binary), arch))
    raise ValueError(f"fmt must be one of {FORMATS}, not {fmt!r}")


# Kernels that are never the cell's, never bound: the device runtime's own (libcudadevrt's
# file-static memcpy/memset helpers), which a device link of relocatable code adds
# (compile/link.py); CUB's empty kernel cub::detail::EmptyKernel<void> (CUB takes its
# attributes to learn the PTX version; CCCL 3.0's <cub/cub.cuh> instantiates it under nvcc),
# in whatever versioned inline namespace (_ZN3cub17CUB_300001_SM_9006detail11EmptyKernelIvEEvv);
# cuda-magic's own --instantiate probes under nvcc (compile/instances.py); and the timeline's
# probe of %globaltimer (<cuda_magic/timeline.h> under -DCUDA_MAGIC_TIMELINE, runtime/measure/timeline/).
NOT_THE_CELLS = re.compile(r"^__nv_static_\w*_cuda_device_runtime_cu_"
                           r"|^_ZN3cub(?:\d+\w*?)??6detail11EmptyKernelI|^_Z18__cuda_magic_probeI"
                           r"|^cm_timeline_probe$")


def kernel_code(cubin: bytes) -> dict[str, bytes]:
    """Kernel entry symbol (as in the ELF, mangled) -> the bytes of its ``.text.<symbol>`` section.

    The section holds the entry's machine code, the whole-program copies of the
    ``__noinline__`` functions it calls (local ``$kernel$name`` symbols inside
    it) and the trailing ``NOP`` padding; two builds whose kernels compare equal
    here run the same instructions.  The kernels of :data:`NOT_THE_CELLS` are left out, as
    from :func:`entries`.
    """
    data = as_bytes(cubin)
    secs = _elf.sections(data)
    out = {}
    for syms in _elf.all_symbols(data, secs).values():
        for sym in syms:
            if _elf.is_entry(sym) and not NOT_THE_CELLS.search(sym.name):
                if sym.shndx >= len(secs):
                    raise BinaryFormatError(f"kernel {sym.name} names section {sym.shndx}, "
                                            f"past the {len(secs)} sections of the cubin")
                out[sym.name] = _elf.section_bytes(data, secs[sym.shndx])
    return out
