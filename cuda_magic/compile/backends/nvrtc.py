"""NVRTC, in process, through :mod:`cuda.bindings.nvrtc`.

argv: ``--gpu-architecture=<arch>`` (``compute_*`` for PTX), the user's
``nvrtc`` list verbatim, one ``--ptxas-options=<item>`` per ptxas item, then
what this backend adds, all recorded: ``-I`` for the CUDA headers from pip
(cudart, crt, curand share one tree; found with :mod:`cuda.pathfinder`), CCCL
and CUTLASS/CuTe (when the ``nvidia-cutlass`` wheel is installed), and
``--no-cache`` on NVRTC 12.9+, whose persistent compute cache returns stale
cubins across FTZ changes.  In-memory headers (session headers, the standard
headers of :mod:`..stdheaders`) go to ``nvrtcCreateProgram``.

NVRTC cannot be stopped once ``nvrtcCompileProgram`` runs, so the compile (with its
PCH steps) runs in a worker thread that the caller waits on in short steps
(:func:`.limits.wait_for`): Ctrl-C raises KeyboardInterrupt in the cell at once, and
the compile time limit raises :class:`.limits.CompileTimeoutError`.  The abandoned
compile runs to completion in the background, the worker destroys its program and
its result is discarded (a PCH it was creating is still published, under the PCH lock).
"""

from __future__ import annotations

import functools
import os
from dataclasses import replace
from types import MappingProxyType
from typing import Mapping, Sequence

from .. import pch as _pch
from ..headers import toolkit_dirs
from . import Backend, CompileError, Output, ToolNotFoundError, ptxas_each
from .limits import CompileTimeoutError, compile_timeout, wait_for

FILENAME = "cell.cu"


@functools.cache
def _nvrtc():
    try:
        from cuda.bindings import nvrtc
        nvrtc.nvrtcVersion()
    except Exception as e:  # missing wheel or library
        raise ToolNotFoundError(
            f"NVRTC is not available ({e}); install it with "
            "pip install 'cuda-toolkit[nvrtc]'") from None
    return nvrtc


@functools.cache
def version_tuple() -> tuple[int, int]:
    _, major, minor = _nvrtc().nvrtcVersion()
    return int(major), int(minor)


def version() -> str:
    return "%d.%d" % version_tuple()


@functools.cache
def added_flags() -> tuple[str, ...]:
    """Flags this backend adds after the user's (shown in the argv)."""
    flags = [f"-I{path}" for path in toolkit_dirs()]
    if version_tuple() >= (12, 9):
        flags.append("--no-cache")
    return tuple(flags)


def _check(result, what: str) -> None:
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise RuntimeError(f"NVRTC {what} failed: {err!r}")


def _log(nvrtc, prog) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    buf = bytearray(size)
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return bytes(buf).rstrip(b"\0").decode("utf-8", "replace")


def _get(nvrtc, prog, kind: str) -> bytes:
    err, size = getattr(nvrtc, f"nvrtcGet{kind}Size")(prog)
    _check((err,), f"get {kind} size")
    buf = bytearray(size)
    _check(getattr(nvrtc, f"nvrtcGet{kind}")(prog, buf), f"get {kind}")
    return bytes(buf)


