"""NVRTC, in process, through :mod:`cuda.bindings.nvrtc`.

argv: ``--gpu-architecture=<arch>`` (``compute_*`` for PTX), the user's
``nvrtc`` list verbatim, one ``--ptxas-options=<item>`` per ptxas item, then
what this backend adds, all recorded: ``-I`` for the CUDA headers from pip
(cudart, crt, curand share one tree; found with :mod:`cuda.pathfinder`), CCCL
and CUTLASS/CuTe (when the ``nvidia-cutlass`` wheel is installed), and
``--no-cache`` on NVRTC 12.9+, whose persistent compute cache returns stale
cubins across FTZ changes.  In-memory headers (session headers, the standard
headers of :mod:`..stdheaders`) go to ``nvrtcCreateProgram``.

The compile (with its PCH steps) runs in a worker thread that the caller waits on in short
steps (:func:`.limits.wait_for`): Ctrl-C raises KeyboardInterrupt in the cell at once, and the
compile time limit raises :class:`.limits.CompileTimeoutError`.  Where NVRTC has
``nvrtcSetFlowCallback`` (NVRTC 13.x, through cuda.bindings; :func:`can_cancel`), every program
gets a flow callback that asks NVRTC to cancel once the wait was given up (or the cell's
parallel builds were: :func:`..parallel.cancel_events`): NVRTC stops at its next checkpoint
(none during the front end's parse, often seconds apart in the optimiser and ptxas) and
returns ``NVRTC_ERROR_CANCELLED``.  An older NVRTC cannot be stopped: the abandoned compile
runs to completion in the background, the worker destroys its program and its result is
discarded (a PCH it was creating is still published, under the PCH lock).

A precompiled header is an optimisation (:mod:`..pch`): NVRTC failing to write one (a full
disk), unable to map its memory (a file-size limit), or refusing one we wrote, compiles the
cell without it, said once.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import os
import re
import threading
from dataclasses import replace
from types import MappingProxyType
from typing import Mapping, Sequence

from ...errors import clip
from .. import cg_lite
from .. import pch as _pch
from .. import pch_heap
from ..toolkit_headers import toolkit_dirs
from ..parallel import cancel_events, doing
from .base import Backend, CompileError, Output, ToolNotFoundError, ptxas_each
from .limits import ENV, CompileTimeoutError, compile_timeout, wait_for

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


# CCCL unrolls its type-list metaprograms 16 deep for every compiler but nvcc, which gets 10
# (cuda/std/__type_traits/type_list.h).  NVRTC's preprocessor takes ~0.9 s to expand the
# 16-deep macros once (any libcu++ header pays it) and its PCH files grow ~8x: nvcc's value
# makes <cuda/std/type_traits> 1.1 s -> 0.16 s and its PCH 203 -> 25 MiB (docs/decisions.md).
UNROLL = "-D_CCCL_META_UNROLL_LIMIT=10"


def _unroll(flags: Sequence[str]) -> tuple[str, ...]:
    """``UNROLL`` unless the user's flags set the macro themselves."""
    said = any("_CCCL_META_UNROLL_LIMIT" in f for f in flags)
    return () if said else (UNROLL,)


# ---- cancelling a compile: NVRTC's flow callback ---------------------------------------------------

_FLOW_TYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_watched: dict[int, tuple[threading.Event, ...]] = {}    # payload -> the events that cancel it
_payloads = itertools.count(1)


@_FLOW_TYPE
def _flow(payload, _reserved):
    """NVRTC's flow callback (any thread): 1 (cancel) once one of the program's events is set;
    events are never cleared, so once 1 it stays 1, as NVRTC requires."""
    return int(any(event.is_set() for event in _watched.get(payload or 0, ())))


_FLOW = ctypes.cast(_flow, ctypes.c_void_p).value


