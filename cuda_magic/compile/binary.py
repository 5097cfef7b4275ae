"""The kernel entries a compiled binary holds: the binary is the truth.

No GPU and no CUDA initialisation; pure Python over ``struct``, plus
``__cxa_demangle`` through :mod:`ctypes`.  What is read from where:

cubin (ELF64, ``e_machine`` EM_CUDA = 190)
    Entries are the ``STT_FUNC`` symbols whose ``st_other`` has bit ``0x10``
    (``STO_CUDA_ENTRY``).  ``__noinline__`` device functions are ``STT_FUNC``
    too (their own ``.text.<name>`` and, under ``-rdc``, even their own
    ``.nv.info.<name>`` section) but never carry that bit, and the ``.text``
    section flags of both are the same (``AX``), so the bit is the mark.
    Parameters come from the entry's ``.nv.info.<name>`` section (the one whose
    ``sh_info`` is the entry's ``.text`` section index): a list of records
    ``u8 format, u8 attribute, u16 value-or-size`` (format 4 = EIFMT_SVAL: the
    u16 is the size of the data that follows).  One ``EIATTR_KPARAM_INFO``
    (0x17) per parameter, 12 bytes: ``u32 index (0), u16 ordinal, u16 offset,
    u32 flags`` with the size in ``flags >> 18`` (bits 12-16 hold the constant
    bank, 0x1f; bits 0-7 a pointee log-alignment, 0 in every build seen).
    Kernels whose parameters pass ~16 KiB use ``EIATTR_KPARAM_INFO_V2`` (0x45)
    instead: ``u32 index, u16 ordinal, u16 offset, u32 size``.  Records come
    in any order (last parameter first from ptxas 13).  ``EIATTR_CBANK_PARAM_SIZE``
    (0x19, a u16 value) is the parameter buffer's size and ``EIATTR_PARAM_CBANK``
    (0x0a) holds ``u32 .nv.constant0 symbol, u16 base, u16 size``: the buffer's
    place in constant bank 0 (0x160 on sm_75/80, 0x210 on sm_90, 0x380 on
    sm_100/120).  A kernel without parameters has none of these.  Offsets are
    relative to that base, but ptxas aligns parameters to their *absolute*
    address in the bank, so one aligned to more than 16 bytes (``alignas(32)``,
    a ``CUtensorMap`` at 128) can sit elsewhere than the PTX layout says, and
    differently per arch.  The cubin's offsets are the driver's: they equal
    ``cuFuncGetParamInfo`` for every kernel of the tests (H200, driver 580).

    Machine code (:func:`kernel_code`): the entry's ``.text.<name>`` section.
    Source lines (:func:`line_table`): ``.debug_line``, a DWARF 3 line program
    (``-lineinfo``) whose sequences' addresses ``.rela.debug_line`` relocates
    against the kernels' symbols; see there.  The lines each was inlined at
    (:func:`inline_table`): NVIDIA's extended opcode 0x90 in the same program.

PTX (text)
    ``.entry`` names (with or without ``.visible``/``.weak``; ``.func`` is
    ignored) and their ``.param`` declarations: the size of the type or of the
    ``.b8 name[N]`` array, aligned to ``.align N`` or the type's size,
    offsets from 0 as the PTX ABI lays them out.  Sizes are always those the
    driver sees; when it JITs the PTX, parameters aligned beyond 16 bytes (and
    those after them) move as in a cubin, which the PTX cannot say.

fatbin (nvcc ``--fatbin``)
    A container (``u32 magic 0xBA55ED50, u16 version, u16 header size,
    u64 size``) of images, each ``u16 kind (1 PTX, 2 ELF), u16, u32 header
    size, u64 payload size, ...``, with the arch number at header byte 28
    and flags at byte 40 (0x2000 LZ4, 0x8000 zstd compressed, 0x100000
    ``a``, 0x200000 ``f`` arch).  nvcc 13 compresses PTX images (zstd) by
    default but not SASS ones, unless ``-G`` or ``-Xfatbin=-compress-all``
    (``--concat`` images are compressed whole).  Uncompressed ELF images are
    read in place; if an image needed is compressed (Python's standard library
    has neither zstd nor LZ4 before 3.14), ``cuobjdump -xelf all`` /
    ``-xptx all`` extracts them in a private temporary directory (a few
    milliseconds; cached).  The entries are those of the ELF images (the one
    for ``arch`` if given and present), or of the PTX images if it has none.

Names are demangled with libstdc++'s ``__cxa_demangle`` (else GNU ``c++filt``,
else ``cu++filt``, whose EDG-style text leaves template parameters as ``T1``);
a name that is not mangled maps to itself.  Typedef names never reach a mangled name:
``uint`` shows as ``unsigned int``, ``CUtensorMap`` as ``CUtensorMap_st``,
and top-level ``const`` (``const __grid_constant__``) is not part of it.
"""

from __future__ import annotations

import bisect
import ctypes
import ctypes.util
import functools
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from typing import Iterable, NamedTuple

from ..config import Error
from .backends import ToolNotFoundError

__all__ = ["Entry", "Image", "BinaryFormatError", "entries", "entry_symbols", "NOT_THE_CELLS",
           "demangle", "split_signature", "c_type", "fatbin_images", "kernel_code", "line_table", "line_of", "inline_table",
           "cell_line_table", "chain_of", "cubin_for"]

FORMATS = ("cubin", "ptx", "fatbin")


class BinaryFormatError(Error, ValueError):
    """The bytes are not a cubin, PTX or fatbin this module can read."""


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
    # PTX: offsets as the PTX ABI lays them out (see the module docstring); () for no parameters


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
        out.append(Entry(sym, _angles(name), text, tuple(c_type(t) for t in types), params))
    return tuple(sorted(out, key=lambda e: (e.name, e.symbol)))


