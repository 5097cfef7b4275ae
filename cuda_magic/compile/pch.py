"""NVRTC precompiled headers for cells whose leading ``#include``s are heavy.

NVRTC (12.8+) can save the state after a source's initial run of preprocessor
directives (``--create-pch=FILE``) and start from it later (``--use-pch=FILE``);
it checks that the options and the directives match and compiles without the
PCH (warning #629/#630) when they do not.  On a CUB cell that is ~1.1 s -> 0.45 s
here, and 2.9-3.4 s -> 0.6 s on the H200 machine.

We use it when the cell's leading directives include a heavy header
(:data:`HEAVY`): the file is named by the sha256 of those directives (comments
dropped), the full argv, the in-memory headers, the user headers read and the
toolkit, so a PCH is only ever offered to a compile it was made for.  The flag is
in the argv that ran, and ``Output.pch`` says ``created`` or ``used``.

Files live in ``settings.pch_dir`` (``$CUDA_MAGIC_PCH_DIR`` or ``~/.cache/cuda-magic/pch``: a
0700 directory we create, or one owned by us and not writable by others); each is
~300 MB, so the directory is capped (``settings.pch_limit``, :func:`set_limit`, default 2 GiB,
least recently used first out).  :func:`clear` empties it; ``settings.pch = False``
(``CUDA_MAGIC_PCH=0``) turns PCH off.  See :mod:`cuda_magic.settings`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import stat
import threading
from typing import Mapping, Sequence

from .. import settings

__all__ = ["HEAVY", "heavy", "directory", "set_limit", "clear", "plan", "enabled", "usage"]

# Include prefixes worth a PCH (each costs 0.5-3 s to parse under NVRTC).
HEAVY = ("cub/", "thrust/", "cuda/", "cooperative_groups", "cute/", "cutlass/",
         "curand_kernel.h", "mma.h", "cuda_pipeline", "cuda_awbarrier",
         "cuda_fp8.h", "cuda_fp6.h", "cuda_fp4.h")   # these three include fp16 and bf16

_LOCK = threading.Lock()       # one PCH creation at a time (the heap size is process-wide)
_state = {"checked": None}


def enabled() -> bool:
    """``settings.pch`` (``CUDA_MAGIC_PCH``)."""
    return settings.pch


def directory() -> str | None:
    """The PCH directory, ``settings.pch_dir`` (created 0700 on first use), or None if none can
    be used."""
    path = os.path.abspath(settings.pch_dir)
    if _state["checked"] == path:
        return path
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None       # a symlink, another user's, or writable by others: not trusted
    _state["checked"] = path
    return path


def set_limit(nbytes: int) -> None:
    """Cap the PCH directory at ``nbytes`` (oldest-used files are removed first): sets
    ``settings.pch_limit``."""
    settings.put("pch_limit", nbytes, by="nbytes")


def usage() -> tuple[int, int]:
    """(number of PCH files, bytes) in the directory."""
    files = _files()
    return len(files), sum(size for _, size, _ in files)


def clear() -> int:
    """Remove every PCH file; returns how many."""
    files = _files()
    for path, _, _ in files:
        try:
            os.unlink(path)
        except OSError:
            pass
    return len(files)


def _files() -> list[tuple[str, int, float]]:
    d = directory()
    out = []
    if d is None:
        return out
    for entry in os.scandir(d):
        if entry.name.endswith(".pch") and entry.is_file(follow_symlinks=False):
            st = entry.stat(follow_symlinks=False)
            out.append((entry.path, st.st_size, st.st_mtime))
    return out


def _evict(keep: str | None = None) -> None:
    files = sorted(_files(), key=lambda f: f[2], reverse=True)   # most recently used first
    limit = settings.pch_limit
    total = 0
    for path, size, _ in files:
        total += size
        if total > limit and path != keep:
            try:
                os.unlink(path)
            except OSError:
                pass


# libcu++ headers that cost no more than a bare kernel to parse; a supplied standard header
# built on any other libcu++ header (<cmath>, <type_traits>, <algorithm>...) is heavy.
_LIGHT = re.compile(r"<cuda/std/(?!(?:detail/__config|version|climits|cfloat|cstdint|cstddef|"
                    r"initializer_list|__cstdlib/div\.h)>)")


_CXX20 = re.compile(r"^#if __cplusplus >= 202002L\n.*?^#endif\n", re.M | re.S)


@functools.cache
def _heavy_std() -> frozenset[str]:
    """Supplied headers built on heavy libcu++ ones (not counting C++20-only parts: the thin
    <cmath> takes std::lerp from libcu++ under C++20 only)."""
    from .stdheaders import HEADERS
    return frozenset(name for name, text in HEADERS.items() if _LIGHT.search(_CXX20.sub("", text)))


def heavy(name: str, headers: Mapping[str, str]) -> bool:
    """Whether ``#include <name>`` is worth a PCH: a toolkit header of :data:`HEAVY`, or a
    standard header cuda-magic supplies (in ``headers``) on top of a heavy libcu++ one."""
    if name.startswith(HEAVY):
        return True
    if name in _heavy_std():
        from .stdheaders import HEADERS
        return headers.get(name) == HEADERS[name]
    return False


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def prefix(source: str) -> str:
    """The source's initial run of preprocessor directives, comments and blank lines dropped."""
    lines = []
    text = _COMMENTS.sub(lambda m: "\n" * m.group().count("\n"), source)
    cont = False
    for line in text.split("\n"):
        s = line.strip()
        if cont or s.startswith("#"):
            lines.append(s)
            cont = s.endswith("\\")
        elif s:
            break
    return "\n".join(lines)


def plan(source: str, argv: Sequence[str], headers: Mapping[str, str], salt: str):
    """``(path, exists)`` of the PCH for this compile, or None when a PCH would not help."""
    if not enabled():
        return None
    head = prefix(source)
    includes = re.findall(r'#\s*include\s*[<"]([^>"]+)[>"]', head)
    if not any(heavy(name, headers) for name in includes):
        return None
    d = directory()
    if d is None:
        return None
    h = hashlib.sha256()
    for part in (head, "\0".join(argv), salt, *(f"{k}\0{headers[k]}" for k in sorted(headers))):
        h.update(part.encode())
        h.update(b"\1")
    path = os.path.join(d, h.hexdigest()[:32] + ".pch")
    try:
        st = os.lstat(path)
        ok = stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid()
    except OSError:
        ok = False
    if ok:
        os.utime(path)        # recently used: evicted last
    return path, ok


def created(tmp: str, path: str) -> None:
    """A PCH was written to ``tmp``: publish it as ``path``, keep the directory under its cap."""
    os.replace(tmp, path)
    _evict(keep=path)


def lock() -> threading.Lock:
    return _LOCK


settings.watch("pch_limit", lambda nbytes: _evict())
