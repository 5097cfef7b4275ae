"""The include scan: everything a compile reads besides the cell, so the cache key can cover it.

- **Session headers** (``%%cuda_header NAME.cuh``, :mod:`.header_store`): NVRTC gets them as
  in-memory headers, nvcc as files beside ``cell.cu`` in its private directory.
- **Standard headers** (NVRTC only): ``<cstdio>``, ``<cstdint>``... from
  :mod:`.stdheaders`, supplied in memory when the user's code includes them.
- **User headers on disk**: every file an ``#include`` can reach through the
  including file's directory, the working directory and the user's ``-I`` dirs,
  transitively.  Every candidate along the search path is hashed (not only the
  first), so whichever one the compiler picks, a change to it changes the key.
- **Toolkit headers** (cudart, crt, curand, CCCL, CUTLASS, :mod:`.toolkit_headers`): not read;
  the walk ends at their directories, and the toolchain's identity covers them.

The scan is textual and errs on the side of reading more: includes inside
``#if 0`` or comments count too.  An ``#include`` whose name comes from a macro
the scan cannot resolve makes the build uncacheable (:attr:`Inputs.unresolved`).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .header_store import session_headers
from .memo import PARSE_CHARS, text_memo
from .packaged import is_packaged
from .toolkit_headers import toolkit_dirs

__all__ = ["Inputs", "scan", "search_dirs"]

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


@text_memo(max_chars=PARSE_CHARS, max_entries=4096)
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


def _read(path: str) -> tuple[str, str, tuple] | None:
    """(sha256, text, stat signature) of a regular file, from a stat-validated memo; None if
    absent.  The signature (times, size, inode) changes with every write, so comparing it
    after a compile tells whether the file was rewritten meanwhile, even back to the same text."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not os.path.isfile(path):
        return None
    sig = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)
    memo = _FILES.get(path)
    if memo is not None and memo[0] == sig:
        return memo[1], memo[2], sig
    try:
        with open(path, "rb") as f:
            data = f.read()
        after = os.stat(path)
    except OSError:
        return None
    sha, text = hashlib.sha256(data).hexdigest(), data.decode("utf-8", "replace")
    now = (after.st_mtime_ns, after.st_ctime_ns, after.st_size, after.st_ino, after.st_dev)
    if now != sig:          # written while we read it: whatever we read, it is not 'sig'
        sig = ("changing",) + now
    elif time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > _RACY_NS:
        _FILES[path] = (sig, sha, text)
    return sha, text, sig


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
    supplied: tuple[str, ...] = ()       # headers cuda-magic supplies: standard (NVRTC), its own
    session: tuple[str, ...] = ()        # %%cuda_header names reached
    files: tuple[tuple[str, str], ...] = ()  # (absolute path, sha256) of user headers reached
    unresolved: tuple[str, ...] = ()     # "line N: #include MACRO" the scan could not follow
    digest: str = ""
    stamps: tuple[tuple[str, tuple], ...] = field(default=(), repr=False)  # (path, stat) read

    def manifest(self) -> dict[str, str]:
        """name -> content digest, for saying what changed between two builds (a file by its
        base name, or by its path where two share one)."""
        names = [os.path.basename(p) for p, _ in self.files]
        out = {(n if names.count(n) == 1 else p): sha for n, (p, sha) in zip(names, self.files)}
        for name in self.session:
            out[f"{name} (%%cuda_header)"] = hashlib.sha256(self.memory[name].encode()).hexdigest()
        return out

    def changed_in(self, after: "Inputs") -> list[str]:
        """The headers that differ in ``after`` (a scan of the same compile made later): new
        text, or rewritten at all (the stat signature), by the names :meth:`manifest` uses.
        Empty: the compiler read exactly what :attr:`digest` describes."""
        if after.digest == self.digest and after.stamps == self.stamps:
            return []
        now, before = after.manifest(), self.manifest()
        names = [n for n in sorted(set(now) | set(before)) if now.get(n) != before.get(n)]
        stamps, then = dict(after.stamps), dict(self.stamps)
        paths = [p for p in sorted(set(stamps) | set(then)) if stamps.get(p) != then.get(p)]
        short = [os.path.basename(p) for p in paths]
        names += [n for n in short if n not in names and not any(n == os.path.basename(m)
                                                                  for m in names)]
        return names or ["a header"]


