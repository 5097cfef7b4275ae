"""Reading a cubin as ELF64: section headers, symbol tables, section bytes, the entry mark.

A cubin is an ELF64 little-endian file with ``e_machine`` EM_CUDA = 190.  Kernel entries
are the ``STT_FUNC`` symbols whose ``st_other`` has bit ``0x10`` (``STO_CUDA_ENTRY``):
``__noinline__`` device functions are ``STT_FUNC`` too (their own ``.text.<name>`` and,
under ``-rdc``, even their own ``.nv.info.<name>`` section) but never carry that bit, and
the ``.text`` section flags of both are the same (``AX``), so the bit is the mark
(:func:`is_entry`).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from ._format import ELF_MAGIC, FATBIN_MAGIC, BinaryFormatError

EM_CUDA = 190
STT_FUNC = 2
STO_CUDA_ENTRY = 0x10
SHT_SYMTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 2, 4, 8, 9
SHF_EXECINSTR = 0x4


def cstr(data: bytes, at: int) -> str:
    """The NUL-terminated string at ``at`` (to the end of ``data`` if it has no NUL)."""
    end = data.find(b"\0", at)
    return data[at:end if end >= 0 else len(data)].decode("utf-8", "replace")


class Section(NamedTuple):  # NamedTuple: ~10x cheaper to define than a dataclass (first cell)
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


class Symbol(NamedTuple):
    name: str
    info: int
    other: int
    shndx: int
    value: int
    size: int


def sections(data: bytes) -> list[Section]:
    """The section headers of an ELF64 cubin (checked: magic, class, endianness, EM_CUDA)."""
    if data[:4] != ELF_MAGIC:
        what = "a fatbin" if data[:4] == FATBIN_MAGIC else "not an ELF file"
        raise BinaryFormatError(f"expected a cubin (ELF64), got {what}")
    if len(data) < 64 or data[4] != 2 or data[5] != 1:
        raise BinaryFormatError("expected a 64-bit little-endian cubin (truncated or 32-bit ELF)")
    try:
        (machine,) = struct.unpack_from("<H", data, 18)
        if machine != EM_CUDA:
            raise BinaryFormatError(f"ELF file for machine {machine}, not a CUDA cubin (190)")
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        # name, type, flags, addr, offset, size, link, info, addralign, entsize
        raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        shstr = raw[shstrndx][4]
        return [Section(cstr(data, shstr + r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[9])
                for r in raw]
    except (struct.error, IndexError) as e:
        raise BinaryFormatError(f"truncated or malformed cubin ({e})") from None


def symbols(data: bytes, secs: list[Section], symtab: int) -> list[Symbol]:
    """The symbols of section ``symtab`` (an SHT_SYMTAB), in table order."""
    s = secs[symtab]
    strtab = secs[s.link].offset
    out = []
    for at in range(s.offset, s.offset + s.size, s.entsize or 24):
        st_name, st_info, st_other, st_shndx, value, size = struct.unpack_from("<IBBHQQ", data, at)
        out.append(Symbol(cstr(data, strtab + st_name), st_info, st_other, st_shndx, value, size))
    return out


def all_symbols(data: bytes, secs: list[Section]) -> dict[int, list[Symbol]]:
    """symtab section index -> its symbols."""
    try:
        return {i: symbols(data, secs, i) for i, s in enumerate(secs) if s.type == SHT_SYMTAB}
    except (struct.error, IndexError) as e:
        raise BinaryFormatError(f"truncated or malformed cubin symbol table ({e})") from None


def section_bytes(data: bytes, s: Section) -> bytes:
    """The contents of section ``s`` (``b""`` for SHT_NOBITS), checked against the file's end."""
    if s.type == SHT_NOBITS:
        return b""
    if s.offset + s.size > len(data):
        raise BinaryFormatError(f"truncated cubin: section {s.name} runs past the end of the file")
    return data[s.offset:s.offset + s.size]


def is_entry(sym: Symbol) -> bool:
    """Whether ``sym`` is a kernel entry: a defined STT_FUNC marked STO_CUDA_ENTRY."""
    return sym.info & 0xF == STT_FUNC and bool(sym.other & STO_CUDA_ENTRY) and bool(sym.shndx)
