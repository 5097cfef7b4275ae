"""nvcc as a subprocess: an argv list (never a shell) run in a private
temporary directory that is always removed.

argv: ``nvcc -arch=<arch> --cubin|--ptx|--fatbin <user nvcc list>
--ptxas-options=a,b,c -I. [-I<CUTLASS>] -o <tmp>/out.<fmt> <tmp>/cell.cu``
(``-I<CUTLASS>`` when the ``nvidia-cutlass`` wheel is installed), run in the
caller's working directory so relative paths in the user's flags and quoted
``#include``s resolve as they do with NVRTC (hence ``-I.``).  The temporary
directory is also nvcc's ``TMPDIR``, and its path is dropped from the log so
messages read ``cell.cu(N)``.  nvcc is found with
:mod:`cuda.pathfinder` (pip wheels, conda, CUDA_HOME/CUDA_PATH) or on PATH.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from types import MappingProxyType
from typing import Mapping, Sequence

from ..headers import cutlass_dir
from . import Backend, CompileError, Output, ToolNotFoundError, ptxas_joined

FILENAME = "cell.cu"


def find_nvcc() -> str:
    """Path of nvcc, or :class:`ToolNotFoundError` saying how to get one."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
        path = find_nvidia_binary_utility("nvcc")
    except Exception:
        path = None
    if not path:
        home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
        cand = os.path.join(home, "bin", "nvcc") if home else None
        path = cand if cand and os.access(cand, os.X_OK) else shutil.which("nvcc")
    if not path:
        raise ToolNotFoundError(
            "nvcc was not found (looked in NVIDIA pip wheels, conda, CUDA_HOME, "
            "CUDA_PATH and PATH); install it with pip install 'cuda-magic[nvcc]' "
            "or set CUDA_HOME to a CUDA toolkit")
    return path


@functools.cache
def _version(path: str) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out) or re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else "unknown"


def version() -> str:
    return _version(find_nvcc())


def _write_headers(tmp: str, headers: Mapping[str, str]) -> None:
    """In-memory headers as files beside cell.cu, so ``#include "NAME"`` finds them first."""
    for name, text in headers.items():
        parts = name.replace("\\", "/").split("/")
        if os.path.isabs(name) or ".." in parts or not all(parts):
            raise ValueError(f"in-memory header name {name!r} must be a relative path without '..'")
        path = os.path.join(tmp, *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def compile(source: str, *, arch: str, target_format: str, flags: Sequence[str],
            ptxas: Sequence[str], name_expressions: Sequence[str] = (),
            headers: Mapping[str, str] = MappingProxyType({})) -> Output:
    if name_expressions:
        raise ValueError("name expressions need NVRTC; with nvcc, instantiate templates "
                         "explicitly in the source")
    with tempfile.TemporaryDirectory(prefix="cuda-magic-") as tmp:
        src, out = os.path.join(tmp, FILENAME), os.path.join(tmp, f"out.{target_format}")
        argv = (find_nvcc(), f"-arch={arch}", f"--{target_format}", *flags, *ptxas, "-I.",
                *(f"-I{d}" for d in [cutlass_dir()] if d), "-o", out, src)
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        _write_headers(tmp, headers)
        # In the caller's working directory, like NVRTC; nvcc's own scratch files in tmp too.
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                              env={**os.environ, "TMPDIR": tmp})
        log = (proc.stdout + proc.stderr).strip("\n").replace(tmp + os.sep, "")
        if proc.returncode != 0:
            raise CompileError("nvcc", log or f"nvcc exited with status {proc.returncode}",
                               argv, source, FILENAME)
        with open(out, "rb") as f:
            binary = f.read()
    if target_format == "ptx":
        binary = binary.rstrip(b"\0")
    return Output(binary, target_format, argv, log)


BACKEND = Backend(name="nvcc", formats=("fatbin", "cubin", "ptx"), default_format="fatbin",
                  forward_ptxas=ptxas_joined, compile=compile, version=version)
