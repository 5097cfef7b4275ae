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

Files live in ``settings.pch_dir`` (``$CUDA_MAGIC_PCH_DIR`` or ``~/.cache/cuda-magic/pch``).  Each
is ~300 MB, so the directory is capped (``settings.pch_limit``, :func:`set_limit`, default 2 GiB,
least recently used first out).  :func:`clear` empties it; ``settings.pch = False``
(``CUDA_MAGIC_PCH=0``) turns PCH off.  See :mod:`cuda_magic.settings`.

A PCH serves every process of the user, today's and tomorrow's: NVRTC uses one only where its
PCH heap sits at the address it had when the PCH was made, so :mod:`.pch_heap` puts the heap at
one address in every process and names it, and that name is part of the file's.  Nothing NVRTC
refuses is removed (another process may be using it): a PCH NVRTC calls invalid is made again
over it (renamed into place: a process reading the old file keeps it whole), one made for a heap
elsewhere (warning #20282) is skipped, said once.  Only the size cap and :func:`clear` remove.

A PCH is a cache, so it trusts nothing it did not write (docs/cache.md's rules):

- the directory is checked at every use like the compile cache's (ours, not writable by
  others; one we create is 0700; a symlink to one is followed and its target checked);
  otherwise a warning, once, and compiles go without PCH;
- a PCH is offered to NVRTC only when its sidecar ``NAME.pch.mac`` holds an HMAC (the compile
  cache's per-user secret) over its name and the file's identity (inode, size, modification
  and change times) as written: a file copied or moved over the name, edited, or left by an
  older cuda-magic is replaced, never used;
- a fault in the store (a full disk, a directory at a file's path) degrades to compiling
  without a PCH and says so once (:func:`say`); after a failed write no new PCH is tried in
  that directory for the rest of the process (:func:`clear` tries again); NVRTC unable to map
  a PCH's memory (a file-size limit) turns PCH off for the process (:func:`unmappable`).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import re
import stat
import tempfile
import threading
import warnings
from typing import Callable, Mapping, Sequence

from .. import settings
from .cache import Untrusted, check_dir, make_dir, read_checked, secret_at, user_secret

__all__ = ["HEAVY", "heavy", "directory", "set_limit", "clear", "plan", "enabled", "usage",
           "created", "write_failed", "unmappable", "refused", "unfit", "sign", "say", "forget",
           "lock", "COMMENTS"]

# Include prefixes worth a PCH (each costs 0.5-3 s to parse under NVRTC).
HEAVY = ("cub/", "thrust/", "cuda/", "cooperative_groups", "cute/", "cutlass/",
         "curand_kernel.h", "mma.h", "cuda_pipeline", "cuda_awbarrier",
         "cuda_fp8.h", "cuda_fp6.h", "cuda_fp4.h")   # these three include fp16 and bf16

_LOCK = threading.Lock()       # one PCH creation at a time (the heap size is process-wide)
_state: dict = {"no_create": None,      # a directory where writing a PCH failed (this process)
                "off": False,           # NVRTC could not map a PCH's memory (this process)
                "remake": set(),        # PCHs NVRTC refused here: made again (replaced) next
                "unfit": set()}         # PCHs made for a heap elsewhere: not offered again
_said: set[str] = set()                 # the problems already said (each once)
_MAC = ".mac"                           # NAME.pch.mac: the HMAC of NAME.pch as we wrote it
_FALLBACK_SECRET = ".pch-secret"        # in the directory, when the per-user secret can't be used


def enabled() -> bool:
    """``settings.pch`` (``CUDA_MAGIC_PCH``)."""
    return settings.pch


def directory() -> str | None:
    """The PCH directory, ``settings.pch_dir`` (created 0700 on first use), or None if it cannot
    be used (said once: why, like a bad compile cache directory).  Checked at every use."""
    requested = settings.pch_dir
    path = os.path.abspath(os.path.expanduser(requested))
    try:
        make_dir(path)
        check_dir(path, "the directory")
    except (OSError, Untrusted, ValueError) as e:
        say(f"dir:{path}", f"cuda-magic: not using {requested!r} for precompiled headers ({e}); "
            f"compiling without them. Use a directory of your own that only you can write "
            f"(cuda_magic.settings.pch_dir, docs/real-code.md).")
        return None
    return path


def say(key: str, message: str) -> None:
    """Warn ``message`` (RuntimeWarning) once per ``key`` in this process."""
    if key not in _said:
        _said.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def forget() -> None:
    """Forget the problems already said, the directory where a write failed and a mapping fault."""
    _said.clear()
    _state["no_create"] = None
    _state["off"] = False
    _state["remake"].clear()
    _state["unfit"].clear()


def set_limit(nbytes: int) -> None:
    """Cap the PCH directory at ``nbytes`` (oldest-used files are removed first): sets
    ``settings.pch_limit``."""
    settings.put("pch_limit", nbytes, by="nbytes")


def usage() -> tuple[int, int]:
    """(number of PCH files, bytes) in the directory."""
    files = _files()
    return len(files), sum(size for _, size, _ in files)


def clear() -> int:
    """Remove every PCH file (and its MAC); returns how many.  A directory where writing failed
    is tried again afterwards."""
    files = _files()
    for path, _, _ in files:
        _remove(path)
    d = directory()
    if d is not None:
        for entry in os.scandir(d):       # MACs left without their PCH, our own temp files
            if entry.name.endswith((".pch" + _MAC, ".tmp")) and entry.is_file(follow_symlinks=False):
                _unlink(entry.path)
    forget()
    return len(files)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _remove(path: str) -> None:
    """Remove a PCH of ours and its MAC (never a directory planted at its path)."""
    if not os.path.isdir(path):
        _unlink(path)
    _unlink(path + _MAC)


def _files() -> list[tuple[str, int, float]]:
    """(path, bytes, last use) of each PCH file: last use is its MAC's modification time."""
    d = directory()
    out = []
    if d is None:
        return out
    for entry in os.scandir(d):
        if entry.name.endswith(".pch") and entry.is_file(follow_symlinks=False):
            st = entry.stat(follow_symlinks=False)
            try:
                used = os.lstat(entry.path + _MAC).st_mtime
            except OSError:
                used = st.st_mtime
            out.append((entry.path, st.st_size, used))
    return out


def _evict(keep: str | None = None) -> None:
    files = sorted(_files(), key=lambda f: f[2], reverse=True)   # most recently used first
    limit = settings.pch_limit
    total = 0
    for path, size, _ in files:
        total += size
        if total > limit and path != keep:
            _remove(path)


# ---- what we wrote: an HMAC over each PCH file's identity ------------------------------------

@functools.lru_cache(maxsize=4)
def _secret(d: str) -> bytes:
    try:
        return user_secret()
    except (OSError, Untrusted):   # no usable per-user secret: keep one in the directory
        return secret_at(os.path.join(d, _FALLBACK_SECRET))


def _mac(path: str, st: os.stat_result) -> bytes:
    who = (f"cuda-magic pch v1\0{os.path.basename(path)}\0{st.st_ino}:{st.st_size}:"
           f"{st.st_mtime_ns}:{st.st_ctime_ns}").encode()
    return hmac.new(_secret(os.path.dirname(path)), who, hashlib.sha256).hexdigest().encode()


def _ours(st: os.stat_result) -> bool:
    return (stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
            and not st.st_mode & 0o022)


def sign(path: str) -> None:
    """Record ``path`` (a PCH just written) as ours: its MAC, written atomically beside it."""
    st = os.lstat(path)
    tmp = f"{path}{_MAC}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_mac(path, st))
        os.replace(tmp, path + _MAC)
    except BaseException:
        _unlink(tmp)
        raise


def _verified(path: str) -> bool:
    """Whether ``path`` is a PCH file we wrote, unchanged since."""
    try:
        st = os.lstat(path)
        if not _ours(st):
            return False
        mac = read_checked(path + _MAC, 64)
        return hmac.compare_digest(mac, _mac(path, st))
    except (OSError, Untrusted):
        return False


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


COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)     # C/C++ comments (strings aside)


def prefix(source: str) -> str:
    """The source's initial run of preprocessor directives, comments and blank lines dropped."""
    lines = []
    text = COMMENTS.sub(lambda m: "\n" * m.group().count("\n"), source)
    cont = False
    for line in text.split("\n"):
        s = line.strip()
        if cont or s.startswith("#"):
            lines.append(s)
            cont = s.endswith("\\")
        elif s:
            break
    return "\n".join(lines)


def plan(source: str, argv: Sequence[str], headers: Mapping[str, str], salt: str,
         heap: Callable[[], str] = lambda: ""):
    """``(path, exists)`` of the PCH for this compile, or None when a PCH would not help or
    cannot be had (said once).  ``exists``: a PCH we wrote for exactly these inputs is there
    (anything else at the path is replaced when the PCH is made).  ``heap()`` names the compiler's
    PCH heap (:mod:`.pch_heap`), asked only when a PCH would help: a PCH is made for one heap
    address.  A bad ``settings.pch_limit`` (``CUDA_MAGIC_PCH_LIMIT``) is its ConfigError, before
    any PCH is made."""
    if not enabled() or _state["off"]:
        return None
    head = prefix(source)
    includes = re.findall(r'#\s*include\s*[<"]([^>"]+)[>"]', head)
    if not any(heavy(name, headers) for name in includes):
        return None
    settings.get("pch_limit")     # a bad CUDA_MAGIC_PCH_LIMIT: its ConfigError now, before a PCH
    d = directory()
    if d is None:
        return None
    where = heap()
    if _state["off"]:               # NVRTC could not map the heap (said)
        return None
    if where.startswith("process"):
        say("heap", "cuda-magic: NVRTC's precompiled-header heap could not be put at the address "
            "every session shares (docs/real-code.md); the precompiled headers made now serve "
            "this session only.")
    h = hashlib.sha256()
    for part in (head, "\0".join(argv), salt, where,
                 *(f"{k}\0{headers[k]}" for k in sorted(headers))):
        h.update(part.encode())
        h.update(b"\1")
    path = os.path.join(d, h.hexdigest()[:32] + ".pch")
    if path in _state["unfit"]:
        return None
    if path not in _state["remake"] and _verified(path):
        try:
            os.utime(path + _MAC)       # recently used: evicted last
        except OSError:
            pass
        return path, True
    if os.path.isdir(path):
        say(f"path:{path}", f"cuda-magic: not making the precompiled header {path}: it is a "
            f"directory, not a regular file (not ours: left as it is); compiling without it.")
        return None
    if _state["no_create"] == d:       # writing failed there (said): no new PCH this session
        return None
    return path, False


def created(tmp: str, path: str) -> bool:
    """A PCH was written to ``tmp``: publish it as ``path`` (signed), keep the directory under
    its cap.  False (said once, ``tmp`` removed) when it could not be published."""
    replaced = False
    try:
        os.replace(tmp, path)       # a process reading the old file keeps it whole
        replaced = True
        sign(path)
        _state["remake"].discard(path)
    except OSError as e:
        _unlink(tmp)
        if replaced:                # ours, unsigned: no process would use it
            _remove(path)
        write_failed(os.path.dirname(path), f"{type(e).__name__}: {e.strerror or e}")
        return False
    _evict(keep=path)
    return True


def write_failed(d: str, why: str) -> None:
    """NVRTC could not write a PCH in ``d`` (a full disk, a quota): said once; no new PCH is tried
    there for the rest of the process (:func:`clear` tries again)."""
    _state["no_create"] = d
    say(f"write:{d}", f"cuda-magic: could not write a precompiled header in {d} ({why}); "
        f"compiling without one. No new precompiled headers are made there in this session "
        f"(the ones there are still used); free space and call cuda_magic.clear_pch() to try again.")


def unmappable(why: str) -> None:
    """NVRTC could not map the memory a PCH needs (it grows a temporary file for it): a
    file-size limit (``ulimit -f``) or a full temporary directory, no fault of the PCH or its
    directory.  Said once; no PCH is made or used for the rest of the process (:func:`clear`
    tries again)."""
    _state["off"] = True
    say("map", f"cuda-magic: NVRTC could not map memory for a precompiled header ({why}: it "
        f"backs one with a temporary file in {tempfile.gettempdir()}, so a file-size limit, "
        f"ulimit -f, or a full temporary directory stops it); compiling without precompiled "
        f"headers for the rest of this session (cuda_magic.clear_pch() tries again).")


def refused(path: str) -> None:
    """NVRTC would not use the PCH we wrote at ``path`` (invalid): the next compile makes it again,
    replacing it (a rename: another process reading the old file keeps it whole).  Never removed
    here, as another process may be using it."""
    _state["remake"].add(path)


def unfit(path: str) -> None:
    """NVRTC would not use the PCH at ``path`` because it was made with the PCH heap at another
    address (warning #20282; :mod:`.pch_heap` names PCHs by heap, so this is a process whose heap
    could not be placed): kept for the processes it fits, not offered again here, said once."""
    _state["unfit"].add(path)
    say("unfit", f"cuda-magic: the precompiled header {os.path.basename(path)} was made with "
        f"NVRTC's heap at another address than this process's; compiling without it (it is "
        f"kept for the sessions it fits).")


def lock() -> threading.Lock:
    return _LOCK


settings.watch("pch_limit", lambda nbytes: _evict())
