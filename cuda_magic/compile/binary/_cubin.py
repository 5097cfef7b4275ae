"""A cubin's kernel entries and their parameter layouts, from the ``.nv.info`` sections.

Parameters come from the entry's ``.nv.info.<name>`` section (the one whose ``sh_info`` is
the entry's ``.text`` section index): a list of records ``u8 format, u8 attribute,
u16 value-or-size`` (format 4 = EIFMT_SVAL: the u16 is the size of the data that follows).
One ``EIATTR_KPARAM_INFO`` (0x17) per parameter, 12 bytes: ``u32 index (0), u16 ordinal,
u16 offset, u32 flags`` with the size in ``flags >> 18`` (bits 12-16 hold the constant
bank, 0x1f; bits 0-7 a pointee log-alignment, 0 in every build seen).  Kernels whose
parameters pass ~16 KiB use ``EIATTR_KPARAM_INFO_V2`` (0x45) instead: ``u32 index,
u16 ordinal, u16 offset, u32 size``.  Records come in any order (last parameter first from
ptxas 13).  ``EIATTR_CBANK_PARAM_SIZE`` (0x19, a u16 value) is the parameter buffer's size
and ``EIATTR_PARAM_CBANK`` (0x0a) holds ``u32 .nv.constant0 symbol, u16 base, u16 size``:
the buffer's place in constant bank 0 (0x160 on sm_75/80, 0x210 on sm_90, 0x380 on
sm_100/120).  A kernel without parameters has none of these.  Offsets are relative to that
base, but ptxas aligns parameters to their *absolute* address in the bank, so one aligned
to more than 16 bytes (``alignas(32)``, a ``CUtensorMap`` at 128) can sit elsewhere than
the PTX layout says, and differently per arch.  The cubin's offsets are the driver's: they
equal ``cuFuncGetParamInfo`` for every kernel of the tests (H200, driver 580).
``__launch_bounds__(N)`` is ``EIATTR_MAX_THREADS`` (0x05): ``u32 x, y, z`` = ``N, 1, 1``;
``__cluster_dims__(x, y, z)`` is ``EIATTR_CTA_PER_CLUSTER`` (0x3d), three u32s too (with
``EIATTR_EXPLICIT_CLUSTER``, 0x3e, beside it).
"""

from __future__ import annotations

import struct

from . import _elf
from ._format import BinaryFormatError

_EIFMT_SVAL = 4
_EIATTR_KPARAM_INFO = 0x17
_EIATTR_CBANK_PARAM_SIZE = 0x19
_EIATTR_KPARAM_INFO_V2 = 0x45
_EIATTR_MAX_THREADS = 0x05
_EIATTR_CTA_PER_CLUSTER = 0x3d


def _entry_infos(data: bytes):
    """``(symbol, its .nv.info.<name> data or None)`` of each kernel entry of an ELF64 cubin."""
    secs = _elf.sections(data)
    infos: dict[int, bytes] = {}       # .text section index -> its .nv.info.<name> data
    by_name: dict[str, bytes] = {}
    for s in secs:
        if s.name.startswith(".nv.info."):
            body = data[s.offset:s.offset + s.size]
            by_name[s.name[len(".nv.info."):]] = body
            if s.info:
                infos[s.info] = body
    for i, s in enumerate(secs):
        if s.type != _elf.SHT_SYMTAB:
            continue
        for sym in _elf.symbols(data, secs, i):
            if _elf.is_entry(sym):
                yield sym.name, infos.get(sym.shndx, by_name.get(sym.name))


def cubin_entries(data: bytes) -> list[tuple[str, tuple[tuple[int, int], ...] | None]]:
    """``(symbol, params)`` of each kernel entry of an ELF64 cubin."""
    try:
        return [(name, None if info is None else _kparams(info))
                for name, info in _entry_infos(data)]
    except (struct.error, IndexError) as e:
        raise BinaryFormatError(f"truncated or malformed cubin ({e})") from None


def _dims_of(data: bytes, attribute: int) -> dict[str, tuple[int, int, int]]:
    """``{symbol: (x, y, z)}`` of each kernel entry whose ``.nv.info`` has ``attribute`` as three
    u32s."""
    try:
        out = {}
        for name, info in _entry_infos(data):
            for attr, value in _eiattrs(info or b""):
                if attr == attribute and isinstance(value, bytes) and len(value) >= 12:
                    out[name] = struct.unpack_from("<III", value)
        return out
    except (struct.error, IndexError) as e:
        raise BinaryFormatError(f"truncated or malformed cubin ({e})") from None


def max_threads(data: bytes) -> dict[str, int]:
    """``{symbol: threads}``: the ``__launch_bounds__`` maximum block size of each kernel entry
    of an ELF64 cubin that has one."""
    return {name: x * y * z for name, (x, y, z) in _dims_of(data, _EIATTR_MAX_THREADS).items()}


def cluster_dims(data: bytes) -> dict[str, tuple[int, int, int]]:
    """``{symbol: (x, y, z)}``: the ``__cluster_dims__`` of each kernel entry that has them
    (``EIATTR_CTA_PER_CLUSTER``)."""
    return _dims_of(data, _EIATTR_CTA_PER_CLUSTER)


def _eiattrs(info: bytes):
    """``(attribute, value)`` per ``.nv.info`` record: bytes for EIFMT_SVAL, else the u16."""
    at = 0
    while at + 4 <= len(info):
        fmt, attr, value = struct.unpack_from("<BBH", info, at)
        at += 4
        if fmt == _EIFMT_SVAL:
            yield attr, info[at:at + value]
            at += value
        else:
            yield attr, value


def _kparams(info: bytes) -> tuple[tuple[int, int], ...] | None:
    """``(offset, size)`` per parameter from KPARAM_INFO(_V2); None if they do not add up."""
    found, total = {}, None
    for attr, value in _eiattrs(info):
        if attr in (_EIATTR_KPARAM_INFO, _EIATTR_KPARAM_INFO_V2) and isinstance(value, bytes) \
                and len(value) >= 12:
            _, ordinal, offset, word = struct.unpack_from("<IHHI", value)
            size = word >> 18 if attr == _EIATTR_KPARAM_INFO else word & 0xFFFF
            found[ordinal] = (offset, size)
        elif attr == _EIATTR_CBANK_PARAM_SIZE and isinstance(value, int):
            total = value
    if not found:
        return () if not total else None       # no parameters, or a layout we cannot read
    params = tuple(found.get(i) for i in range(len(found)))
    end = 0
    for p in params:
        if p is None or p[0] < end or p[1] <= 0:
            return None
        end = p[0] + p[1]
    if total is not None and end > total:
        return None
    return params
