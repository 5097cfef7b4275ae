"""Where the toolkit's headers are: the header families (cudart, crt, curand, CCCL, CUTLASS),
each located on its own (:func:`header_dirs`): pip wheels in every site directory, then the CUDA
toolkits of :func:`cuda_magic.tools.cuda_roots` (``$CUDA_HOME``, ``$CUDA_PATH``,
``/usr/local/cuda``).

The headers themselves are not read for the cache key: they are covered by the toolchain's
identity (:func:`toolkit_identity`).  What the compilers get with ``-I``: :func:`toolkit_dirs`
(NVRTC) and :func:`cutlass_dirs` (nvcc, which uses its own toolkit otherwise).
"""

from __future__ import annotations

import functools
import os
import re
from typing import Iterable

from ..tools import cuda_roots

__all__ = ["FAMILIES", "header_dirs", "cccl_version", "find_header_dirs", "search_roots",
           "families_note", "toolkit_dirs", "cutlass_dir", "cutlass_dirs", "toolkit_identity"]

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
    every site directory and ``sys.path`` entry, then the CUDA toolkits of
    :func:`cuda_magic.tools.cuda_roots` (``$CUDA_HOME``, ``$CUDA_PATH``, ``/usr/local/cuda``)."""
    roots: list[str] = []
    for nvidia in _package_dirs("nvidia"):
        roots += _includes_under(nvidia)
    for base in _package_dirs("cutlass_library"):
        roots += [os.path.join(base, *sub) for sub in _CUTLASS_SUBDIRS]
    for site_dir in _site_dirs():
        roots += _includes_under(os.path.join(site_dir, "nvidia"))
        roots += [os.path.join(site_dir, "cutlass_library", *sub) for sub in _CUTLASS_SUBDIRS]
    for root in cuda_roots():
        roots += _toolkit_includes(root)
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
    """One line saying where each header family came from (the Log tab shows the directories
    by the names its Config defines)."""
    dirs = header_dirs()
    if compiler != "nvrtc":     # nvcc uses its own toolkit but for CUTLASS
        dirs = {f: d for f, d in dirs.items() if f.startswith("cutlass")}
    if not dirs:
        return ""
    by_dir: dict[str, list[str]] = {}
    for family, d in dirs.items():
        by_dir.setdefault(d, []).append(family)
    parts = [f"{', '.join(fams)} from {d}" for d, fams in by_dir.items()]
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
