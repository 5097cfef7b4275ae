"""Putting an export's files at a path safely.

``path`` is written whole or not at all: the files go into a hidden temporary directory beside
it (``.NAME.new.PID.XXXXXXXX``), which then takes ``path``'s place.  An existing directory is
replaced only when it is an earlier export of the same name whose files are as that export
wrote them (or with ``overwrite=True``): the manifest's digests tell, so a file the user edited
or added is never lost without ``overwrite=True``.  On Linux the swap is one step
(``renameat2(RENAME_EXCHANGE)``); elsewhere the earlier export is first renamed aside
(``.NAME.old.PID``), and an export that was killed between the two renames is put right by the
next export to that path.  Exports into one folder take turns (``flock`` on the folder).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import hashlib
import io
import json
import os
import pathlib
import re
import shutil
import sys
import tempfile
import time
import warnings
import zipfile

from ..errors import ExportError, quote
from . import manifest as _manifest, wheel

try:
    import fcntl
except ImportError:                 # not on this system: exports are not serialised
    fcntl = None

__all__ = ["write"]

LOCK_WAIT = 60.0                    # seconds an export waits for another one into the folder
_LISTED = 5                         # files a message names


def write(path: pathlib.Path, files: dict[str, bytes], overwrite: bool, name: str) -> None:
    """Put ``files`` (relative path -> bytes) at directory ``path``, whole or not at all, for the
    export named ``name``.  A file-system failure is an :class:`ExportError` naming ``path`` and
    the cause; what was at ``path`` is then as it was."""
    where = quote(str(path), 80)
    if "\0" in str(path):
        raise ExportError(f"path {where} holds a NUL character")
    try:
        os.fsencode(path)
    except UnicodeEncodeError as err:
        raise ExportError(f"path {where}: not a file name on this system ({err.reason})") from None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(path.parent, where) as locked:
            _recover(path, locked)
            _check(path, files, name, overwrite)
            _put(path, files, where)
    except OSError as err:
        raise ExportError(f"path {where}: {err.strerror or err}; nothing there changed") from None


# --- refusing what is not an earlier export --------------------------------------------------------

def _check(path: pathlib.Path, files: dict[str, bytes], name: str, overwrite: bool) -> None:
    where = quote(str(path), 80)
    if path.is_symlink():
        raise ExportError(f"path {where} is a symbolic link (to {quote(os.readlink(path), 80)}); "
                          f"give the directory itself")
    if path.exists() and not path.is_dir():
        raise ExportError(f"path {where} is a file; an export writes a directory")
    if overwrite or not path.exists() or not any(path.iterdir()):
        return
    earlier = _earlier(path)
    if earlier is None:
        raise ExportError(f"path {where} holds files that are not an export; "
                          f"choose an empty or new directory, or pass overwrite=True")
    was, written = earlier
    if was != name:
        raise ExportError(f"path {where} holds an earlier export named {quote(was, 80)}, not "
                          f"{name!r}; choose another directory, or pass overwrite=True to "
                          f"replace it")
    changed = [rel for rel, digest in sorted(written.items())
               if not _unchanged(path / rel, digest, files.get(rel))]
    extra = _foreign(path, written)
    parts = ([f"files changed since it wrote them ({_listed(changed)})"] if changed else []) + \
            ([f"files it did not write ({_listed(extra)})"] if extra else [])
    if parts:
        raise ExportError(f"path {where} holds an earlier export and {' and '.join(parts)}; move "
                          f"them, or pass overwrite=True to replace the directory, them included")


def _listed(rels: list[str]) -> str:
    more = f" and {len(rels) - _LISTED} more" if len(rels) > _LISTED else ""
    return ", ".join(quote(r, 60) for r in rels[:_LISTED]) + more


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _unchanged(f: pathlib.Path, digest: str | None, new: bytes | None) -> bool:
    """Whether replacing ``f`` loses nothing: it is gone, or its bytes are what the earlier
    export wrote (``digest``) or what this one writes there (``new``)."""
    if not os.path.lexists(f):
        return True
    if f.is_symlink() or not f.is_file():
        return False
    data = f.read_bytes()
    return data == new or (digest is not None and _sha(data) == digest)


def _manifest_at(f: pathlib.Path) -> dict | None:
    if f.is_symlink() or not f.is_file():
        return None
    try:
        m = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return m if isinstance(m, dict) and m.get("format") == _manifest.FORMAT else None


def _relative(rel) -> bool:
    """Whether a manifest's file name is a plain relative path (nothing outside the export)."""
    if not isinstance(rel, str) or "\0" in rel or "\\" in rel:
        return False
    p = pathlib.PurePosixPath(rel)
    return not p.is_absolute() and ".." not in p.parts and p.as_posix() == rel


