"""nvcc as a subprocess: an argv list (never a shell) run in a private
temporary directory that is always removed.

argv: ``nvcc -arch=<arch> --cubin|--ptx|--fatbin <user nvcc list>
--ptxas-options=a,b,c [-I<tmp>] -I. [-I<CUTLASS>] [--keep --keep-dir=<tmp>] -o <tmp>/out.<fmt>
<tmp>/cell.cu`` (``-I<CUTLASS>`` when the ``nvidia-cutlass`` wheel is installed; a fatbin for
an ``a``/``f`` arch gets ``-gencode=arch=compute_90a,code=sm_90a
-gencode=arch=compute_90a,code=compute_90a`` instead of ``-arch``, see :func:`arch_flags`; ``--keep`` for cubin and fatbin, whose PTX view is the
``cell.ptx`` of the same run; ``-I<tmp>`` when the cell includes a header cuda-magic ships,
written there: ``<cuda_magic/timeline.h>``), run in the
caller's working directory so relative paths in the user's flags and quoted
``#include``s resolve as they do with NVRTC (hence ``-I.``).  The temporary
directory is also nvcc's ``TMPDIR``, and its path is dropped from the log so
messages read ``cell.cu(N)``.  nvcc is found by :func:`cuda_magic.tools.find`
(:mod:`cuda.pathfinder`: pip wheels, conda, CUDA_PATH/CUDA_HOME; then CUDA_HOME/CUDA_PATH,
PATH, ``/usr/local/cuda/bin``).

nvcc runs in its own process group (session): on Ctrl-C, the compile time limit
(:mod:`.limits`) or any error the whole group is killed (``os.killpg``), so no
``cicc``/``ptxas`` is left running, and the directory is still removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from types import MappingProxyType
from typing import Mapping, Sequence

from ... import tools
from ...errors import clip
from .. import instances
from ..toolkit_headers import cutlass_dirs
from ..packaged import is_packaged
from ..parallel import POLL, Cancelled, cancelled, tick
from .base import Backend, CompileError, Output, ptxas_joined
from .limits import ENV, CompileTimeoutError, compile_timeout

FILENAME = "cell.cu"


def version() -> str:
    """nvcc's version (``13.0.88``): :func:`cuda_magic.tools.version`."""
    return tools.version("nvcc")


def arch_flags(arch: str, target_format: str) -> tuple[str, ...]:
    """How nvcc is told the arch.  ``-arch=sm_90a`` alone would also embed (and run ptxas on)
    ``compute_90`` PTX in a fatbin, where unguarded ``wgmma``/``setmaxnreg`` fail ("not
    supported on .target 'sm_90'"): an arch-specific (``a``) or family (``f``) fatbin gets
    exactly its own SASS and PTX: ``-gencode=arch=compute_90a,code=sm_90a
    -gencode=arch=compute_90a,code=compute_90a`` (one cicc run)."""
    if target_format == "fatbin" and arch[-1:] in ("a", "f"):
        virtual = arch.replace("sm_", "compute_", 1)
        return (f"-gencode=arch={virtual},code={arch}", f"-gencode=arch={virtual},code={virtual}")
    return (f"-arch={arch}",)


def _kept_ptx(tmp: str) -> str | None:
    """The PTX this nvcc run generated (``--keep``: ``cell.ptx`` in the private directory)."""
    stem = os.path.splitext(FILENAME)[0]
    names = sorted(n for n in os.listdir(tmp) if n.startswith(stem + ".") and n.endswith(".ptx"))
    if len(names) != 1:         # one arch per build: one PTX; anything else is not ours to guess
        return None
    with open(os.path.join(tmp, names[0]), "rb") as f:
        return f.read().rstrip(b"\0").decode("utf-8", "replace")


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


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL nvcc's whole process group (cicc, ptxas, ... too) and reap nvcc.  A killed
    cicc can take a second to exit (freeing its memory); nobody waits for that."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _group_gone(pgid: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while True:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return True
        if time.monotonic() > end:
            return False
        time.sleep(0.01)


@contextlib.contextmanager
def _private_dir():
    """A private temporary directory, always removed: if a killed process of the group was
    still creating a file there, it is removed again once the group is gone (in the background,
    so Ctrl-C is not held up)."""
    tmp = tempfile.mkdtemp(prefix="cuda-magic-")
    box = {"pgid": None}
    try:
        yield tmp, box
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if os.path.lexists(tmp) and box["pgid"] is not None:
            def later(pgid=box["pgid"]):
                _group_gone(pgid, 30)
                shutil.rmtree(tmp, ignore_errors=True)
            threading.Thread(target=later, name="cuda-magic nvcc cleanup", daemon=True).start()