def _session_names(name: str, kind: str, base: str) -> list[str]:
    """The session-header names ``#include`` ``name`` can reach from a header at virtual
    directory ``base``: the name as written (NVRTC matches in-memory headers by it), and for a
    quoted include in a session header in a subdirectory also ``base/name`` (nvcc, which finds
    the session headers as files in its private directory, looks beside the includer first)."""
    names = [name]
    if kind == '"' and base and not name.startswith("/"):
        joined = posixpath.normpath(posixpath.join(base, name))
        if not joined.startswith("../") and joined != name:
            names.append(joined)
    return names


def scan(source: str, flags: Sequence[str], *, std: Mapping[str, str] | None = None,
         session: Mapping[str, str] | None = None, cwd: str | None = None) -> Inputs:
    """Follow ``source``'s includes through session headers, ``std`` headers (NVRTC) and
    user directories; toolkit directories end the walk.

    The search is the union of both compilers' (every candidate is hashed, whichever the
    compiler picks): a quoted include is looked for among the session headers (by the name as
    written, and beside a session header in a subdirectory), in the including file's directory
    (a session header ``lib/util.cuh`` is in ``cwd/lib``, as NVRTC has it), in the working
    directory and in the user's ``-I`` dirs; an angled one among the session and ``std``
    headers and in the ``-I`` dirs.  cuda-magic's own headers (:mod:`.packaged`, in ``std``)
    are supplied whichever way they are included."""
    session = session_headers() if session is None else session
    std = std or {}
    cwd = cwd or os.getcwd()
    dirs, pre = search_dirs(flags)
    toolkit = tuple(os.path.join(d, "") for d in toolkit_dirs())
    memory: dict[str, str] = {}
    supplied, reached, files, unresolved = [], [], {}, []
    stamps: dict[str, tuple] = {}
    seen_text: set[int] = set()
    macros: dict[str, tuple[str, str]] = {}

    def user_file(path: str) -> bool:
        return not path.startswith(toolkit)

    def read(path: str):
        got = _read(path)
        files[path] = got[0] if got else "absent"
        stamps[path] = got[2] if got else ()
        if got:
            yield got[1], os.path.dirname(path), os.path.basename(path), ""

    def visit(text: str, here: str, where: str, base: str):
        """The headers ``text`` includes, in order, as ``visit``'s arguments (the walk below
        follows them depth first without recursing: a chain of any depth takes no stack)."""
        key = hash((text, here, base))
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
            for mem in _session_names(name, kind, base):
                if mem in session and mem not in memory:
                    memory[mem] = session[mem]
                    reached.append(mem)
                    sub = posixpath.dirname(mem)
                    yield (session[mem], os.path.join(cwd, *sub.split("/")) if sub else cwd,
                           mem, sub)
            if (kind == "<" or is_packaged(name)) and name in std:     # ours: "" or <>
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
                if path not in files and user_file(path):
                    yield from read(path)

    def walk(first) -> None:
        stack = [first]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
            else:
                stack.append(visit(*nxt))

    for path in pre:
        walk(read(path))
    walk(visit(source, cwd, "cell", ""))
    standard = [n for n in supplied if not is_packaged(n)]     # not cuda-magic's own headers
    if standard and _INT_TYPES in std and _INT_TYPES not in memory:
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
    return Inputs(memory, tuple(supplied), tuple(reached), present, tuple(unresolved), h.hexdigest(),
                  tuple(sorted(stamps.items())))