def _digests(m: dict, prefix: str = "") -> dict[str, str | None]:
    """The files an export with manifest ``m`` wrote (relative to its directory) -> the sha256
    of what it wrote there: ``files`` for the generated sources, ``builds[].sha256`` for the
    binaries, and the manifest as the export writes it (canonical JSON)."""
    out = {"manifest.json": _sha(_manifest.dumps(m))}
    if isinstance(m.get("files"), dict):
        out.update({rel: d for rel, d in m["files"].items() if isinstance(d, str)})
    binaries = "binaries/" if m.get("export") in ("torch", "wheel") else ""
    for b in m.get("builds") or ():
        if isinstance(b, dict) and isinstance(b.get("file"), str):
            out[binaries + b["file"]] = b["sha256"] if isinstance(b.get("sha256"), str) else None
    return {prefix + rel: d for rel, d in out.items() if _relative(prefix + rel)}


def _earlier(path: pathlib.Path) -> tuple[str, dict[str, str | None]] | None:
    """The name of the earlier export ``path`` holds and its files -> their digests, or None
    when it holds none: a torch or cubin export's ``manifest.json``, or a wheel export's
    ``pyproject.toml`` beside ``<name>/manifest.json``."""
    m = _manifest_at(path / "manifest.json")
    if m is not None:
        return m.get("name"), _digests(m)
    for f in sorted(path.glob("*/manifest.json")):
        m = _manifest_at(f)
        if m is not None and m.get("export") == "wheel" and (path / "pyproject.toml").is_file():
            out = _digests(m, f.parent.name + "/")
            out.update(_wheel_digests(path, m))
            return m.get("name"), out
    return None


def _wheel_digests(path: pathlib.Path, m: dict) -> dict[str, str | None]:
    """A wheel export's ``pyproject.toml`` and wheel -> their digests, made again the way the
    export makes them from what the wheel holds (None where the wheel cannot be read)."""
    name, version = m.get("name"), m.get("version")
    whl = f"dist/{wheel.wheel_name(name, version)}"
    if not _relative(whl):
        return {}
    try:
        with zipfile.ZipFile(io.BytesIO((path / whl).read_bytes())) as z:
            if sum(i.file_size for i in z.infolist()) > 1 << 30:
                raise ValueError("too large")
            package = {n[len(name) + 1:]: z.read(n) for n in z.namelist()
                       if n.startswith(f"{name}/")}
            meta = z.read(f"{name}-{version}.dist-info/METADATA").decode()
            made_by = z.read(f"{name}-{version}.dist-info/WHEEL").decode()
        summary = re.search(r"^Summary: (.*)$", meta, re.M)[1]
        cm_version = re.search(r"^Generator: cuda-magic (\S+)$", made_by, re.M)[1]
        return {"pyproject.toml": _sha(wheel.pyproject(name, version, summary).encode()),
                whl: _sha(wheel.wheel_bytes(name, version, summary, package, cm_version))}
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile):
        return {"pyproject.toml": None, whl: None}


def _foreign(path: pathlib.Path, written) -> list[str]:
    """The files (and links, and anything else not a directory) under ``path`` an earlier
    export did not write.  A ``__pycache__`` folder holding only ``.pyc`` files (what importing
    the package leaves) is not counted; anything else is, ``build/`` and ``*.egg-info`` too."""
    out = []

    def fail(err):
        raise err

    for top, dirs, names in os.walk(path, onerror=fail):
        here = pathlib.PurePosixPath(pathlib.Path(top).relative_to(path).as_posix())
        if here.name == "__pycache__" and not dirs and all(
                n.endswith(".pyc") and not os.path.islink(os.path.join(top, n)) for n in names):
            continue
        links = [d for d in dirs if os.path.islink(os.path.join(top, d))]
        out += [(here / n).as_posix() for n in sorted(names + links)
                if (here / n).as_posix() not in written]
    return sorted(out)


# --- putting the files there -------------------------------------------------------------------------

def _stem(path: pathlib.Path) -> str:
    """``path``'s name in the hidden names beside it (a digest where the name is long, so that
    ``.NAME.new.PID.XXXXXXXX`` stays within a file name's 255 bytes)."""
    name = path.name
    return name if len(os.fsencode(name)) <= 200 else _sha(os.fsencode(name))[:16]