def _run(nvrtc, source: str, argv: Sequence[str], headers: Mapping[str, str],
         name_expressions: Sequence[str], target_format: str):
    """One NVRTC program: (status, log, Output or None, PCH create status, PCH heap bytes needed)."""
    names = list(headers)
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), FILENAME.encode(), len(names),
                                         [headers[n].encode() for n in names],
                                         [n.encode() for n in names])
    _check((err,), "create program")
    try:
        for expr in name_expressions:
            _check(nvrtc.nvrtcAddNameExpression(prog, expr.encode()), f"add name {expr!r}")
        opts = [a.encode() for a in argv]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        log = _log(nvrtc, prog)
        pch = need = None
        if any(a.startswith("--create-pch=") for a in argv):
            (pch,) = nvrtc.nvrtcGetPCHCreateStatus(prog)
            if pch == nvrtc.nvrtcResult.NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED:
                need = int(nvrtc.nvrtcGetPCHHeapSizeRequired(prog)[1])
        if int(status) != 0:
            return status, log, None, pch, need
        ptx = _get(nvrtc, prog, "PTX").rstrip(b"\0")
        binary = ptx if target_format == "ptx" else _get(nvrtc, prog, "CUBIN")
        lowered = []
        for expr in name_expressions:
            err, name = nvrtc.nvrtcGetLoweredName(prog, expr.encode())
            _check((err,), f"get lowered name of {expr!r}")
            lowered.append((expr, name.decode()))
        out = Output(binary, target_format, tuple(argv), log, tuple(lowered),
                     ptx.decode("utf-8", "replace"))
        return status, log, out, pch, need
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def compile(source: str, *, arch: str, target_format: str, flags: Sequence[str],
            ptxas: Sequence[str], name_expressions: Sequence[str] = (),
            headers: Mapping[str, str] = MappingProxyType({}), pch: str | None = None) -> Output:
    """Compile with NVRTC; ``pch`` (a digest of the headers read) allows a precompiled header.

    Runs in a worker thread: Ctrl-C and the compile time limit stop the wait at once (the
    abandoned compile finishes in the background; its result is discarded)."""
    nvrtc = _nvrtc()
    gpu = arch.replace("sm_", "compute_", 1) if target_format == "ptx" else arch
    argv = (f"--gpu-architecture={gpu}", *flags, *ptxas, *added_flags())
    limit = compile_timeout()
    return wait_for(
        lambda: _compile(nvrtc, source, argv, target_format, name_expressions, headers, pch),
        timeout=limit, name="cuda-magic nvrtc", what="compiling with nvrtc",
        on_timeout=lambda: CompileTimeoutError(
            "nvrtc", limit, argv, source, FILENAME,
            "NVRTC cannot be stopped: the compile was abandoned (it finishes in the background "
            "and its result is discarded)"))


def _compile(nvrtc, source, argv, target_format, name_expressions, headers, pch) -> Output:
    """The compile itself (in the worker thread), with a precompiled header when it helps."""
    use = _pch.plan(source, argv, headers, pch) if pch is not None and target_format != "ptx" \
        and version_tuple() >= (12, 8) else None
    if use and use[1]:
        with_pch = (*argv, f"--use-pch={use[0]}")
        status, log, out, *_ = _run(nvrtc, source, with_pch, headers, name_expressions,
                                    target_format)
        if out is not None:
            return replace(out, pch="used" if "using precompiled header" in log else "")
        if "precompiled header" not in log:     # the cell's own error
            raise CompileError("nvrtc", log or status.name, with_pch, source, FILENAME)
    elif use:
        with _pch.lock():
            return _create(nvrtc, source, argv, headers, name_expressions, target_format, use[0])
    status, log, out, *_ = _run(nvrtc, source, argv, headers, name_expressions, target_format)
    if out is None:
        raise CompileError("nvrtc", log or status.name, argv, source, FILENAME)
    return out


_PCH_HEAP = 512 << 20   # NVRTC's default is 256 MiB; a CUB cell needs ~300 MiB


def _create(nvrtc, source, argv, headers, name_expressions, target_format, path) -> Output:
    """Compile while writing the PCH (growing NVRTC's PCH heap once if it is too small)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    create = (*argv, f"--create-pch={tmp}")
    if nvrtc.nvrtcGetPCHHeapSize()[1] < _PCH_HEAP:   # a reservation, not memory in use
        nvrtc.nvrtcSetPCHHeapSize(_PCH_HEAP)
    for attempt in range(2):
        status, log, out, pch, need = _run(nvrtc, source, create, headers, name_expressions,
                                           target_format)
        if need is None or attempt or out is None:
            break
        step = 64 << 20         # the heap was too small: grow it and make the PCH again, once
        nvrtc.nvrtcSetPCHHeapSize((need + step - 1) // step * step)
    if out is None:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise CompileError("nvrtc", log or status.name, create, source, FILENAME)
    if pch == nvrtc.nvrtcResult.NVRTC_SUCCESS and os.path.isfile(tmp):
        _pch.created(tmp, path)
        return replace(out, pch="created")
    return out


BACKEND = Backend(name="nvrtc", formats=("cubin", "ptx"), default_format="cubin",
                  forward_ptxas=ptxas_each, compile=compile, version=version, std_headers=True,
                  pch=True)