def entry_symbols(binary: bytes | str, fmt: str, *, arch: str | None = None) -> list[str]:
    """Every kernel entry's symbol, those of :data:`NOT_THE_CELLS` too (unsorted)."""
    return [sym for sym, _ in _raw(binary, fmt, arch)]


def _raw(binary, fmt: str, arch: str | None):
    return _raw_entries(binary if isinstance(binary, (bytes, str)) else bytes(binary), fmt, arch)


@functools.lru_cache(maxsize=4)   # entries() and entry_symbols() of one binary read it once
def _raw_entries(binary, fmt: str, arch: str | None) -> tuple[tuple[str, tuple | None], ...]:
    if fmt == "cubin":
        return tuple(_elf_entries(_as_bytes(binary)))
    if fmt == "ptx":
        return tuple(_ptx_entries(binary.decode("utf-8", "replace") if isinstance(binary, bytes)
                                  else binary))
    if fmt == "fatbin":
        return tuple(_fatbin_entries(_as_bytes(binary), arch))
    raise ValueError(f"fmt must be one of {FORMATS}, not {fmt!r}")


# Kernels that are never the cell's, never bound: the device runtime's own (libcudadevrt's
# file-static memcpy/memset helpers), which a device link of relocatable code adds
# (compile/link.py); CUB's empty kernel cub::detail::EmptyKernel<void> (CUB takes its
# attributes to learn the PTX version; CCCL 3.0's <cub/cub.cuh> instantiates it under nvcc),
# in whatever versioned inline namespace (_ZN3cub17CUB_300001_SM_9006detail11EmptyKernelIvEEvv);
# and cuda-magic's own --instantiate probes under nvcc (compile/instances.py).
NOT_THE_CELLS = re.compile(r"^__nv_static_\w*_cuda_device_runtime_cu_"
                           r"|^_ZN3cub(?:\d+\w*?)??6detail11EmptyKernelI|^_Z18__cuda_magic_probeI")


def _as_bytes(binary) -> bytes:
    if isinstance(binary, str):
        raise BinaryFormatError("a cubin or fatbin is bytes, not text")
    return bytes(binary)


# ---------------------------------------------------------------- cubin (ELF)

_EM_CUDA = 190
_STT_FUNC = 2
_STO_CUDA_ENTRY = 0x10
_SHT_SYMTAB = 2
_EIFMT_SVAL = 4
_EIATTR_KPARAM_INFO = 0x17
_EIATTR_CBANK_PARAM_SIZE = 0x19
_EIATTR_KPARAM_INFO_V2 = 0x45


def _cstr(data: bytes, at: int) -> str:
    end = data.find(b"\0", at)
    return data[at:end if end >= 0 else len(data)].decode("utf-8", "replace")


class _Section(NamedTuple):  # NamedTuple: ~10x cheaper to define than a dataclass (first cell)
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


class _Symbol(NamedTuple):
    name: str
    info: int
    other: int
    shndx: int
    value: int
    size: int


