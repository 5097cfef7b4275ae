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
- **Toolkit headers** (cudart, crt, curand, CCCL, CUTLASS): not read; covered by the
  toolchain's identity (:func:`toolkit_identity`).  Each family is located on its own
  (:func:`header_dirs`): pip wheels in every site directory, then ``$CUDA_HOME``/``$CUDA_PATH``,
  then ``/usr/local/cuda``.

The scan is textual and errs on the side of reading more: includes inside
``#if 0`` or comments count too.  An ``#include`` whose name comes from a macro
the scan cannot resolve makes the build uncacheable (:attr:`Inputs.unresolved`).

One concept, the inputs of a compile's cache key besides the cell and its config (each kind
above, and where the toolkit's families are, since that is part of the key); a module a little
over 500 lines for it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import posixpath
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from ..config import ConfigError, bad_char, quote
from .memo import PARSE_CHARS, text_memo
from .packaged import is_packaged

__all__ = ["define_header", "remove_header", "session_headers", "header_users", "note_users",
           "FAMILIES", "header_dirs", "cccl_version", "find_header_dirs", "search_roots", "families_note",
           "toolkit_dirs", "cutlass_dir", "cutlass_dirs", "toolkit_identity", "Inputs", "scan",
           "search_dirs"]


_LOCK = threading.Lock()
_SESSION: dict[str, str] = {}
_USERS: dict[str, list[str]] = {}
_NAME = re.compile(r"[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)*")
MAX_PART = 255          # bytes of one part of a header name (a file name: NAME_MAX)
MAX_NAME = 1000         # characters of a whole header name
#: The files nvcc's run writes in its private directory, where the session headers are files too
#: (:mod:`.backends.nvcc`): the cell ``cell.cu``, its output ``out.<format>`` and what ``--keep``
#: leaves (``cell.ptx``, ``cell.compute_90a.cpp1.ii``, ``cell.module_id``...).
NVCC_FILES = re.compile(r"cell\.cu|cell\.module_id|out\.(?:cubin|ptx|fatbin)"
                        r"|cell\.(?:.+\.)?(?:ii|c|cpp|gpu|ptx|cubin|fatbin)")


def _name_problem(name: str) -> str:
    """Why ``name`` cannot be a session header (either compiler), or ''."""
    parts = name.split("/")
    if len(name) > MAX_NAME:
        return f"{len(name)} characters is too long for a file name (at most {MAX_NAME})"
    for part in parts:
        if len(part.encode()) > MAX_PART:
            return f"a part of {len(part)} characters is too long for a file name (at most {MAX_PART})"
    if NVCC_FILES.fullmatch(name):
        return ("nvcc's run keeps the cell and its own files under that name "
                "(cell.cu, out.{cubin,ptx,fatbin}, cell.*.ptx ...); pick another")
    for i in range(1, len(parts)):
        if "/".join(parts[:i]) in _SESSION:
            return (f"{quote('/'.join(parts[:i]))} is already a header, and a name cannot be a file "
                    f"and a directory (nvcc writes the headers as files): remove_header"
                    f"({'/'.join(parts[:i])!r}) or pick another name")
    below = next((n for n in _SESSION if n.startswith(name + "/")), None)
    if below is not None:
        return (f"it is the directory of header {quote(below)}, and a name cannot be a file and "
                f"a directory (nvcc writes the headers as files): pick another name")
    return ""


