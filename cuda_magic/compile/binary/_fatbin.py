"""A fatbin's images: reading the container, the entries of its images, the cubin for an arch.

A fatbin (nvcc ``--fatbin``) is a container (``u32 magic 0xBA55ED50, u16 version, u16 header
size, u64 size``) of images, each ``u16 kind (1 PTX, 2 ELF), u16, u32 header size,
u64 payload size, ...``, with the arch number at header byte 28 and flags at byte 40
(0x2000 LZ4, 0x8000 zstd compressed, 0x100000 ``a``, 0x200000 ``f`` arch).  nvcc 13
compresses PTX images (zstd) by default but not SASS ones, unless ``-G`` or
``-Xfatbin=-compress-all`` (``--concat`` images are compressed whole).  Uncompressed ELF
images are read in place; if an image needed is compressed (Python's standard library has
neither zstd nor LZ4 before 3.14), ``cuobjdump -xelf all`` / ``-xptx all`` extracts them in a
private temporary directory (a few milliseconds; cached: :func:`fatbin_extract`).  The
entries are those of the ELF images (the one for ``arch`` if given and present), or of the
PTX images if it has none.
"""

from __future__ import annotations

import functools
import os
import re
import struct
import subprocess
import tempfile
from dataclasses import dataclass

from ... import tools
from ...errors import ToolNotFoundError
from ._cubin import cubin_entries
from ._format import FATBIN_MAGIC, FORMATS, BinaryFormatError, as_bytes
from ._ptx import ptx_entries

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
    if binary[:4] != FATBIN_MAGIC:
        what = "a cubin (ELF)" if binary[:4] == b"\x7fELF" else "no fatbin magic"
        raise BinaryFormatError(f"expected a fatbin, got {what}")
    out, at = [], 0
    try:
        while at + 16 <= len(binary) and binary[at:at + 4] == FATBIN_MAGIC:
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
            nxt = binary.find(FATBIN_MAGIC, end)            # the next container, after padding
            if nxt < 0 or binary[end:nxt].strip(b"\0"):
                break
            at = nxt
    except struct.error:
        raise BinaryFormatError("truncated fatbin") from None
    return tuple(out)


def fatbin_entries(binary: bytes, arch: str | None):
    """``(symbol, params)`` of each kernel entry of a fatbin (see the module docstring)."""
    images = fatbin_images(binary)
    other = any(i.kind not in ("elf", "ptx") for i in images)     # e.g. --concat's whole-fatbin image
    elves = [(i.arch, i.data) for i in images if i.kind == "elf" and not i.compressed]
    if other or any(i.kind == "elf" and i.compressed for i in images):
        elves = list(fatbin_extract(binary, "elf"))   # compressed SASS: cuobjdump decompresses all
    if elves:
        return _merge([(a, cubin_entries(d)) for a, d in elves], arch)
    ptxs = [(i.arch, i.data) for i in images if i.kind == "ptx" and not i.compressed]
    if other or any(i.kind == "ptx" and i.compressed for i in images):
        ptxs = list(fatbin_extract(binary, "ptx"))
    return _merge([(a, ptx_entries(d.rstrip(b"\0").decode("utf-8", "replace")))
                   for a, d in ptxs], arch)


def arch_key(arch: str) -> tuple[int, str]:
    """``"sm_90a"`` -> ``(90, "a")``; ``(0, "")`` for text without an arch number."""
    m = re.search(r"(\d+)([af]?)$", arch)
    return (int(m.group(1)), m.group(2)) if m else (0, "")


def _merge(images, arch: str | None):
    """The entries of the image for ``arch`` if present, else of all, highest arch first."""
    if arch:
        want = arch_key(arch)
        exact = [img for img in images if arch_key(img[0]) == want]
        same = exact or [img for img in images if arch_key(img[0])[0] == want[0]]
        images = same or images
    seen: dict[str, tuple] = {}
    for _, found in sorted(images, key=lambda img: arch_key(img[0]), reverse=True):
        for sym, params in found:
            seen.setdefault(sym, params)
    return list(seen.items())


def _find_cuobjdump() -> str:
    """cuobjdump's path (:func:`cuda_magic.tools.find`); not found, the error says why it is needed."""
    try:
        return tools.find("cuobjdump")
    except ToolNotFoundError as e:
        raise ToolNotFoundError(f"this fatbin's images are compressed and {e}") from None


@functools.lru_cache(maxsize=16)
def fatbin_extract(binary: bytes, kind: str) -> tuple[tuple[str, bytes], ...]:
    """``(arch, bytes)`` per image of ``kind`` ("elf"/"ptx") of a fatbin, decompressed by
    ``cuobjdump -x<kind> all`` in a private temporary directory (cached)."""
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


def cubin_for(binary: bytes, fmt: str, arch: str) -> bytes | None:
    """The cubin of a compile result for ``arch`` (``"sm_90a"``), or None.

    ``"cubin"``: the binary itself.  ``"fatbin"``: the uncompressed SASS (ELF)
    image for ``arch`` (the exact arch, else the one of the same number, ``sm_90``
    for ``sm_90a``), None if there is none or it is compressed (``-G``,
    ``-Xfatbin=-compress-all``).  ``"ptx"``: None.
    """
    if fmt == "cubin":
        return as_bytes(binary)
    if fmt == "ptx":
        return None
    if fmt != "fatbin":
        raise ValueError(f"fmt must be one of {FORMATS}, not {fmt!r}")
    elves = [i for i in fatbin_images(as_bytes(binary)) if i.kind == "elf"]
    want = arch_key(arch)
    found = ([i for i in elves if arch_key(i.arch) == want]
             or [i for i in elves if arch_key(i.arch)[0] == want[0]])
    if not found or found[0].compressed:
        return None
    return found[0].data