def _elf_sections(data: bytes) -> list[_Section]:
    """The section headers of an ELF64 cubin (checked: magic, class, endianness, EM_CUDA)."""
    if data[:4] != b"\x7fELF":
        what = "a fatbin" if data[:4] == _FATBIN_MAGIC else "not an ELF file"
        raise BinaryFormatError(f"expected a cubin (ELF64), got {what}")
    if len(data) < 64 or data[4] != 2 or data[5] != 1:
        raise BinaryFormatError("expected a 64-bit little-endian cubin (truncated or 32-bit ELF)")
    try:
        (machine,) = struct.unpack_from("<H", data, 18)
        if machine != _EM_CUDA:
            raise BinaryFormatError(f"ELF file for machine {machine}, not a CUDA cubin (190)")
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        # name, type, flags, addr, offset, size, link, info, addralign, entsize
        raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        shstr = raw[shstrndx][4]
        return [_Section(_cstr(data, shstr + r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[9])
                for r in raw]
    except (struct.error, IndexError) as e:
        raise BinaryFormatError(f"truncated or malformed cubin ({e})") from None


def _elf_symbols(data: bytes, secs: list[_Section], symtab: int) -> list[_Symbol]:
    """The symbols of section ``symtab`` (an SHT_SYMTAB), in table order."""
    s = secs[symtab]
    strtab = secs[s.link].offset
    out = []
    for at in range(s.offset, s.offset + s.size, s.entsize or 24):
        st_name, st_info, st_other, st_shndx, value, size = struct.unpack_from("<IBBHQQ", data, at)
        out.append(_Symbol(_cstr(data, strtab + st_name), st_info, st_other, st_shndx, value, size))
    return out


def _is_entry(sym: _Symbol) -> bool:
    return sym.info & 0xF == _STT_FUNC and bool(sym.other & _STO_CUDA_ENTRY) and bool(sym.shndx)


def _elf_entries(data: bytes) -> list[tuple[str, tuple[tuple[int, int], ...] | None]]:
    """``(symbol, params)`` of each kernel entry of an ELF64 cubin."""
    secs = _elf_sections(data)
    try:
        infos: dict[int, bytes] = {}       # .text section index -> its .nv.info.<name> data
        by_name: dict[str, bytes] = {}
        for s in secs:
            if s.name.startswith(".nv.info."):
                body = data[s.offset:s.offset + s.size]
                by_name[s.name[len(".nv.info."):]] = body
                if s.info:
                    infos[s.info] = body
        out = []
        for i, s in enumerate(secs):
            if s.type != _SHT_SYMTAB:
                continue
            for sym in _elf_symbols(data, secs, i):
                if _is_entry(sym):
                    info = infos.get(sym.shndx, by_name.get(sym.name))
                    out.append((sym.name, None if info is None else _kparams(info)))
        return out
    except (struct.error, IndexError) as e:
        raise BinaryFormatError(f"truncated or malformed cubin ({e})") from None


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


# ---------------------------------------------------------------- PTX

_PTX_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_PTX_ENTRY = re.compile(r"(?P<quals>(?:\.(?:visible|weak|extern)\s+)*)\.entry\s+"
                        r"(?P<name>[A-Za-z_$%][\w$]*)\s*(?P<open>\()?")
_PTX_SIZES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
              "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
              "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16}
_PTX_PARAM = re.compile(r"\.param\s+(?:\.align\s+(?P<align>\d+)\s+)?\.(?P<type>\w+)\b"
                        r"(?P<rest>[^\[]*?)(?:\[\s*(?P<n>\d+)\s*\])?\s*$", re.S)


def _ptx_entries(text: str) -> list[tuple[str, tuple[tuple[int, int], ...] | None]]:
    """``(symbol, params)`` of each ``.entry`` of a PTX module, offsets as the PTX ABI lays them out."""
    text = _PTX_COMMENT.sub(" ", text)
    if ".version" not in text and ".entry" not in text:
        raise BinaryFormatError("expected PTX text (no .version or .entry in it)")
    out = []
    for m in _PTX_ENTRY.finditer(text):
        if ".extern" in m.group("quals"):
            continue
        params: tuple[tuple[int, int], ...] | None = ()
        if m.group("open"):
            close = text.find(")", m.end())
            if close < 0:
                raise BinaryFormatError(f"PTX entry {m.group('name')} has no closing ')'")
            decls = [d.strip() for d in text[m.end():close].split(",") if d.strip()]
            params = _ptx_layout(decls)
        out.append((m.group("name"), params))
    return out


def _ptx_layout(decls: list[str]) -> tuple[tuple[int, int], ...] | None:
    params, end = [], 0
    for decl in decls:
        m = _PTX_PARAM.match(decl)
        if not m or m.group("type") not in _PTX_SIZES:
            return None
        elem = _PTX_SIZES[m.group("type")]
        size = elem * int(m.group("n") or 1)
        align = int(m.group("align") or elem)
        offset = -(-end // align) * align
        params.append((offset, size))
        end = offset + size
    return tuple(params)


# ---------------------------------------------------------------- fatbin

_FATBIN_MAGIC = struct.pack("<I", 0xBA55ED50)
_KIND_PTX, _KIND_ELF = 1, 2
_COMPRESSED = 0x2000 | 0x8000          # LZ4, zstd
_ARCH_A, _ARCH_F = 0x100000, 0x200000


@dataclass(frozen=True)
class Image:
    """One image of a fatbin: ``kind`` "elf"/"ptx"/``"kind <n>"``, arch, flags, payload."""

    kind: str
    arch: str                  # "sm_90a" (SASS) or "compute_90a" (PTX)
    flags: int
    data: bytes                # the payload as stored (compressed if ``compressed``)

    @property
    def compressed(self) -> bool:
        return bool(self.flags & _COMPRESSED) or self.kind not in ("elf", "ptx")


def fatbin_images(binary: bytes) -> tuple[Image, ...]:
    """The images of a fatbin (one or more concatenated containers), as stored."""
    if binary[:4] != _FATBIN_MAGIC:
        what = "a cubin (ELF)" if binary[:4] == b"\x7fELF" else "no fatbin magic"
        raise BinaryFormatError(f"expected a fatbin, got {what}")
    out, at = [], 0
    try:
        while at + 16 <= len(binary) and binary[at:at + 4] == _FATBIN_MAGIC:
            _, _, hsize, size = struct.unpack_from("<IHHQ", binary, at)
            pos, end = at + hsize, at + hsize + size
            while pos < end:
                kind, _, ehsize, psize = struct.unpack_from("<HHIQ", binary, pos)
                if ehsize < 48 or pos + ehsize + psize > len(binary):
                    raise struct.error(f"image at {pos} runs past the end")
                (number,) = struct.unpack_from("<I", binary, pos + 28)
                (flags,) = struct.unpack_from("<Q", binary, pos + 40)
                suffix = "a" if flags & _ARCH_A else "f" if flags & _ARCH_F else ""
                name = {_KIND_ELF: "elf", _KIND_PTX: "ptx"}.get(kind, f"kind {kind}")
                prefix = "compute" if kind == _KIND_PTX else "sm"
                out.append(Image(name, f"{prefix}_{number}{suffix}", flags,
                                 binary[pos + ehsize:pos + ehsize + psize]))
                pos += ehsize + psize
            nxt = binary.find(_FATBIN_MAGIC, end)           # the next container, after padding
            if nxt < 0 or binary[end:nxt].strip(b"\0"):
                break
            at = nxt
    except struct.error:
        raise BinaryFormatError("truncated fatbin") from None
    return tuple(out)


def _fatbin_entries(binary: bytes, arch: str | None):
    images = fatbin_images(binary)
    other = any(i.kind not in ("elf", "ptx") for i in images)     # e.g. --concat's whole-fatbin image
    elves = [(i.arch, i.data) for i in images if i.kind == "elf" and not i.compressed]
    if other or any(i.kind == "elf" and i.compressed for i in images):
        elves = list(_extract(binary, "elf"))        # compressed SASS: cuobjdump decompresses all
    if elves:
        return _merge([(a, _elf_entries(d)) for a, d in elves], arch)
    ptxs = [(i.arch, i.data) for i in images if i.kind == "ptx" and not i.compressed]
    if other or any(i.kind == "ptx" and i.compressed for i in images):
        ptxs = list(_extract(binary, "ptx"))
    return _merge([(a, _ptx_entries(d.rstrip(b"\0").decode("utf-8", "replace")))
                   for a, d in ptxs], arch)


def _arch_key(arch: str) -> tuple[int, str]:
    m = re.search(r"(\d+)([af]?)$", arch)
    return (int(m.group(1)), m.group(2)) if m else (0, "")


def _merge(images, arch: str | None):
    """The entries of the image for ``arch`` if present, else of all, highest arch first."""
    if arch:
        want = _arch_key(arch)
        exact = [img for img in images if _arch_key(img[0]) == want]
        same = exact or [img for img in images if _arch_key(img[0])[0] == want[0]]
        images = same or images
    seen: dict[str, tuple] = {}
    for _, found in sorted(images, key=lambda img: _arch_key(img[0]), reverse=True):
        for sym, params in found:
            seen.setdefault(sym, params)
    return list(seen.items())


def _find_cuobjdump() -> str:
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
        path = find_nvidia_binary_utility("cuobjdump")
    except Exception:
        path = None
    path = path or shutil.which("cuobjdump")
    if not path:
        raise ToolNotFoundError("this fatbin's images are compressed and cuobjdump was not "
                                "found to read them; install it with "
                                "pip install nvidia-cuda-cuobjdump")
    return path


@functools.lru_cache(maxsize=16)
def _extract(binary: bytes, kind: str) -> tuple[tuple[str, bytes], ...]:
    """``(arch, bytes)`` per image of ``kind`` ("elf"/"ptx"), decompressed by
    ``cuobjdump -x<kind> all`` in a private temporary directory."""
    with tempfile.TemporaryDirectory(prefix="cuda-magic-") as tmp:
        path = os.path.join(tmp, "module.fatbin")
        with open(path, "wb") as f:
            f.write(binary)
        proc = subprocess.run([_find_cuobjdump(), f"-x{kind}", "all", path], cwd=tmp,
                              capture_output=True, text=True, errors="replace")
        if proc.returncode != 0:
            raise BinaryFormatError(f"cuobjdump -x{kind} failed ({proc.returncode}): "
                                    f"{proc.stderr.strip()[:300]}")
        suffix = ".cubin" if kind == "elf" else ".ptx"
        found = []
        for name in os.listdir(tmp):
            m = re.search(r"(?:\.(\d+))?\.((?:sm|compute)_\d+[af]?)" + re.escape(suffix) + "$", name)
            if m and name != "module.fatbin":
                with open(os.path.join(tmp, name), "rb") as f:
                    found.append((int(m.group(1) or 0), m.group(2), f.read()))
    return tuple((a, d) for _, a, d in sorted(found))


# ---------------------------------------------------------------- machine code and line table

_SHT_NOBITS, _SHT_RELA, _SHT_REL = 8, 4, 9
_SHF_EXECINSTR = 0x4


def _section_bytes(data: bytes, s: _Section) -> bytes:
    if s.type == _SHT_NOBITS:
        return b""
    if s.offset + s.size > len(data):
        raise BinaryFormatError(f"truncated cubin: section {s.name} runs past the end of the file")
    return data[s.offset:s.offset + s.size]


def _all_symbols(data: bytes, secs: list[_Section]) -> dict[int, list[_Symbol]]:
    """symtab section index -> its symbols."""
    try:
        return {i: _elf_symbols(data, secs, i) for i, s in enumerate(secs) if s.type == _SHT_SYMTAB}
    except (struct.error, IndexError) as e:
        raise BinaryFormatError(f"truncated or malformed cubin symbol table ({e})") from None


def kernel_code(cubin: bytes) -> dict[str, bytes]:
    """Kernel entry symbol (as in the ELF, mangled) -> the bytes of its ``.text.<symbol>`` section.

    The section holds the entry's machine code, the whole-program copies of the
    ``__noinline__`` functions it calls (local ``$kernel$name`` symbols inside
    it) and the trailing ``NOP`` padding; two builds whose kernels compare equal
    here run the same instructions.  The kernels of :data:`NOT_THE_CELLS` are left out, as
    from :func:`entries`.
    """
    data = _as_bytes(cubin)
    secs = _elf_sections(data)
    out = {}
    for syms in _all_symbols(data, secs).values():
        for sym in syms:
            if _is_entry(sym) and not NOT_THE_CELLS.search(sym.name):
                if sym.shndx >= len(secs):
                    raise BinaryFormatError(f"kernel {sym.name} names section {sym.shndx}, "
                                            f"past the {len(secs)} sections of the cubin")
                out[sym.name] = _section_bytes(data, secs[sym.shndx])
    return out


def cubin_for(binary: bytes, fmt: str, arch: str) -> bytes | None:
    """The cubin of a compile result for ``arch`` (``"sm_90a"``), or None.

    ``"cubin"``: the binary itself.  ``"fatbin"``: the uncompressed SASS (ELF)
    image for ``arch`` (the exact arch, else the one of the same number, ``sm_90``
    for ``sm_90a``), None if there is none or it is compressed (``-G``,
    ``-Xfatbin=-compress-all``).  ``"ptx"``: None.
    """
    if fmt == "cubin":
        return _as_bytes(binary)
    if fmt == "ptx":
        return None
    if fmt != "fatbin":
        raise ValueError(f"fmt must be one of {FORMATS}, not {fmt!r}")
    elves = [i for i in fatbin_images(_as_bytes(binary)) if i.kind == "elf"]
    want = _arch_key(arch)
    found = ([i for i in elves if _arch_key(i.arch) == want]
             or [i for i in elves if _arch_key(i.arch)[0] == want[0]])
    if not found or found[0].compressed:
        return None
    return found[0].data


class _Reader:
    """Bounds-checked little-endian reads over ``data[pos:end]``; running past ``end`` raises
    :class:`BinaryFormatError` naming ``what``."""

    def __init__(self, data: bytes, pos: int, end: int, what: str):
        self.data, self.pos, self.end, self.what = data, pos, min(end, len(data)), what

    def _take(self, n: int) -> int:
        at = self.pos
        if at + n > self.end:
            raise BinaryFormatError(f"truncated or malformed {self.what}: a read at offset {at} "
                                    f"runs past its end ({self.end})")
        self.pos += n
        return at

    def u(self, n: int) -> int:
        at = self._take(n)
        return int.from_bytes(self.data[at:at + n], "little")

    def s8(self) -> int:
        v = self.u(1)
        return v - 256 if v > 127 else v

    def uleb(self) -> int:
        return self._leb(signed=False)

    def sleb(self) -> int:
        return self._leb(signed=True)

    def _leb(self, signed: bool) -> int:
        value = shift = 0
        while True:
            byte = self.u(1)
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value - (1 << shift) if signed and byte & 0x40 else value

    def cstr(self) -> str:
        end = self.data.find(b"\0", self.pos, self.end)
        if end < 0:
            self._take(self.end - self.pos + 1)          # raises
        text = self.data[self.pos:end].decode("utf-8", "replace")
        self.pos = end + 1
        return text


# DW_LNS_* standard opcodes
_LNS_COPY, _LNS_ADVANCE_PC, _LNS_ADVANCE_LINE, _LNS_SET_FILE = 1, 2, 3, 4
_LNS_CONST_ADD_PC, _LNS_FIXED_ADVANCE_PC = 8, 9
# DW_LNE_* extended opcodes
_LNE_END_SEQUENCE, _LNE_SET_ADDRESS, _LNE_DEFINE_FILE = 1, 2, 3
_LNE_INLINED_AT = 0x90                                  # NVIDIA's: see inline_table


def line_table(cubin: bytes, *, main: str = "cell.cu") -> dict[str, list[tuple[int, str, int]]]:
    """Kernel symbol -> ``(address, file, line)`` rows, sorted by address, from ``.debug_line``.

    The cubin's ``.debug_line`` (``-lineinfo`` or ``-G``) is a DWARF 2/3/4 line
    program (ptxas writes version 3, 32-bit DWARF; 64-bit DWARF is read too,
    version 5 is refused).  Each sequence starts with ``DW_LNE_set_address``
    whose 8 bytes a ``.rela.debug_line`` entry relocates against the kernel's
    symbol (``R_CUDA_64``, symbol + addend): that symbol's section is the
    kernel's ``.text.<symbol>``, the rows' addresses are offsets in it (the
    kernel's own ``__noinline__`` callees' code included), and the key is the
    entry symbol defined in that section.  Rows at one address collapse into the
    last one (the innermost inlined line, what ``nvdisasm -g`` prints); the
    ``DW_LNE_end_sequence`` row (the end address) is not a row.

    Files: the name as the table gives it, joined to its directory (``dir/name``,
    as nvdisasm prints it) unless the name is absolute or its directory is that
    of ``main`` (the compile's own file, named ``cell.cu`` by both backends:
    NVRTC's working directory, nvcc's temporary one), so the cell reads
    ``cell.cu`` and a header beside it its own name.

    NVIDIA's extended opcode 0x90 (two ULEBs) marks inlined code (see
    :func:`inline_table`); it is skipped here.  No ``.debug_line`` (a build
    without ``-lineinfo``): ``{}``.  A malformed one: :class:`BinaryFormatError`.
    """
    rows, _ = _line_rows(cubin, main)
    return {key: [r for _, r in _innermost(found)] for key, found in rows.items()}


def inline_table(cubin: bytes, *, main: str = "cell.cu"
                 ) -> dict[str, list[tuple[int, tuple[tuple[str, int], ...]]]]:
    """Kernel symbol -> ``(address, chain)`` rows, sorted by address: ``chain`` is the innermost
    ``(file, line)`` (what :func:`line_table` gives) followed by each line it was inlined at,
    outwards, the last one not inlined (``nvdisasm -gi``'s markers, in that order).

    NVIDIA's extended opcode 0x90 carries two ULEBs; the first is the 1-based number,
    within the sequence, of the row of the call site, 0 for code not inlined (the second,
    an offset in ``.debug_str``, is not read).  It sets a state, like ``DW_LNS_set_file``:
    every row after it is inlined at that row until the next 0x90 or the end of the
    sequence.  Files as in :func:`line_table`."""
    rows, calls = _line_rows(cubin, main)
    out = {}
    for key, found in rows.items():
        parent = calls[key]
        chains = []
        for i, (address, file, line) in _innermost(found):
            chain, seen = [(file, line)], {i}
            while parent[i] is not None and parent[i] not in seen:    # a loop: malformed, stop
                i = parent[i]
                seen.add(i)
                chain.append(found[i][1:])
            chains.append((address, tuple(chain)))
        out[key] = chains
    return out


def cell_line_table(cubin: bytes, *, main: str = "cell.cu"
                    ) -> dict[str, list[tuple[int, str, int]]]:
    """:func:`line_table`'s rows with each address on the innermost line of ``main`` in its
    inline chain (:func:`inline_table`): library code inlined at a cell line (a CUB call)
    counts on that line; code that reaches no cell line keeps its own row."""
    return {key: [(address, *next((at for at in chain if at[0] == main), chain[0]))
                  for address, chain in rows]
            for key, rows in inline_table(cubin, main=main).items()}


def chain_of(rows: list[tuple[int, tuple]], address: int) -> tuple[tuple[str, int], ...] | None:
    """The inline chain of the row with the greatest address <= ``address`` (rows as
    :func:`inline_table` gives them); None before the first row."""
    i = bisect.bisect_right(rows, address, key=lambda r: r[0])
    return rows[i - 1][1] if i else None


def _innermost(found: list[tuple[int, str, int]]) -> list[tuple[int, tuple[int, str, int]]]:
    """(index, row) of the last row at each address, sorted by address (stable: program order
    within an address)."""
    order = sorted(range(len(found)), key=lambda i: found[i][0])
    return [(i, found[i]) for n, i in enumerate(order)
            if n + 1 == len(order) or found[order[n + 1]][0] != found[i][0]]


def _line_rows(cubin: bytes, main: str) -> tuple[dict, dict]:
    """Kernel symbol -> rows in program order, and -> the index of each row's call site
    (None: not inlined), from ``.debug_line``."""
    data = _as_bytes(cubin)
    secs = _elf_sections(data)
    where = [i for i, s in enumerate(secs) if s.name == ".debug_line"]
    if not where:
        return {}, {}
    dl = where[0]
    body = _section_bytes(data, secs[dl])
    symtabs = _all_symbols(data, secs)
    relocs = _relocations(data, secs, dl, symtabs)
    rows: dict[str, list[tuple[int, str, int]]] = {}
    calls: dict[str, list[int | None]] = {}
    at = 0
    while at < len(body):
        at = _line_unit(body, at, main, lambda off, stored: _place(off, stored, relocs, secs, symtabs),
                        rows, calls)
    return rows, calls


def line_of(rows: list[tuple[int, str, int]], address: int) -> tuple[str, int] | None:
    """``(file, line)`` of the row with the greatest address <= ``address``
    (rows as :func:`line_table` gives them); None before the first row."""
    i = bisect.bisect_right(rows, address, key=lambda r: r[0])
    return (rows[i - 1][1], rows[i - 1][2]) if i else None


def _relocations(data: bytes, secs: list[_Section], target: int,
                 symtabs: dict[int, list[_Symbol]]) -> dict[int, tuple[_Symbol, int, bool]]:
    """Offset in section ``target`` -> (symbol, addend, is_rela) of its REL/RELA entries."""
    out = {}
    for s in secs:
        if s.type not in (_SHT_RELA, _SHT_REL) or s.info != target:
            continue
        rela = s.type == _SHT_RELA
        syms = symtabs.get(s.link)
        if syms is None:
            raise BinaryFormatError(f"malformed cubin: {s.name} links to section {s.link}, "
                                    "not a symbol table")
        size = s.entsize or (24 if rela else 16)
        body = _section_bytes(data, s)
        for at in range(0, len(body) - size + 1, size):
            offset, info = struct.unpack_from("<QQ", body, at)
            addend = struct.unpack_from("<q", body, at + 16)[0] if rela else 0
            if info >> 32 >= len(syms):
                raise BinaryFormatError(f"malformed cubin: {s.name} names symbol {info >> 32}, "
                                        f"past the {len(syms)} of its table")
            out[offset] = (syms[info >> 32], addend, rela)
    return out


def _place(offset: int, stored: int, relocs, secs: list[_Section],
           symtabs: dict[int, list[_Symbol]]) -> tuple[str, int]:
    """(kernel key, offset in its .text section) of a DW_LNE_set_address operand at ``offset``
    of .debug_line holding ``stored``."""
    if offset in relocs:
        sym, addend, rela = relocs[offset]
        if not 0 < sym.shndx < len(secs):
            raise BinaryFormatError(f"malformed .debug_line: the address at offset {offset} is "
                                    f"relocated against {sym.name or 'a symbol'} in no section")
        return _owner(sym.shndx, sym, secs, symtabs), sym.value + addend + (0 if rela else stored)
    # No relocation: the one executable section whose address range holds it (a linked image).
    hits = [i for i, s in enumerate(secs)
            if s.flags & _SHF_EXECINSTR and s.addr <= stored < s.addr + s.size]
    if len(hits) != 1:
        raise BinaryFormatError(f"malformed .debug_line: the address 0x{stored:x} at offset {offset} "
                                "has no relocation and is in no single .text section")
    return _owner(hits[0], None, secs, symtabs), stored - secs[hits[0]].addr


def _owner(shndx: int, sym: _Symbol | None, secs, symtabs) -> str:
    """The key of section ``shndx``: the kernel entry defined in it, else ``sym`` if it is a
    function, else a function at its start, else the section name less ``.text.``."""
    defined = [s for syms in symtabs.values() for s in syms if s.shndx == shndx]
    for pick in ([s for s in defined if _is_entry(s)],
                 [sym] if sym is not None and sym.info & 0xF == _STT_FUNC else [],
                 [s for s in defined if s.info & 0xF == _STT_FUNC and s.value == 0]):
        if pick:
            return pick[0].name
    name = secs[shndx].name
    return name[len(".text."):] if name.startswith(".text.") else name


def _line_unit(body: bytes, at: int, main: str, place, rows: dict, calls: dict | None = None) -> int:
    """Run the line program of the unit at ``at``; add its rows to ``rows`` (and to ``calls``
    the index in ``rows[key]`` of each row's call site, None when not inlined); the next
    unit's offset."""
    what = f".debug_line (unit at offset {at})"
    r = _Reader(body, at, len(body), what)
    length, offsize = r.u(4), 4
    if length == 0xFFFFFFFF:
        length, offsize = r.u(8), 8
    elif length >= 0xFFFFFFF0:
        raise BinaryFormatError(f"malformed {what}: reserved unit length 0x{length:x}")
    end = r.pos + length
    if end > len(body):
        raise BinaryFormatError(f"truncated {what}: the unit's {length} bytes run past the "
                                f"section's end ({len(body)})")
    r.end = end
    version = r.u(2)
    if version == 5:
        raise BinaryFormatError(f"{what}: DWARF 5 line tables are not supported (2-4 are)")
    if version not in (2, 3, 4):
        raise BinaryFormatError(f"malformed {what}: DWARF version {version}")
    header_length = r.u(offsize)
    program = r.pos + header_length
    min_inst = r.u(1)
    max_ops = r.u(1) if version >= 4 else 1
    r.u(1)                                              # default_is_stmt
    line_base, line_range, opcode_base = r.s8(), r.u(1), r.u(1)
    if program > end:
        raise BinaryFormatError(f"truncated or malformed {what}: header length {header_length} "
                                f"runs past the unit's end")
    if not line_range or not max_ops or not opcode_base:
        raise BinaryFormatError(f"malformed {what}: line_range {line_range}, "
                                f"max ops per instruction {max_ops}, opcode_base {opcode_base}")
    lengths = [r.u(1) for _ in range(opcode_base - 1)]
    dirs = []
    while (d := r.cstr()):
        dirs.append(d)
    files: list[tuple[str, int]] = []

    def read_file():
        name = r.cstr()
        if name:
            index = r.uleb()
            r.uleb(), r.uleb()                          # mtime, size
            files.append((name, index))
        return name

    while read_file():
        pass
    main_dir = next((d for n, d in files if n == main), None)

    def file_name(index: int) -> str:
        if not 0 < index <= len(files):
            raise BinaryFormatError(f"malformed {what}: file {index} of {len(files)}")
        name, d = files[index - 1]
        if name.startswith("/") or d == 0 or d == main_dir:
            return name
        if d > len(dirs):
            raise BinaryFormatError(f"malformed {what}: directory {d} of {len(dirs)}")
        return dirs[d - 1].rstrip("/") + "/" + name

    r.pos = program
    key = None

    address, op_index, file, line = 0, 0, 1, 1
    base = inlined = 0             # the sequence's first row in rows[key]; 0x90's call-site row

    def advance(ops: int):
        nonlocal address, op_index
        total = op_index + ops
        address += min_inst * (total // max_ops)
        op_index = total % max_ops

    def emit():
        if key is None:
            raise BinaryFormatError(f"malformed {what}: a row at offset {r.pos} before any "
                                    "DW_LNE_set_address")
        found = rows.setdefault(key, [])
        if calls is not None:                          # a call site not yet seen: not inlined
            calls.setdefault(key, []).append(base + inlined - 1
                                             if 0 < inlined <= len(found) - base else None)
        found.append((address, file_name(file), line))

    while r.pos < end:
        op = r.u(1)
        if op >= opcode_base:                           # special opcode
            adjusted = op - opcode_base
            advance(adjusted // line_range)
            line += line_base + adjusted % line_range
            emit()
        elif op == 0:                                   # extended opcode
            size = r.uleb()
            if size == 0:
                continue
            start = r.pos
            sub = r.u(1)
            if sub == _LNE_END_SEQUENCE:
                key = None
                address, op_index, file, line, inlined = 0, 0, 1, 1, 0
            elif sub == _LNE_SET_ADDRESS:
                if size - 1 not in (4, 8):
                    raise BinaryFormatError(f"malformed {what}: a {size - 1}-byte address at "
                                            f"offset {r.pos}")
                fresh = key is None
                key, address = place(r.pos, r.u(size - 1))
                op_index = 0
                if fresh:
                    base = len(rows.get(key, ()))
            elif sub == _LNE_DEFINE_FILE:
                read_file()
            elif sub == _LNE_INLINED_AT:
                inlined = r.uleb()                      # then an offset in .debug_str
            r.pos = start + size                        # skips unknown ones (discriminator)
            if r.pos > end:
                raise BinaryFormatError(f"truncated {what}: extended opcode 0x{sub:x} at offset "
                                        f"{start} runs past the unit's end")
        elif op == _LNS_COPY:
            emit()
        elif op == _LNS_ADVANCE_PC:
            advance(r.uleb())
        elif op == _LNS_ADVANCE_LINE:
            line += r.sleb()
        elif op == _LNS_SET_FILE:
            file = r.uleb()
        elif op == _LNS_CONST_ADD_PC:
            advance((255 - opcode_base) // line_range)
        elif op == _LNS_FIXED_ADVANCE_PC:
            address += r.u(2)
            op_index = 0
        else:                          # set_column, negate_stmt, set_isa, flags, unknown ones
            for _ in range(lengths[op - 1]):
                r.uleb()
    return end


# ---------------------------------------------------------------- demangling

_CACHE: dict[str, str] = {}
_CACHE_MAX = 8192
_LOCK = threading.Lock()


@functools.cache
def _cxa_demangle():
    """libstdc++'s (or libc++abi's) ``__cxa_demangle`` and libc's ``free``, or None."""
    for lib in (ctypes.util.find_library("stdc++"), "libstdc++.so.6",
                ctypes.util.find_library("c++abi")):
        if not lib:
            continue
        try:
            fn = ctypes.CDLL(lib).__cxa_demangle
            free = ctypes.CDLL(ctypes.util.find_library("c") or None).free
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                       ctypes.POINTER(ctypes.c_int)]
        free.argtypes, free.restype = [ctypes.c_void_p], None
        return fn, free
    return None


def _demangle_one(fn, free, name: str) -> str:
    status = ctypes.c_int(0)
    ptr = fn(name.encode(), None, None, ctypes.byref(status))
    if not ptr:
        return name
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace") if status.value == 0 else name
    finally:
        free(ptr)


def _filt_tools() -> list[str]:
    """GNU ``c++filt`` (PATH), then ``cu++filt`` (PATH, CUDA_HOME, CUDA_PATH).

    GNU's prints what ``__cxa_demangle`` prints.  cu++filt prints EDG's style
    (``ns::k<(int)256>(float *, int)``, ``<unnamed>::k``) and leaves the
    template parameters of a function's parameters unsubstituted
    (``void ns::k2<float, (int)4>(T1 *, const T1 *)``), so it comes last.
    """
    found = []
    for tool in ("c++filt", "cu++filt"):
        path = shutil.which(tool)
        for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
            cand = os.path.join(home, "bin", tool) if home else None
            if not path and cand and os.access(cand, os.X_OK):
                path = cand
        if path:
            found.append(path)
    return found


def _demangle_tool(names: list[str], tool: str | None = None) -> dict[str, str]:
    """Demangle through a ``c++filt``-like filter (names on stdin, one a line)."""
    tool = tool or next(iter(_filt_tools()), None)
    if not tool or not names:
        return {n: n for n in names}
    try:
        proc = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True,
                              text=True, errors="replace", timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {n: n for n in names}
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != len(names):
        return {n: n for n in names}
    return {n: (d.strip() or n) for n, d in zip(names, lines)}


def demangle(symbols: Iterable[str]) -> dict[str, str]:
    """mangled -> demangled for each symbol; a name that is not mangled (or fails) maps to itself."""
    symbols = list(dict.fromkeys(symbols))
    with _LOCK:
        out = {s: _CACHE[s] for s in symbols if s in _CACHE}
    todo = [s for s in symbols if s not in out]
    mangled = [s for s in todo if s.startswith("_Z")]
    out.update((s, s) for s in todo if not s.startswith("_Z"))
    if mangled:
        lib = _cxa_demangle()
        if lib is not None:
            found = {s: _demangle_one(*lib, s) for s in mangled}
        else:
            found = _demangle_tool(mangled)
        out.update(found)
        with _LOCK:
            if len(_CACHE) + len(found) > _CACHE_MAX:
                _CACHE.clear()
            _CACHE.update(found)
    return {s: out[s] for s in symbols}


# ---------------------------------------------------------------- signatures

_OPEN, _CLOSE = "(<[{", ")>]}"


def _scan(text: str):
    """``(index, char, depth)`` for each char, depth counted over ()[]{} and <>
    (``<``/``>`` only outside parentheses, where demanglers put expressions)."""
    stack: list[str] = []
    for i, ch in enumerate(text):
        if ch in "([{" or (ch == "<" and "(" not in stack):
            stack.append(ch)
            yield i, ch, len(stack) - 1
        elif ch in ")]}" or (ch == ">" and stack and stack[-1] == "<"):
            if stack:
                stack.pop()
            yield i, ch, len(stack)
        else:
            yield i, ch, len(stack)


def split_signature(signature: str) -> tuple[str, tuple[str, ...]]:
    """``"void ns::k<256>(float*, int)"`` -> ``("ns::k<256>", ("float*", "int"))``.

    Drops a leading return type; keeps nested template arguments with commas,
    function-pointer parameters (``int (*)(int)``), ``(anonymous namespace)``
    and lambda names (``{lambda(int)#1}``) whole.  ``f(void)`` and ``f()``
    have no parameters.  Text without a parameter list comes back as the
    name with no parameters.  Spellings are the input's (see :func:`c_type`).
    """
    text = signature.strip()
    if not text.endswith(")"):
        return text, ()
    depth, open_ = 0, None
    for i in range(len(text) - 1, -1, -1):      # the parenthesis matching the last one
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            depth -= 1
            if depth == 0:
                open_ = i
                break
    if open_ is None:
        return text, ()
    head, inner = text[:open_].rstrip(), text[open_ + 1:-1]
    cut = 0
    for i, ch, d in _scan(head):                # the name follows the last top-level space
        if ch == " " and d == 0:
            cut = i + 1
    name = head[cut:]
    params, start = [], 0
    for i, ch, d in _scan(inner):
        if ch == "," and d == 0:
            params.append(inner[start:i].strip())
            start = i + 1
    params.append(inner[start:].strip())
    params = [p for p in params if p]
    if params == ["void"]:
        params = []
    return name, tuple(params)


def _angles(text: str) -> str:
    while "> >" in text:
        text = text.replace("> >", ">>")
    return text


def c_type(spelling: str) -> str:
    """A demangled type as a C++ programmer writes it.

    The pointee's ``const``/``volatile`` moves to the front (``float const*``
    -> ``const float*``, ``char const* const*`` -> ``const char* const*``;
    ``unsigned int const*`` -> ``const unsigned int*``), ``> >`` becomes
    ``>>`` and ``float *`` ``float*``.  Function-pointer types and everything else are left as they are.
    """
    text = _angles(" ".join(spelling.split())).replace(" *", "*").replace(" &", "&")
    for i, ch, d in _scan(text):
        if d:
            continue
        if ch in "*&(":
            break                               # a qualifier after this applies to the pointer
        m = re.match(r" (const|volatile)(?: (const|volatile))?(?=$|[*& ])", text[i:])
        if ch == " " and m:
            base = text[:i]
            quals = " ".join(q for q in m.groups() if q)
            return f"{quals} {base}{text[i + m.end():]}"
    return text
