"""Finding the CUDA tools cuda-magic runs: one :func:`find` for all of them.

``find(name)`` looks, in this order, and returns the first executable file:

1. :mod:`cuda.pathfinder`, for the tools it knows (nvcc, nvdisasm, cuobjdump, ncu,
   compute-sanitizer...): NVIDIA's pip wheels, conda, ``$CUDA_PATH``/``$CUDA_HOME``, the
   toolkit of the cudart the loader finds;
2. ``$CUDA_HOME/bin``, then ``$CUDA_PATH/bin``;
3. ``PATH``;
4. the system's places: ``/usr/local/cuda/bin``, and the tool's own (Nsight Compute's
   ``/opt/nvidia/nsight-compute/<version>``, the newest first).

``ncu`` and ``compute-sanitizer`` look on ``PATH`` first (as they always did): a standalone
Nsight Compute the user put on ``PATH`` is the one they mean, not the toolkit's copy.  Any other
name (``c++filt``, ``ptxas``) is looked for the same way.  A tool not found raises
:class:`ToolNotFoundError` saying where it looked and how to get it (:data:`TOOLS`).

The CUDA toolkits named by the environment and the system's own are looked for in one order
everywhere (tools here, toolkit headers, ``libcudadevrt.a``): :func:`cuda_roots`.

Paths found are kept per name and environment (``PATH``, ``CUDA_HOME``, ``CUDA_PATH``,
``CONDA_PREFIX``), and checked to be still there when asked again; :func:`clear` forgets them.
:func:`version` runs ``TOOL --version`` once per path.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from typing import Mapping, Sequence

from .errors import ToolNotFoundError

__all__ = ["find", "version", "clear", "cuda_homes", "cuda_roots", "Tool", "TOOLS", "SYSTEM",
           "SYSTEM_TOOLKIT", "ToolNotFoundError"]

SYSTEM_TOOLKIT = "/usr/local/cuda"     #: the system's CUDA toolkit, looked in after the environment's
_HOMES = ("CUDA_HOME", "CUDA_PATH")     # the variables that name a CUDA toolkit, in the order used


def cuda_homes(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The CUDA toolkits the environment names: ``{"CUDA_HOME": path, "CUDA_PATH": path}``,
    those set (and not empty), in that order, ``~`` expanded.  ``environ``: default
    ``os.environ``."""
    env = os.environ if environ is None else environ
    return {v: os.path.expanduser(env[v]) for v in _HOMES if env.get(v)}


def cuda_roots(environ: Mapping[str, str] | None = None) -> list[str]:
    """The CUDA toolkit directories, in the order cuda-magic looks in them: ``$CUDA_HOME``,
    ``$CUDA_PATH`` (:func:`cuda_homes`), then the system's :data:`SYSTEM_TOOLKIT`."""
    return [*cuda_homes(environ).values(), SYSTEM_TOOLKIT]


# The system's places, looked in last: "*" for every tool, then the tool's own (globs: the
# newest version first).
SYSTEM: dict[str, tuple[str, ...]] = {
    "*": (os.path.join(SYSTEM_TOOLKIT, "bin"),),
    "ncu": ("/opt/nvidia/nsight-compute/*", os.path.join(SYSTEM_TOOLKIT, "nsight-compute*")),
    "compute-sanitizer": (os.path.join(SYSTEM_TOOLKIT, "compute-sanitizer"),),
    "c++filt": ("/usr/bin",),
}


@dataclass(frozen=True)
class Tool:
    """What :func:`find` knows of one tool: how to get it (the error's end), and whether
    ``PATH`` comes before the other places."""
    hint: str
    path_first: bool = False


