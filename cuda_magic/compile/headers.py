"""Everything a compile reads besides the cell, so the cache key can cover it.

- **Session headers** (``%%cuda_header NAME.cuh``, :func:`define_header`): text kept in
  memory for the session; NVRTC gets them as in-memory headers, nvcc as files beside
  ``cell.cu`` in its private directory.
- **Standard headers** (NVRTC only): ``<cstdio>``, ``<cstdint>``... from
  :mod:`.stdheaders`, supplied in memory when the user's code includes them.
- **User headers on disk**: every file an ``#include`` can reach through the
  including file's directory, the working directory and the user's ``-I`` dirs,
  transitively.  Every candidate along the search path is hashed (not only the
  first), so whichever one the compiler picks, a change to it changes the key.
- **Toolkit headers** (CUDA, CCCL, CUTLASS from pip): not read; covered by the
  toolchain's identity (:func:`toolkit_identity`).

The scan is textual and errs on the side of reading more: includes inside
``#if 0`` or comments count too.  An ``#include`` whose name comes from a macro
the scan cannot resolve makes the build uncacheable (:attr:`Inputs.unresolved`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from ..config import ConfigError, bad_char, quote

__all__ = ["define_header", "remove_header", "session_headers", "header_users", "note_users",
           "toolkit_dirs", "toolkit_identity", "Inputs", "scan", "search_dirs"]

_LOCK = threading.Lock()
_SESSION: dict[str, str] = {}
_USERS: dict[str, list[str]] = {}
_NAME = re.compile(r"[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)*")


def define_header(name: str, text: str) -> bool:
    """Make ``#include "NAME"`` find ``text`` in later compiles (both compilers).

    Returns whether the text changed (a new header, or new text for an old one).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name.split("/"):
        raise ConfigError(f"header name {quote(name, 80)}: use a relative file name such as 'factor.cuh' "
                          "or 'lib/util.cuh' (letters, digits, _ . + -, '/' between parts)",
                          "header")
    if not isinstance(text, str):
        from .backends import InputTypeError
        raise InputTypeError(f"header text must be a str, not {type(text).__name__}")
    bad = bad_char(text)
    if bad:     # NVRTC would stop reading at a NUL
        raise ConfigError(f"header {name!r} line {bad[0]}, column {bad[1]}: {bad[2]} cannot be "
                          f"compiled", "header")
    with _LOCK:
        changed = _SESSION.get(name) != text
        _SESSION[name] = text
    return changed


def remove_header(name: str) -> None:
    """Forget a session header (``KeyError`` if there is none)."""
    with _LOCK:
        del _SESSION[name]
        _USERS.pop(name, None)


def session_headers() -> dict[str, str]:
    """A copy of the session headers, name -> text."""
    with _LOCK:
        return dict(_SESSION)


def note_users(names: Iterable[str], user: str) -> None:
    """Record that ``user`` (a cell label such as ``In [3] (scale)``) includes ``names``."""
    with _LOCK:
        for name in names:
            users = _USERS.setdefault(name, [])
            if user in users:
                users.remove(user)
            users.append(user)
            del users[:-20]


def header_users(name: str) -> list[str]:
    """The cells that included session header ``name``, oldest first."""
    with _LOCK:
        return list(_USERS.get(name, ()))


# -- toolkit ------------------------------------------------------------------------------------

_DISTRIBUTIONS = ("nvidia-cuda-runtime", "nvidia-cuda-cccl", "nvidia-cuda-crt", "nvidia-curand",
                  "nvidia-cutlass", "nvidia-cuda-nvrtc", "nvidia-cuda-nvcc")