@functools.cache
def can_cancel() -> bool:
    """Whether this NVRTC can cancel a running compile: cuda.bindings has
    ``nvrtcSetFlowCallback`` and the library takes it (NVRTC 13.x)."""
    nvrtc = _nvrtc()
    if not hasattr(nvrtc, "nvrtcSetFlowCallback"):
        return False
    err, prog = nvrtc.nvrtcCreateProgram(b"", b"probe.cu", 0, [], [])
    if int(err) != 0:
        return False
    try:
        return int(nvrtc.nvrtcSetFlowCallback(prog, _FLOW, 0)[0]) == 0
    except Exception:       # the binding is there, the library's symbol is not
        return False
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _watch(nvrtc, prog) -> int:
    """Give ``prog`` the flow callback, watching this thread's cancel events; the payload to
    :func:`_unwatch` (0: nothing to watch, or NVRTC cannot cancel)."""
    events = cancel_events()
    if not events or not can_cancel():
        return 0
    key = next(_payloads)
    _watched[key] = events
    if int(nvrtc.nvrtcSetFlowCallback(prog, _FLOW, key)[0]) != 0:
        del _watched[key]
        return 0
    return key


def _unwatch(key: int) -> None:
    _watched.pop(key, None)


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
    watching = _watch(nvrtc, prog)
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
        _unwatch(watching)
        nvrtc.nvrtcDestroyProgram(prog)


def compile(source: str, *, arch: str, target_format: str, flags: Sequence[str],
            ptxas: Sequence[str], name_expressions: Sequence[str] = (),
            headers: Mapping[str, str] = MappingProxyType({}), pch: str | None = None) -> Output:
    """Compile with NVRTC; ``pch`` (a digest of the headers read) allows a precompiled header.

    Runs in a worker thread: Ctrl-C and the compile time limit stop the wait at once (the
    abandoned compile finishes in the background; its result is discarded)."""
    nvrtc = _nvrtc()
    gpu = arch.replace("sm_", "compute_", 1) if target_format == "ptx" else arch
    argv = (f"--gpu-architecture={gpu}", *flags, *ptxas, *added_flags(), *_unroll(flags))
    limit = compile_timeout()
    try:
        return wait_for(
            lambda: _compile(nvrtc, source, argv, target_format, name_expressions, headers, pch),
            timeout=limit, name="cuda-magic nvrtc", what="compiling with nvrtc",
            on_timeout=lambda: CompileTimeoutError("nvrtc", limit, argv, source, FILENAME,
                                                   _ABANDONED[can_cancel()], ENV))
    except CompileError as exc:
        raise _name_note(exc, name_expressions)


_ABANDONED = {
    True: "The compile was abandoned and cancelled (NVRTC stops at its next checkpoint)",
    False: "This NVRTC cannot be stopped: the compile was abandoned (it finishes in the "
           "background and its result is discarded)"}


def _name_note(exc: CompileError, names: Sequence[str]) -> CompileError:
    """Say which ``--instantiate`` (name expression) NVRTC could not instantiate."""
    if "__nv_name_map" not in exc.log or getattr(exc, "_named", False):
        return exc
    said = {"".join(m.split()) for m in re.findall(r'Input name expression was: "([^"]*)"', exc.log)}
    for name in [n for n in names if "".join(n.split()) in said][:3]:
        exc.note(f"--instantiate {clip(name, 80)!r}: the compiler cannot instantiate it as written "
                 f"(the __nv_name_map lines above)")
    exc._named = True
    return exc