def _put(path: pathlib.Path, files: dict[str, bytes], where: str) -> None:
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{_stem(path)}.new.{os.getpid()}.",
                                        dir=path.parent))
    try:
        for rel, data in sorted(files.items()):
            f = tmp / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(data)
            os.chmod(f, 0o644)
        os.chmod(tmp, 0o755)
        if not os.path.lexists(path):
            os.replace(tmp, path)
        elif not _exchange(tmp, path):         # else tmp now holds the earlier export
            _two_renames(tmp, path, where)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _two_renames(tmp: pathlib.Path, path: pathlib.Path, where: str) -> None:
    """``tmp`` to ``path`` where the swap cannot be one step: the earlier export goes aside
    first and comes back if the second rename fails."""
    old = path.with_name(f".{_stem(path)}.old.{os.getpid()}")
    os.replace(path, old)
    try:
        os.replace(tmp, path)
    except BaseException:
        if not os.path.lexists(path):
            try:
                os.replace(old, path)
            except OSError as err:
                raise ExportError(f"path {where}: {err.strerror or err}; the earlier export is "
                                  f"in {old.name} beside it, and the next export to the path "
                                  f"moves it back") from None
        raise
    shutil.rmtree(old, ignore_errors=True)


@functools.lru_cache(maxsize=None)
def _renameat2():
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):       # a C library without it
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def _exchange(a: pathlib.Path, b: pathlib.Path) -> bool:
    """Swap directories ``a`` and ``b`` in one step (Linux ``renameat2(RENAME_EXCHANGE)``);
    False where this system or file system cannot."""
    fn = _renameat2()
    if fn is None:
        return False
    at_cwd, exchange = -100, 2
    if fn(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), exchange) == 0:
        return True
    e = ctypes.get_errno()
    if e in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(e, os.strerror(e), str(b))


# --- taking turns, and what an interrupted export left -----------------------------------------------

@contextlib.contextmanager
def _locked(folder: pathlib.Path, where: str):
    """Hold an exclusive ``flock`` on ``folder`` (nothing written, nothing left behind); yields
    whether the lock is held (not where the system or file system has no locks)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except PermissionError:                 # a folder this user may write in but not read
        fd = None
    try:
        yield fd is not None and _lock(fd, where)
    finally:
        if fd is not None:
            os.close(fd)                    # and with it the lock


def _lock(fd: int, where: str) -> bool:
    if fcntl is None:
        return False
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise ExportError(f"path {where}: another export into its folder has not "
                                  f"finished in {LOCK_WAIT:.0f} s; try again") from None
            time.sleep(0.005)
        except OSError:                     # a file system without locks
            return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _leftovers(path: pathlib.Path, locked: bool) -> tuple[list, list]:
    """The hidden directories beside ``path`` that exports which are no longer running left:
    (earlier exports moved aside, temporary directories)."""
    stem = re.escape(_stem(path))
    olds, tmps = [], []
    try:
        entries = list(os.scandir(path.parent))
    except PermissionError:                 # not readable: nothing found
        entries = []
    for entry in entries:
        m = re.fullmatch(rf"\.{stem}\.(old)\.(\d{{1,9}})|\.{stem}\.new\.(\d{{1,9}})\.[^.]+",
                         entry.name)
        if m is None or not entry.is_dir(follow_symlinks=False):
            continue
        pid = int(m[2] or m[3])
        if (pid == os.getpid() and locked) or (pid != os.getpid() and not _alive(pid)):
            (olds if m[1] else tmps).append(pathlib.Path(entry.path))
    return olds, tmps


def _recover(path: pathlib.Path, locked: bool) -> None:
    """Put right what an interrupted export to ``path`` left: an earlier export moved aside
    while ``path`` is missing goes back (with a warning); once ``path`` holds an export, the
    leftovers go."""
    olds, tmps = _leftovers(path, locked)
    for tmp in tmps:                        # never the only copy of anything
        shutil.rmtree(tmp, ignore_errors=True)
    if not olds:
        return
    olds.sort(key=lambda p: p.stat().st_mtime)
    if not os.path.lexists(path):
        back = olds.pop()
        os.replace(back, path)
        warnings.warn(f"cuda-magic: an interrupted export had left the earlier export at "
                      f"{quote(str(path), 80)} in {back.name}; moved it back", RuntimeWarning,
                      stacklevel=5)
    if path.is_symlink() or _earlier(path) is None:
        warnings.warn(f"cuda-magic: {', '.join(p.name for p in olds)} beside "
                      f"{quote(str(path), 80)} hold earlier exports an interrupted export "
                      f"moved aside; left as they are", RuntimeWarning, stacklevel=5)
        return
    for old in olds:
        shutil.rmtree(old, ignore_errors=True)