@functools.cache
def cutlass_dir() -> str | None:
    """The CUTLASS/CuTe include directory of the ``nvidia-cutlass`` wheel, if installed."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("cutlass_library")
    except (ImportError, ValueError):
        return None
    for base in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(base, "source", "include")
        if os.path.isfile(os.path.join(path, "cute", "tensor.hpp")):
            return path
    return None


@functools.cache
def toolkit_dirs() -> tuple[str, ...]:
    """Include directories of the CUDA headers from pip (cudart, crt, curand: one tree),
    CCCL and CUTLASS, in search order; what the NVRTC backend adds with ``-I``."""
    dirs = []
    try:
        from cuda.pathfinder import find_nvidia_header_directory
        for lib in ("cudart", "cccl"):
            path = find_nvidia_header_directory(lib)
            if path and path not in dirs:
                dirs.append(path)
    except Exception:  # headers are optional: plain kernels need none
        pass
    if cutlass_dir():
        dirs.append(cutlass_dir())
    return tuple(dirs)


@functools.cache
def toolkit_identity() -> str:
    """Versions of the header packages, so upgrading CCCL or CUTLASS is a cache miss."""
    from importlib import metadata
    parts = []
    for dist in _DISTRIBUTIONS:
        try:
            parts.append(f"{dist}={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    return ";".join(parts + list(toolkit_dirs()))


# -- scanning -----------------------------------------------------------------------------------

_INT_TYPES = "cuda/std/cstdint"
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*(?:include|include_next|import)[ \t]*(?:([<"])([^>"\n]+)[>"]'
                      r'|([A-Za-z_]\w*))', re.M)
_HAS = re.compile(r'__has_include(?:_next)?\s*\(\s*([<"])([^>"\n]+)[>"]\s*\)')
_DEFINE = re.compile(r'^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([<"][^>"\n]+[>"])', re.M)


@dataclass(frozen=True)
class _Parsed:
    includes: tuple[tuple[str, str], ...]   # (kind '<' or '"', name)
    macros: tuple[tuple[int, str], ...]     # (line, macro name) of #include MACRO
    defines: tuple[tuple[str, str, str], ...]  # (macro, kind, name) for #define M "x.h"


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> _Parsed:
    includes, macros = [], []
    for m in _INCLUDE.finditer(text):
        if m.group(3):
            macros.append((text.count("\n", 0, m.start()) + 1, m.group(3)))
        else:
            includes.append((m.group(1), m.group(2).strip()))
    includes += [(m.group(1), m.group(2).strip()) for m in _HAS.finditer(text)]
    defines = tuple((m.group(1), m.group(2)[0], m.group(2)[1:-1].strip())
                    for m in _DEFINE.finditer(text))
    return _Parsed(tuple(dict.fromkeys(includes)), tuple(macros), defines)


_FILES: dict[str, tuple[tuple, str, str]] = {}   # path -> (stat signature, sha256, text)
_RACY_NS = 2_000_000_000   # a file changed this recently may change again within the clock tick


def _read(path: str) -> tuple[str, str] | None:
    """(sha256, text) of a regular file, from a stat-validated memo; None if absent."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not os.path.isfile(path):
        return None
    sig = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)
    memo = _FILES.get(path)
    if memo is not None and memo[0] == sig:
        return memo[1], memo[2]
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    sha, text = hashlib.sha256(data).hexdigest(), data.decode("utf-8", "replace")
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > _RACY_NS:
        _FILES[path] = (sig, sha, text)
    return sha, text


_PATH_FLAGS = {"-I": "dirs", "--include-path": "dirs", "-isystem": "dirs",
               "--system-include": "dirs", "-include": "pre", "--pre-include": "pre"}


def search_dirs(flags: Sequence[str]) -> tuple[list[str], list[str]]:
    """(user ``-I``/``-isystem`` dirs as absolute paths, pre-included files) from a flag list:
    ``-I DIR``, ``-IDIR``, ``--include-path=DIR`` and the like."""
    found: dict[str, list[str]] = {"dirs": [], "pre": []}
    it = iter(flags)
    for flag in it:
        for opt, kind in _PATH_FLAGS.items():
            if flag == opt:
                value = next(it, None)
            elif opt.startswith("--") and flag.startswith(opt + "="):
                value = flag[len(opt) + 1:]
            elif opt == "-I" and flag.startswith("-I"):
                value = flag[2:]
            else:
                continue
            if value:
                found[kind].append(os.path.abspath(value))
            break
    return found["dirs"], found["pre"]