def _compile(nvrtc, source, argv, target_format, name_expressions, headers, pch) -> Output:
    """The compile itself (in the worker thread), with a precompiled header when it helps."""
    plan = (lambda: _pch.plan(source, argv, headers, pch, heap=lambda: _heap(nvrtc))) \
        if pch is not None and target_format != "ptx" and version_tuple() >= (12, 8) \
        else (lambda: None)
    use = plan()
    if use and not use[1]:
        with doing(PCH_NOTE), _pch.lock():
            use = plan()            # another thread may have made it while this one waited
            if use and not use[1]:
                out = _create(nvrtc, source, argv, headers, name_expressions, target_format,
                              use[0], plan)
                if out is not None:
                    return out
                use = None
    if use and use[1]:
        out = _use(nvrtc, source, argv, headers, name_expressions, target_format, use[0])
        if out is not None:
            return out
    status, log, out, *_ = _run(nvrtc, source, argv, headers, name_expressions, target_format)
    if out is None:
        raise CompileError("nvrtc", log or status.name, argv, source, FILENAME)
    return out


def _heap(nvrtc) -> str:
    """NVRTC's PCH heap, placed where every process puts it (:mod:`..pch_heap`): its token."""
    def allocate():
        _, log, *_ = _run(nvrtc, '#include "cuda-magic-heap.h"\n', (_NO_PCH,),
                          {"cuda-magic-heap.h": ""}, (), "cubin")  # fails at once, heap mapped
        if _MAP_FAULT in log:       # a file-size limit: no PCH in this process (said once)
            _pch.unmappable(_MAP_FAULT)
    # the size is a reservation, not memory in use
    return pch_heap.place(_heap_size[0], nvrtc.nvrtcSetPCHHeapSize, allocate)


_NO_PCH = "--use-pch=/nonexistent/cuda-magic.pch"


_heap_size = [512 << 20]    # NVRTC's default is 256 MiB; a CUB cell needs ~120 (~300 before UNROLL)


_USED = "using precompiled header"


def _use(nvrtc, source, argv, headers, name_expressions, target_format, path) -> Output | None:
    """Compile with the PCH at ``path``; None when NVRTC would not use it: this one compiles
    without it, and the next makes it again (replacing it), unless it was made for a heap at
    another address (:func:`..pch.unfit`: kept for the processes it serves)."""
    with_pch = (*argv, f"--use-pch={path}")
    status, log, out, *_ = _run(nvrtc, source, with_pch, headers, name_expressions, target_format)
    if _USED in log:
        if out is None:         # the cell's own error, below the includes
            raise CompileError("nvrtc", log or status.name, with_pch, source, FILENAME)
        return replace(out, pch="used")
    if out is None and int(status) == int(nvrtc.nvrtcResult.NVRTC_ERROR_CANCELLED):
        raise CompileError("nvrtc", log or status.name, with_pch, source, FILENAME)
    if _MAP_FAULT in log:       # this process cannot map it (a file-size limit): the PCH is fine
        _pch.unmappable(_MAP_FAULT)
    elif _HEAP_MOVED in log:    # made where this process's heap is not: someone else's, kept
        _pch.unfit(path)
    else:                       # invalid (warning #626), or it broke the compile: made again
        _pch.refused(path)      # next time; a failed compile is compiled again without it
    return out


# NVRTC's warning #20282: the PCH was made with its heap at another address (:mod:`..pch_heap`)
_HEAP_MOVED = "incompatible precompiled header (PCH) heap allocation address"
PCH_NOTE = "building a one-off precompiled header"
_WRITE_FAULT = re.compile(r"(?:error|warning)[^\n]*?(?:PCH file|precompiled header)[^\n]*", re.I)
# NVRTC's "could not create PCH file because there were compilation errors": the headers failed
# (the compile says why), which is no fault of the PCH directory
_SOURCE_FAULT = "because there were compilation errors"
# NVRTC grows a temporary file ($TMPDIR/edg.*) for the PCH's memory and maps it: a file-size
# limit (RLIMIT_FSIZE) or a full temporary directory fails the compile with this, PCH or not made
_MAP_FAULT = "unable to obtain mapped memory"


