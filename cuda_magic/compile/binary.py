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
from typing import Iterable

from ..config import Error
from .backends import ToolNotFoundError

__all__ = ["Entry", "Image", "BinaryFormatError", "entries", "demangle", "split_signature",
           "c_type", "fatbin_images"]

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
    if fmt == "cubin":
        raw = _elf_entries(_as_bytes(binary))
    elif fmt == "ptx":
        raw = _ptx_entries(binary.decode("utf-8", "replace") if isinstance(binary, bytes) else binary)
    elif fmt == "fatbin":
        raw = _fatbin_entries(_as_bytes(binary), arch)
    else:
        raise ValueError(f"fmt must be one of {FORMATS}, not {fmt!r}")
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


def _elf_entries(data: bytes) -> list[tuple[str, tuple[tuple[int, int], ...] | None]]:
    """``(symbol, params)`` of each kernel entry of an ELF64 cubin."""
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
        secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        shstr = secs[shstrndx][4]
        names = [_cstr(data, shstr + s[0]) for s in secs]
        infos: dict[int, bytes] = {}       # .text section index -> its .nv.info.<name> data
        by_name: dict[str, bytes] = {}
        for name, s in zip(names, secs):
            if name.startswith(".nv.info."):
                body = data[s[4]:s[4] + s[5]]
                by_name[name[len(".nv.info."):]] = body
                if s[7]:
                    infos[s[7]] = body
        out = []
        for s in secs:
            if s[1] != _SHT_SYMTAB:
                continue
            strtab = secs[s[6]][4]
            for at in range(s[4], s[4] + s[5], s[9] or 24):
                st_name, st_info, st_other, st_shndx = struct.unpack_from("<IBBH", data, at)
                if st_info & 0xF != _STT_FUNC or not st_other & _STO_CUDA_ENTRY or not st_shndx:
                    continue
                sym = _cstr(data, strtab + st_name)
                info = infos.get(st_shndx, by_name.get(sym))
                out.append((sym, None if info is None else _kparams(info)))
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
