"""NVRTC, in process, through :mod:`cuda.bindings.nvrtc`.

argv: ``--gpu-architecture=<arch>`` (``compute_*`` for PTX), the user's
``nvrtc`` list verbatim, one ``--ptxas-options=<item>`` per ptxas item, then
what this backend adds, all recorded: ``-I`` for the CUDA and CCCL headers
(found with :mod:`cuda.pathfinder`) so ``cuda_fp16.h``, ``cuda_bf16.h`` and
``cooperative_groups.h`` work, and ``--no-cache`` on NVRTC 12.9+, whose
persistent compute cache returns stale cubins across FTZ changes.
"""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import Mapping, Sequence

from . import Backend, CompileError, Output, ToolNotFoundError, ptxas_each

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
    flags = []
    try:
        from cuda.pathfinder import find_nvidia_header_directory
        for lib in ("cudart", "cccl"):
            path = find_nvidia_header_directory(lib)
            if path and f"-I{path}" not in flags:
                flags.append(f"-I{path}")
    except Exception:  # headers are optional: plain kernels need none
        pass
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


def compile(source: str, *, arch: str, target_format: str, flags: Sequence[str],
            ptxas: Sequence[str], name_expressions: Sequence[str] = (),
            headers: Mapping[str, str] = MappingProxyType({})) -> Output:
    nvrtc = _nvrtc()
    gpu = arch.replace("sm_", "compute_", 1) if target_format == "ptx" else arch
    argv = (f"--gpu-architecture={gpu}", *flags, *ptxas, *added_flags())
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
        if int(status) != 0:
            raise CompileError("nvrtc", log or status.name, argv, source, FILENAME)
        ptx = _get(nvrtc, prog, "PTX").rstrip(b"\0")
        binary = ptx if target_format == "ptx" else _get(nvrtc, prog, "CUBIN")
        lowered = []
        for expr in name_expressions:
            err, name = nvrtc.nvrtcGetLoweredName(prog, expr.encode())
            _check((err,), f"get lowered name of {expr!r}")
            lowered.append((expr, name.decode()))
        return Output(binary, target_format, argv, log, tuple(lowered), ptx.decode("utf-8", "replace"))
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


BACKEND = Backend(name="nvrtc", formats=("cubin", "ptx"), default_format="cubin",
                  forward_ptxas=ptxas_each, compile=compile, version=version)