def _create(nvrtc, source, argv, headers, name_expressions, target_format, path,
            plan) -> Output | None:
    """Compile while writing the PCH at ``path`` (growing NVRTC's PCH heap once if it is too
    small: the heap's size is in the PCH's name, so ``plan()`` names it again).  None when NVRTC
    could not write the PCH (a full disk: said once by :func:`..pch.write_failed`) and the
    compile failed for it, or when the bigger heap's PCH could not be had: the caller compiles
    without one."""
    for attempt in range(2):
        tmp = f"{path}.{os.getpid()}.tmp"
        if os.path.lexists(tmp) and not os.path.isdir(tmp):
            os.unlink(tmp)          # ours, left by an interrupted process
        create = (*argv, f"--create-pch={tmp}")
        status, log, out, pch, need = _run(nvrtc, source, create, headers, name_expressions,
                                           target_format)
        if need is None or attempt or out is None:
            break
        step = 64 << 20         # the heap was too small: grow it and make the PCH again, once
        _heap_size[0] = max(_heap_size[0], (need + step - 1) // step * step)
        if os.path.lexists(tmp) and not os.path.isdir(tmp):
            os.unlink(tmp)
        use = plan()
        if not use:
            return None
        if use[1]:              # another process made it with a heap this size
            return _use(nvrtc, source, argv, headers, name_expressions, target_format, use[0])
        path = use[0]
    made = pch == nvrtc.nvrtcResult.NVRTC_SUCCESS and os.path.isfile(tmp) \
        and not os.path.islink(tmp)
    if made:        # the PCH holds the leading directives only: kept even when the body failed,
        made = _pch.created(tmp, path)     # so the compile after fixing a typo uses it
    elif os.path.lexists(tmp) and not os.path.isdir(tmp):
        os.unlink(tmp)
    if not made and _MAP_FAULT in log:
        _pch.unmappable(_MAP_FAULT)
        if out is None:
            return None
    fault = None if made else next((m for m in _WRITE_FAULT.finditer(log)      # the disk, not
                                    if _SOURCE_FAULT not in m.group()), None)   # the source
    if fault:
        _pch.write_failed(os.path.dirname(path), clip(fault.group().strip(), 200))
        if out is None:
            return None
    if out is None:
        raise CompileError("nvrtc", log or status.name, create, source, FILENAME)
    return replace(out, pch="created") if made else out


# NVRTC refuses every function without __host__/__device__ ("host functions are not allowed in
# JIT mode"), where nvcc compiles it as a host function: a constexpr helper that device code
# calls (CUTLASS/CuTe, most "real" files) is then refused by NVRTC alone.  ``-default-device``
# makes such functions __device__; it is added only on a retry after exactly that failure, so a
# cell that compiles without it keeps its meaning, and the argv and the log say it was added.
DEFAULT_DEVICE = "-default-device"
_DEFAULT_DEVICE = (DEFAULT_DEVICE, "--device-as-default-execution-space")
_HOST_FUNCTION = "A function without execution space annotations"
RETRIED = ("cuda-magic: compiled again with -default-device (appended to the argv): NVRTC "
           "refused functions without __host__/__device__ (host functions are not allowed in "
           "JIT mode); nvcc compiles them as host functions, and -default-device makes them "
           "device functions. Add -default-device to the nvrtc flags to skip the first try.")


_USES_TOOLKIT_TYPEDEFS = re.compile(r"cuda_pipeline|cuda_awbarrier|memcpy_async|cooperative_groups")


@functools.lru_cache(maxsize=8)
def _toolkit_file(name: str, dirs: tuple[str, ...]) -> str | None:
    for d in dirs:
        path = os.path.join(d, name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read()
    return None


def supply(source: str, flags: Sequence[str], headers: Mapping[str, str]):
    """What nvcc gives implicitly, for this cell: (flags, headers, log notes).

    - :data:`..prelude.IMPLICIT` (the nvcc-implicit names the cell uses: ``uint``,
      ``int64_t``, ``__extension__``, the PDL device functions), pre-included with
      ``--pre-include=`` (in the argv);
    - where cuda-magic's ``<cstdint>`` is in force, the toolkit headers whose NVRTC-only
      typedefs would clash with it, with those typedefs replaced (:func:`..prelude.with_glibc_int_types`)."""
    from .. import prelude, stdheaders
    flags, headers, notes = tuple(flags), dict(headers), []
    texts = [source, *(t for n, t in headers.items() if stdheaders.HEADERS.get(n) != t)]
    implicit = prelude.implicit(texts)
    if implicit and prelude.IMPLICIT not in headers:
        headers[prelude.IMPLICIT] = implicit
        flags += (f"--pre-include={prelude.IMPLICIT}",)
        notes.append(f"cuda-magic: pre-included {prelude.IMPLICIT} (--pre-include, in the argv): "
                     "names nvcc declares without an #include (through its implicit "
                     "cuda_runtime.h) that this cell uses")
    if "cuda/std/cstdint" in headers or (implicit and "_CUDA_STD_CSTDINT" in implicit):
        for name in prelude.TOOLKIT_INT_TYPEDEFS:
            text = _toolkit_file(name, toolkit_dirs())
            fixed = text and name not in headers and prelude.with_glibc_int_types(name, text)
            if fixed:
                headers[name] = fixed
                if any(_USES_TOOLKIT_TYPEDEFS.search(t) for t in texts):
                    notes.append(f"cuda-magic: supplied {name} in memory: the toolkit's, its "
                                 "NVRTC-only uint64_t typedef replaced by <cstdint>'s (unsigned "
                                 "long, as with nvcc)")
    return flags, headers, notes


def compile_retrying(source: str, *, flags: Sequence[str],
                     headers: Mapping[str, str] = MappingProxyType({}), **kw) -> Output:
    """:func:`compile_default_device` with what :func:`supply` adds, and, for a cell that uses
    cooperative groups and nothing of libcu++, with :data:`.cg_lite.FLAG` first (compiled again
    without it if the cell does not compile with it; the log says which)."""
    lite = cg_lite.wanted(source, flags)
    flags, headers, notes = supply(source, flags, headers)
    try:
        if lite:
            try:
                return _with_notes(compile_default_device(
                    source, flags=(*flags, cg_lite.FLAG), headers=headers, **kw),
                    [*notes, cg_lite.NOTE])
            except CompileTimeoutError:
                raise
            except CompileError:
                pass            # compiled as written below; its error, if any, is the cell's
        out = compile_default_device(source, flags=flags, headers=headers, **kw)
    except CompileError as exc:
        for line in notes:
            exc.note(line)
        raise
    return _with_notes(out, [*notes, cg_lite.RETRIED] if lite else notes)


def compile_default_device(source: str, *, flags: Sequence[str], **kw) -> Output:
    """:func:`compile`; when NVRTC refused unannotated (host) functions and the flags lack
    ``-default-device``, once more with it appended (the log then starts with :data:`RETRIED`;
    a CompileError of the retry carries it as a note)."""
    try:
        return compile(source, flags=flags, **kw)
    except CompileError as exc:
        if _HOST_FUNCTION not in exc.log or any(f in _DEFAULT_DEVICE for f in flags):
            raise
    try:
        return _with_notes(compile(source, flags=(*flags, DEFAULT_DEVICE), **kw), [RETRIED])
    except CompileError as exc:
        exc.note(RETRIED)
        raise


def _with_notes(out: Output, notes: Sequence[str]) -> Output:
    """``out`` with ``notes`` (cuda-magic's lines) at the start of its log."""
    return replace(out, log="\n".join([*notes, out.log]).rstrip("\n")) if notes else out


BACKEND = Backend(name="nvrtc", formats=("cubin", "ptx"), default_format="cubin",
                  forward_ptxas=ptxas_each, compile=compile_retrying, version=version, std_headers=True,
                  pch=True)