@dataclass(frozen=True)
class Inputs:
    """What a compile reads besides the source and the toolkit, and its digest."""

    memory: Mapping[str, str] = field(default_factory=dict, repr=False)  # in-memory headers
    supplied: tuple[str, ...] = ()       # standard headers cuda-magic supplies (NVRTC)
    session: tuple[str, ...] = ()        # %%cuda_header names reached
    files: tuple[tuple[str, str], ...] = ()  # (absolute path, sha256) of user headers reached
    unresolved: tuple[str, ...] = ()     # "line N: #include MACRO" the scan could not follow
    digest: str = ""

    def manifest(self) -> dict[str, str]:
        """name -> content digest, for saying what changed between two builds (a file by its
        base name, or by its path where two share one)."""
        names = [os.path.basename(p) for p, _ in self.files]
        out = {(n if names.count(n) == 1 else p): sha for n, (p, sha) in zip(names, self.files)}
        for name in self.session:
            out[f"{name} (%%cuda_header)"] = hashlib.sha256(self.memory[name].encode()).hexdigest()
        return out


def scan(source: str, flags: Sequence[str], *, std: Mapping[str, str] | None = None,
         session: Mapping[str, str] | None = None, cwd: str | None = None) -> Inputs:
    """Follow ``source``'s includes through session headers, ``std`` headers (NVRTC) and
    user directories; toolkit directories end the walk."""
    session = session_headers() if session is None else session
    std = std or {}
    cwd = cwd or os.getcwd()
    dirs, pre = search_dirs(flags)
    toolkit = tuple(os.path.join(d, "") for d in toolkit_dirs())
    memory: dict[str, str] = {}
    supplied, reached, files, unresolved = [], [], {}, []
    seen_text: set[int] = set()
    macros: dict[str, tuple[str, str]] = {}

    def user_file(path: str) -> bool:
        return not path.startswith(toolkit)

    def visit(text: str, here: str, where: str) -> None:
        key = hash((text, here))
        if key in seen_text:
            return
        seen_text.add(key)
        parsed = _parse(text)
        for name, kind, target in parsed.defines:
            macros.setdefault(name, (kind, target))
        todo = list(parsed.includes)
        for line, name in parsed.macros:
            if name in macros:
                todo.append(macros[name])
            else:
                unresolved.append(f"{where} line {line}: #include {name}")
        for kind, name in todo:
            if name in session:
                if name not in memory:
                    memory[name] = session[name]
                    reached.append(name)
                    visit(session[name], cwd, name)
                continue
            if kind == "<" and name in std:
                if name not in memory:
                    memory[name] = std[name]
                    supplied.append(name)
                continue
            if os.path.isabs(name):
                candidates = [name]
            else:
                candidates = ([here] if kind == '"' else []) + [cwd] * (kind == '"') + dirs
                candidates = [os.path.normpath(os.path.join(d, name)) for d in dict.fromkeys(candidates)]
            for path in candidates:
                if path in files or not user_file(path):
                    continue
                got = _read(path)
                files[path] = got[0] if got else "absent"
                if got:
                    visit(got[1], os.path.dirname(path), os.path.basename(path))

    for path in pre:
        got = _read(path)
        files[path] = got[0] if got else "absent"
        if got:
            visit(got[1], os.path.dirname(path), os.path.basename(path))
    visit(source, cwd, "cell")
    if supplied and _INT_TYPES in std and _INT_TYPES not in memory:
        # libcu++'s <cstdint> under NVRTC makes int64_t 'long long'; ours (glibc's 'long', as
        # with nvcc) replaces it so that CUB & co. agree with the cell whatever the include order.
        memory[_INT_TYPES] = std[_INT_TYPES]
        supplied.append(_INT_TYPES)
    present = tuple(sorted((p, s) for p, s in files.items() if s != "absent"))
    h = hashlib.sha256()
    for name in sorted(memory):
        h.update(f"m:{name}\0{memory[name]}\0".encode())
    for path, sha in sorted(files.items()):
        h.update(f"f:{path}\0{sha}\0".encode())
    for item in unresolved:
        h.update(f"u:{item}\0".encode())
    return Inputs(memory, tuple(supplied), tuple(reached), present, tuple(unresolved), h.hexdigest())