def _run(argv: Sequence[str], tmp: str, source: str, box: dict | None = None) -> tuple[int, str]:
    """Run nvcc in its own process group; wait in short steps so that Ctrl-C lands at once.
    (return code, stdout + stderr).  KeyboardInterrupt, the time limit, a cancelled parallel
    build or any error kills the group before it propagates."""
    limit = compile_timeout()
    started = time.monotonic()
    deadline = None if limit is None else started + limit
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace",
                            env={**os.environ, "TMPDIR": tmp}, start_new_session=True)
    if box is not None:
        box["pgid"] = proc.pid
    try:
        while True:
            step = POLL if deadline is None else min(POLL, deadline - time.monotonic())
            if step <= 0:
                raise CompileTimeoutError("nvcc", limit, argv, source, FILENAME,
                                          "nvcc and the processes it started were killed", ENV)
            try:
                out, err = proc.communicate(timeout=step)
                break
            except subprocess.TimeoutExpired:
                if cancelled():     # the cell's builds were given up (Ctrl-C)
                    raise Cancelled("nvcc was stopped") from None
                tick("compiling with nvcc", started)
    except BaseException:
        _kill_group(proc)
        raise
    _kill_group(proc)     # anything nvcc left behind (it waits for its own children)
    return proc.returncode, out + err


def compile(source: str, *, arch: str, target_format: str, flags: Sequence[str],
            ptxas: Sequence[str], name_expressions: Sequence[str] = (),
            headers: Mapping[str, str] = MappingProxyType({})) -> Output:
    """Compile with nvcc.  ``name_expressions`` (``--instantiate``) are compiled as lines after
    the cell (:func:`~cuda_magic.compile.instances.appended`) and found in the binary by their
    demangled names (``Output.lowered_names``, as NVRTC gives them)."""
    cell, names = source, tuple(name_expressions)
    source = instances.appended(cell, names, flags)
    with _private_dir() as (tmp, box):
        src, out = os.path.join(tmp, FILENAME), os.path.join(tmp, f"out.{target_format}")
        # The PTX view comes from this very run (its kept .ptx), never from a second compile.
        keep = () if target_format == "ptx" else ("--keep", f"--keep-dir={tmp}")
        # cuda-magic's own headers (<cuda_magic/timeline.h>) are written here too: -I<tmp>
        own = (f"-I{tmp}",) if any(is_packaged(n) for n in headers) else ()
        argv = (tools.find("nvcc"), *arch_flags(arch, target_format), f"--{target_format}", *flags,
                *ptxas,  # a subdirectory %%cuda_header's own directory first, as with NVRTC
                *(f"-I{d}" for d in sorted({os.path.dirname(n) for n in headers
                                            if not is_packaged(n)} - {""})), *own, "-I.",
                *(f"-I{d}" for d in cutlass_dirs()), *keep, "-o", out, src)
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        _write_headers(tmp, headers)
        # In the caller's working directory, like NVRTC; nvcc's own scratch files in tmp too.
        returncode, log = _run(argv, tmp, source, box)
        log = log.strip("\n").replace(tmp + os.sep, "")
        if returncode != 0:
            exc = CompileError("nvcc", log or f"nvcc exited with status {returncode}",
                               argv, source, FILENAME)
            raise _appended_note(exc, cell, names)
        with open(out, "rb") as f:
            binary = f.read()
        ptx = _kept_ptx(tmp) if keep else None
    if target_format == "ptx":
        binary = binary.rstrip(b"\0")
    lowered = ()
    if names:
        from ..binary import entries, entry_symbols
        found = instances.lowered(names, entries(binary, target_format, arch=arch),
                                  symbols=entry_symbols(binary, target_format, arch=arch))
        lowered = tuple((n, found[n]) for n in names)
    return Output(binary, target_format, argv, log, lowered, ptx=ptx)


def _appended_note(exc: CompileError, cell: str, names: Sequence[str]) -> CompileError:
    """Say which ``--instantiate`` an error on an appended line comes from."""
    if not names:
        return exc
    first = instances.first_appended_line(cell)
    bad = sorted({i for line, _ in exc.error_lines() if line is not None
                  and (i := instances.instance_of_line(line, first, len(names))) is not None})
    for i in bad[:3]:
        exc.note(f"--instantiate {clip(names[i], 80)!r}: the compiler cannot instantiate it as "
                 f"written (line {first + 1 + i}: cuda-magic's line for it, appended after the cell)")
    return exc


BACKEND = Backend(name="nvcc", formats=("fatbin", "cubin", "ptx"), default_format="fatbin",
                  forward_ptxas=ptxas_joined, compile=compile, version=version)