_NVCC_HINT = "install it with pip install 'cuda-magic[nvcc]' or set CUDA_HOME to a CUDA toolkit"
TOOLS: dict[str, Tool] = {
    "nvcc": Tool(_NVCC_HINT),
    "ptxas": Tool(_NVCC_HINT),
    "nvdisasm": Tool("install it with pip install nvidia-cuda-nvdisasm"),
    "cuobjdump": Tool("install it with pip install nvidia-cuda-cuobjdump"),
    "cu++filt": Tool("install it with pip install nvidia-cuda-cuxxfilt or set CUDA_HOME to a "
                     "CUDA toolkit"),
    "c++filt": Tool("install GNU binutils or put it on PATH"),
    "ncu": Tool("install Nsight Compute or put it on PATH", path_first=True),
    "compute-sanitizer": Tool("install the CUDA toolkit's compute-sanitizer or put it on PATH",
                              path_first=True),
    "cuda-gdb": Tool("install the CUDA toolkit's debugger (the cuda-gdb package of your CUDA "
                     "version) or put it on PATH"),
}
_OTHER = Tool("put it on PATH or set CUDA_HOME to a CUDA toolkit")
_ENV = ("PATH", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX")     # what a found path depends on

_found: dict[tuple, str] = {}
_lock = threading.Lock()


def find(name: str, *, environ: Mapping[str, str] | None = None,
         system: Sequence[str] | None = None) -> str:
    """The path of CUDA tool ``name`` (see the module docstring for the order), or
    :class:`ToolNotFoundError` naming where it looked and what to install.

    ``environ`` replaces ``os.environ`` (then cuda.pathfinder, which reads the process's
    environment, is not asked) and ``system`` the system places; neither is cached."""
    if environ is None and system is None:
        key = (name, *(os.environ.get(v) for v in _ENV))
        with _lock:
            path = _found.get(key)
        if path and _runs(path):
            return path
        path = _search(name, os.environ, None, pathfinder=True)
        with _lock:
            _found[key] = path
        return path
    return _search(name, os.environ if environ is None else environ, system,
                   pathfinder=environ is None)


def clear() -> None:
    """Forget the paths found (a tool installed or moved since is looked for again)."""
    with _lock:
        _found.clear()
    _version_at.cache_clear()


def version(name: str) -> str:
    """The version ``name --version`` prints (``13.0.88``), ``"unknown"`` if it prints none;
    run once per path."""
    return _version_at(find(name))


@functools.cache
def _version_at(path: str) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    m = (re.search(r"V(\d+\.\d+\.\d+)", out) or re.search(r"release (\d+\.\d+)", out)
         or re.search(r"[Vv]ersion (\d+(?:\.\d+)+)", out))
    return m.group(1) if m else "unknown"


# ---- the search ----------------------------------------------------------------------------

def _runs(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _pathfinder_knows(name: str) -> bool:
    try:
        import cuda.pathfinder as pf
        return name in pf.SUPPORTED_BINARY_UTILITIES
    except Exception:         # not installed (or too old to find tools)
        return False


def _from_pathfinder(name: str) -> str | None:
    try:
        import cuda.pathfinder as pf
        path = pf.find_nvidia_binary_utility(name)      # cached by pathfinder: still there?
    except Exception:         # its own error: the other places are looked in
        return None
    return path if path and _runs(path) else None


def _version_key(path: str) -> list:
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", os.path.basename(path))]


def _dirs(places: Sequence[str]) -> list[str]:
    out = []
    for d in places:
        out.extend(sorted(glob.glob(d), key=_version_key, reverse=True) if "*" in d else [d])
    return out


def _search(name: str, env: Mapping[str, str], system: Sequence[str] | None, *,
            pathfinder: bool) -> str:
    tool = TOOLS.get(name, _OTHER)
    homes = cuda_homes(env)
    places = [*SYSTEM.get("*", ()), *SYSTEM.get(name, ())] if system is None else list(system)

    def on_path():
        return shutil.which(name, path=env.get("PATH", ""))

    def in_dirs(dirs):
        return next((p for p in (os.path.join(d, name) for d in dirs) if _runs(p)), None)

    steps = [("NVIDIA pip wheels, conda, CUDA_PATH/CUDA_HOME (cuda.pathfinder)",
              lambda: _from_pathfinder(name)) if pathfinder and _pathfinder_knows(name) else None,
             (", ".join(f"${v}/bin" for v in homes),
              lambda: in_dirs(os.path.join(d, "bin") for d in homes.values())) if homes else None,
             ("PATH", on_path),
             (", ".join(places), lambda: in_dirs(_dirs(places))) if places else None]
    steps = [s for s in steps if s]
    if tool.path_first:
        steps.sort(key=lambda s: s[0] != "PATH")
    for _, look in steps:
        path = look()
        if path:
            return path
    raise ToolNotFoundError(f"{name} was not found (looked in {'; '.join(w for w, _ in steps)}); "
                            f"{tool.hint}")