def define_header(name: str, text: str) -> bool:
    """Make ``#include "NAME"`` find ``text`` in later compiles (both compilers).

    Returns whether the text changed (a new header, or new text for an old one).  A name is
    checked once, here, for both compilers (nvcc writes the headers as files beside the cell):
    a relative file name whose parts are file names (not ``.``/``..``, at most
    :data:`MAX_PART` bytes), none of nvcc's own files (:data:`NVCC_FILES`), and never both a
    file and the directory of another header (``util`` beside ``util/x.cuh``).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name) or \
            {".", ".."} & set(name.split("/")):
        raise ConfigError(f"header name {quote(name, 80)}: use a relative file name such as 'factor.cuh' "
                          "or 'lib/util.cuh' (letters, digits, _ . + -, '/' between parts; no '.' "
                          "or '..' part)", "header")
    if not isinstance(text, str):
        # here, not at the top: importing .backends.base runs .backends' __init__, which imports
        # .backends.nvcc, which imports this module
        from .backends.base import InputTypeError
        raise InputTypeError(f"header text must be a str, not {type(text).__name__}")
    bad = bad_char(text)
    if bad:     # NVRTC would stop reading at a NUL
        raise ConfigError(f"header {name!r} line {bad[0]}, column {bad[1]}: {bad[2]} cannot be "
                          f"compiled", "header")
    with _LOCK:
        problem = _name_problem(name)
        if problem:
            raise ConfigError(f"header name {quote(name, 80)}: {problem}", "header")
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

# Header family -> a file that marks its include directory.  Each is located on its own: pip may
# ship cudart and CCCL while crt/mma.h is only in the system toolkit, or the reverse.
FAMILIES = {
    "cudart": "cuda_runtime.h",
    "crt": os.path.join("crt", "mma.h"),
    "curand": "curand_kernel.h",
    "cccl": os.path.join("cuda", "std", "version"),
    "cutlass": os.path.join("cute", "tensor.hpp"),
    "cutlass-util": os.path.join("cutlass", "util", "helper_cuda.hpp"),  # CUTLASS tools/util
}
_CUTLASS_SUBDIRS = (("source", "include"), ("source", "tools", "util", "include"))


def _site_dirs() -> list[str]:
    """Every directory Python packages may be installed in: the site directories and
    ``sys.path``, in that order, absolute and without repeats."""
    import site
    import sys
    dirs: list[str] = []
    try:
        dirs += site.getsitepackages()
    except Exception:     # some virtualenv builds lack it
        pass
    try:
        dirs.append(site.getusersitepackages())
    except Exception:
        pass
    dirs += [p for p in sys.path if p]
    return list(dict.fromkeys(os.path.abspath(d) for d in dirs if isinstance(d, str)))


def _package_dirs(name: str) -> list[str]:
    """The directories of package ``name`` (a namespace package may have several), found without
    importing it."""
    import importlib.util
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    return list(spec.submodule_search_locations or []) if spec else []


def _includes_under(nvidia: str) -> list[str]:
    """``nvidia/<wheel>/include`` and ``.../include/cccl`` for each wheel directory, sorted."""
    try:
        wheels = sorted(os.listdir(nvidia))
    except OSError:
        return []
    out = []
    for w in wheels:
        inc = os.path.join(nvidia, w, "include")
        if os.path.isdir(inc):
            out += [inc, os.path.join(inc, "cccl")]
    return out


def _toolkit_includes(root: str) -> list[str]:
    """A CUDA toolkit's include directories: ``include``, ``include/cccl`` (CUDA 13 moved CCCL
    there), and the same under ``targets/*/``."""
    out = [os.path.join(root, "include"), os.path.join(root, "include", "cccl")]
    targets = os.path.join(root, "targets")
    try:
        for t in sorted(os.listdir(targets)):
            out += [os.path.join(targets, t, "include"), os.path.join(targets, t, "include", "cccl")]
    except OSError:
        pass
    return out


def search_roots() -> list[str]:
    """Candidate include directories, in the order the header families are looked for: every
    directory of the ``nvidia`` namespace package, then ``nvidia/*`` and the CUTLASS wheel in
    every site directory and ``sys.path`` entry, then ``$CUDA_HOME``, ``$CUDA_PATH``, and the
    system toolkit ``/usr/local/cuda``."""
    roots: list[str] = []
    for nvidia in _package_dirs("nvidia"):
        roots += _includes_under(nvidia)
    for base in _package_dirs("cutlass_library"):
        roots += [os.path.join(base, *sub) for sub in _CUTLASS_SUBDIRS]
    for site_dir in _site_dirs():
        roots += _includes_under(os.path.join(site_dir, "nvidia"))
        roots += [os.path.join(site_dir, "cutlass_library", *sub) for sub in _CUTLASS_SUBDIRS]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots += _toolkit_includes(os.path.expanduser(os.environ[var]))
    roots += _toolkit_includes("/usr/local/cuda")
    return list(dict.fromkeys(os.path.normpath(os.path.abspath(r)) for r in roots))


def find_header_dirs(roots: Iterable[str]) -> dict[str, str]:
    """Family -> the first of ``roots`` that holds its marker file (:data:`FAMILIES`)."""
    roots = list(roots)
    found = {}
    for family, marker in FAMILIES.items():
        for root in roots:
            if os.path.isfile(os.path.join(root, marker)):
                found[family] = root
                break
    return found


@functools.cache
def header_dirs() -> dict[str, str]:
    """Where each toolkit header family (cudart, crt, curand, cccl, cutlass, cutlass-util) was
    found, family -> include directory (absent: not found).  See :func:`search_roots`;
    :mod:`cuda.pathfinder` (conda...) is asked for cudart and CCCL when they are nowhere there."""
    found = find_header_dirs(search_roots())
    for family, lib in (("cudart", "cudart"), ("cccl", "cccl")):
        if family not in found:
            try:
                from cuda.pathfinder import find_nvidia_header_directory
                path = find_nvidia_header_directory(lib)
            except Exception:  # headers are optional: plain kernels need none
                path = None
            if path and os.path.isfile(os.path.join(path, FAMILIES[family])):
                found[family] = os.path.normpath(path)
    return {f: found[f] for f in FAMILIES if f in found}


def cccl_version(directory: str | None = None) -> tuple[int, int, int] | None:
    """CCCL's version (3, 0, 1) from ``CCCL_VERSION`` in its ``cuda/std/__cccl/version.h``
    (``directory``: the CCCL include dir; default the one found), or None."""
    directory = directory or header_dirs().get("cccl")
    if not directory:
        return None
    try:
        with open(os.path.join(directory, "cuda", "std", "__cccl", "version.h")) as f:
            m = re.search(r"#\s*define\s+CCCL_VERSION\s+(\d+)", f.read())
    except OSError:
        return None
    if not m:
        return None
    v = int(m.group(1))
    return v // 1000000, v // 1000 % 1000, v % 1000


def cutlass_dir() -> str | None:
    """The CUTLASS/CuTe include directory (the ``nvidia-cutlass`` wheel's), if found."""
    return header_dirs().get("cutlass")


def cutlass_dirs() -> tuple[str, ...]:
    """CUTLASS's include directories: ``include`` and ``tools/util/include`` (``cutlass/util/
    helper_cuda.hpp``, ``print_error.hpp``), those found; what nvcc gets with ``-I``."""
    dirs = header_dirs()
    return tuple(dict.fromkeys(dirs[f] for f in ("cutlass", "cutlass-util") if f in dirs))


@functools.cache
def toolkit_dirs() -> tuple[str, ...]:
    """The include directories of the header families (:func:`header_dirs`), each once, in
    family order; what the NVRTC backend adds with ``-I``."""
    return tuple(dict.fromkeys(header_dirs().values()))


def families_note(compiler: str = "nvrtc") -> str:
    """One line saying where each header family came from (the Log tab), the home directory
    shown as ``~``."""
    dirs = header_dirs()
    if compiler != "nvrtc":     # nvcc uses its own toolkit but for CUTLASS
        dirs = {f: d for f, d in dirs.items() if f.startswith("cutlass")}
    if not dirs:
        return ""
    by_dir: dict[str, list[str]] = {}
    for family, d in dirs.items():
        by_dir.setdefault(d, []).append(family)
    home = os.path.join(os.path.expanduser("~"), "")
    parts = [f"{', '.join(fams)} from {'~/' + d[len(home):] if d.startswith(home) else d}"
             for d, fams in by_dir.items()]
    what = "toolkit headers" if compiler == "nvrtc" else "CUTLASS headers"
    return f"{what}: {'; '.join(parts)}"


@functools.cache
def toolkit_identity() -> str:
    """Each header family's directory with its marker file's identity (inode, time, size), so
    upgrading or reinstalling CCCL, CUTLASS, the pip headers or the system toolkit (new files)
    is a cache miss.  No package metadata is read: stats only, for the first cell's sake."""
    parts = []
    for family, d in header_dirs().items():
        try:
            st = os.stat(os.path.join(d, FAMILIES[family]))
            parts.append(f"{family}={d}@{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}:{st.st_size}")
        except OSError:
            parts.append(f"{family}={d}")
    return ";".join(parts)


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
