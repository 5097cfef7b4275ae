"""What a failed compile's log means, as notes on the :class:`~.backends.CompileError`.

- :func:`log_hints`: the standard header that declares a name the compiler did not know,
  ``cub::Device*`` under NVRTC, what a device-side launch needs;
- :func:`missing_hint`: how to get an ``#include`` that was not found;
- :func:`arch_hint`: the arch-specific target (``sm_90a``, ``sm_100a``) an instruction needs;
- :func:`annotate`: all of them for one failed compile, with where a missing include was
  looked for, failures with a known cause outside the cell, and an older CCCL.
"""

from __future__ import annotations

import os
import re
from typing import Sequence

from .header_store import session_headers
from .include_scan import search_dirs
from .toolkit_headers import cccl_version, cutlass_dir, cutlass_dirs, header_dirs, toolkit_dirs
from .cheaders import INT_NAMES, SINCE, words
from .prelude import GLIBC_TYPES
from .stdheaders import _CXX

__all__ = ["log_hints", "missing_hint", "device_launch", "annotate", "arch_hint"]

# --- a hint for what nvcc lacks too ------------------------------------------------

_NEEDS = {**{n: "cstdint" for n in INT_NAMES}, **dict.fromkeys(words("""
    INT8_MIN INT16_MIN INT32_MIN INT64_MIN INT8_MAX INT16_MAX INT32_MAX INT64_MAX UINT8_MAX
    UINT16_MAX UINT32_MAX UINT64_MAX SIZE_MAX INTPTR_MAX UINTPTR_MAX INT64_C UINT64_C"""), "cstdint"),
          **dict.fromkeys(words("""CHAR_BIT SCHAR_MIN SCHAR_MAX UCHAR_MAX SHRT_MIN SHRT_MAX USHRT_MAX
    INT_MIN INT_MAX UINT_MAX LONG_MIN LONG_MAX ULONG_MAX LLONG_MIN LLONG_MAX ULLONG_MAX"""), "climits"),
          **dict.fromkeys(words("""FLT_MAX FLT_MIN FLT_EPSILON DBL_MAX DBL_MIN DBL_EPSILON FLT_MANT_DIG
    DBL_MANT_DIG FLT_TRUE_MIN DBL_TRUE_MIN"""), "cfloat"),
          **dict.fromkeys(words("INFINITY NAN HUGE_VAL HUGE_VALF FP_NAN FP_INFINITE"), "cmath"),
          "assert": "cassert", "offsetof": "cstddef", "max_align_t": "cstddef", "nullptr_t": "cstddef"}
_NEEDS_STD = {**{n: "type_traits" for n in _CXX["type_traits"][0]},
              **{n: h for h in ("utility", "limits", "algorithm", "array", "tuple", "functional",
                                "iterator", "numeric", "bit", "span")
                 for n in _CXX[h][0] if n not in ("swap", "get")},
              "numeric_limits": "limits", "swap": "utility", "get": "utility"}
_GLIBC = dict(GLIBC_TYPES)
_UNDEFINED = (r'identifier "([A-Za-z_]\w*)" is undefined'
              r'|namespace "std" has no member "([A-Za-z_]\w*)"'
              r'|\bcub::(Device[A-Z]\w*)')


def log_hints(log: str, nvrtc: bool = True) -> list[str]:
    """One line per name the compiler did not know and a standard header declares:
    ``'uint64_t' is declared in <cstdint>: add #include <cstdint>``; under NVRTC, that
    ``cub::Device*`` needs nvcc; what a device-side launch needs (``-rdc=true``, in the
    flags of the compiler that ran: :func:`device_launch`)."""
    out = []
    for m in re.finditer(_UNDEFINED, log):
        name, std, device = m.groups()
        if device and not nvrtc:
            continue
        header = _NEEDS.get(name) if name else _NEEDS_STD.get(std)
        line = (f"'{'std::' if std else ''}{name or std}' is declared in <{header}>: "
                f"add #include <{header}>") if header else None
        if line and nvrtc and header == "cmath":
            line += " (nvcc compiles it without: its implicit cuda_runtime.h includes the math " \
                    "headers; NVRTC includes nothing)"
        if device:
            line = (f"cub::{device} (device-wide, launched from the host) is not available "
                    "under NVRTC: compile the cell with --compiler nvcc")
        if name in _GLIBC and nvrtc and not line:   # nvcc's cuda_runtime.h -> <sys/types.h>
            line = (f"'{name}' is glibc's typedef of {_GLIBC[name]}, which nvcc declares through "
                    f"its implicit cuda_runtime.h; under NVRTC cuda-magic supplies it when the "
                    f"cell or a %%cuda_header names it, not to a header read from disk (-I): "
                    f"name it in the cell (typedef {_GLIBC[name]} {name};) before the #include, "
                    f"or use --compiler nvcc")
        if line and line not in out:
            out.append(line)
    if re.search(_DEVICE_LAUNCH, log):
        out.append(device_launch("nvrtc" if nvrtc else "nvcc"))
    return out[:6]


# Dynamic parallelism: both compilers stop unless -rdc=true; with it, cuda-magic links the
# device runtime (compile/link.py).  The front ends refuse the launch when the device runtime
# API is not declared; NVRTC, when the cell declares it (#include <cuda_device_runtime_api.h>,
# or the PDL pre-include), compiles the launch and its ptxas finds the runtime's calls missing.
_DEVICE_LAUNCH = (r"device-side kernel launch could not be processed|kernel launch from "
                  r"__device__ or __global__ functions requires separate compilation"
                  r"|Unresolved extern function '__cudaCDP2\w*'")


def device_launch(compiler: str) -> str:
    """The hint for a device-side launch without ``-rdc=true``, naming ``compiler``'s flags."""
    return ("a device-side launch (dynamic parallelism, kernel<<<...>>> in device code) needs "
            f"relocatable device code: add -rdc=true to the {compiler} flags (%%cuda "
            f"--{compiler}+ \"-rdc=true\", or a //| {compiler}+: [-rdc=true] header); cuda-magic "
            "then links the CUDA device runtime (libcudadevrt) in with nvJitLink")


# --- missing_hint ---------------------------------------------------------------

_NVCC = "host-only header: compile with --compiler nvcc"
# host-only here, but libcu++ has a device version under <cuda/std/...>
_LIBCU_HAS = words("atomic bitset chrono complex expected mdspan optional ratio string_view variant "
                "ranges")
_CCCL = "pip install 'cuda-toolkit[cccl]'"
_CUTLASS = "pip install 'cuda-magic[cutlass]' (the nvidia-cutlass wheel)"
# (name, or prefix ending in "/" or "*", -> hint); the first match wins
_HINTS: tuple[tuple[str, str], ...] = (
    ("cute/", _CUTLASS), ("cutlass/", _CUTLASS),
    ("crt/", "pip install 'cuda-toolkit[crt]'"), ("mma.h", "pip install 'cuda-toolkit[crt]'"),
    ("curand*", "pip install 'cuda-toolkit[curand]'"),
    ("cub/", _CCCL), ("thrust/", _CCCL), ("cuda/", _CCCL), ("nv/", _CCCL),
    *((h, _NVCC) for h in words("""
        iostream istream ostream sstream fstream iomanip ios streambuf string vector map
        unordered_map set unordered_set list deque queue stack forward_list memory thread
        mutex shared_mutex condition_variable future random regex filesystem exception
        stdexcept system_error locale valarray any cstdarg stdarg.h csignal signal.h cerrno
        errno.h unistd.h pthread.h omp.h mpi.h cuda_runtime.h cuda_runtime_api.h cublas_v2.h
        cublasLt.h cufft.h cusparse.h cusolverDn.h cudnn.h nccl.h nvml.h""")),
    *((h, f"host-only header: use <cuda/std/{h}> (cuda::std::) in device code, "
          "or compile with --compiler nvcc") for h in _LIBCU_HAS),
)


def missing_hint(include: str) -> str:
    """The likely fix for an ``#include`` NVRTC could not find, as one short sentence.

    >>> missing_hint("<curand_kernel.h>")
    "pip install 'cuda-toolkit[curand]'"
    """
    name = include.strip().strip('<>"').replace("\\", "/")
    for key, hint in _HINTS:
        if name == key or (key[-1] in "/*" and name.startswith(key.rstrip("*"))):
            return hint
    return ("add its directory with -I DIR (in the nvrtc list), define it with "
            "%%cuda_header NAME, or use --compiler nvcc")


# --- one failed compile ---------------------------------------------------------

def annotate(exc, backend, flags: Sequence[str]) -> None:
    """Add to ``exc`` (a :class:`~.backends.CompileError` of ``backend``, compiled with native
    ``flags``) where each missing include was looked for, then the notes for known causes."""
    _not_found(exc, backend, flags)
    _known(exc, backend)


# Failures with a known cause outside the cell: (compiler, every pattern in the log, note).
_KNOWN = (
    ("nvrtc", ("cutlass/", "host functions are not allowed in JIT mode"),
     "CUTLASS/CuTe under NVRTC: add -default-device to the nvrtc flags (CUTLASS's constexpr "
     "helpers carry no __device__)."),
    ("nvrtc", ("cute/", "is incompatible with template parameter"),
     "CuTe under NVRTC: the nvidia-cutlass wheel (4.2) declares std::tuple_size/tuple_element "
     "variadic, which CCCL 3.2+ (CUDA 13.2+) refuses; it compiles with CCCL 3.0/3.1: pip install "
     "--target DIR 'nvidia-cuda-cccl<13.2' and put it first in the nvrtc flags, -I DIR/nvidia/cu13/"
     "include -I DIR/nvidia/cu13/include/cccl (with -default-device), or compile the cell with "
     "--compiler nvcc."),
)


_NOT_ON_TARGET = re.compile(r"Instruction '((wgmma|setmaxnreg|tcgen05)[^']*)' not supported on "
                            r"\.target '(sm_\d+[af]?)'")
_FAMILY_NEEDS = {"wgmma": "sm_90a", "setmaxnreg": "sm_90a (Hopper) or sm_100a (Blackwell)",
                 "tcgen05": "sm_100a or sm_100f (Blackwell)"}


def arch_hint(log: str) -> str | None:
    """What arch an instruction ptxas refused needs: ``wgmma`` and ``setmaxnreg`` the
    arch-specific sm_90a, ``tcgen05`` Blackwell's sm_100a/sm_100f (None: no such refusal)."""
    m = _NOT_ON_TARGET.search(log)
    if m is None:
        return None
    instruction, family, target = m.groups()
    needs = _FAMILY_NEEDS[family]
    return (f"'{instruction}' is not on {target}: {family} needs {needs}, an arch-specific target "
            f"(the 'a'/'f' suffix): --arch {needs.split()[0]}")


def _known(exc, backend) -> None:
    """Notes for failures with a known cause: :data:`_KNOWN`, the arch an instruction needs
    (:func:`arch_hint`), the standard header that declares an undefined name
    (:func:`log_hints`, both compilers), an older CCCL."""
    hint = arch_hint(exc.log)
    if hint:        # before ptxas's lines: they name the instruction, not the fix
        exc.note(hint, first=True)
    for line in log_hints(exc.log, nvrtc=backend.name == "nvrtc"):
        exc.note(line)
    for compiler, patterns, note in _KNOWN:
        if backend.name == compiler and all(p in exc.log for p in patterns):
            exc.note(note)
    if backend.name == "nvrtc":
        _older_cccl(exc)


def _older_cccl(exc) -> None:
    """Name the CCCL when a standard name the supplied headers declare only on newer CCCLs
    (:data:`.cheaders.SINCE`) is missing."""
    missing = sorted({n for n in SINCE if re.search(
        rf'(identifier|no member) "(std::)?{n}"( is undefined)?', exc.log)})
    version = cccl_version()
    if not missing or version is None or version >= (3, 1, 0):
        return
    exc.note(f"{', '.join(missing[:3])}: not in CCCL {'.'.join(map(str, version))} (from "
             f"{header_dirs().get('cccl')}); the supplied standard headers declare it with "
             f"CCCL 3.1+: pip install -U nvidia-cuda-cccl (or 'cuda-toolkit[cccl]'), or use "
             f"--compiler nvcc")


def _not_found(exc, backend, flags: Sequence[str]) -> None:
    """Say where a missing include was looked for, in order, and the likely fix."""
    missing = exc.missing_includes()
    if not missing:
        return
    dirs = [f"-I {d}" for d in search_dirs(flags)[0]]
    session = ", ".join(session_headers())
    here = f"the working directory {os.getcwd()}"
    if backend.name == "nvrtc":
        memory = ([f"%%cuda_header {session}"] if session else []) + \
            (["cuda-magic's standard headers"] if backend.std_headers else [])
        order = [f"in memory ({'; '.join(memory)})"] * bool(memory) + \
            ["the including file's directory", here, *dirs] + \
            [f"the toolkit {d}" for d in toolkit_dirs()]
    else:   # nvcc: session headers sit beside cell.cu; then the user's -I, then -I.
        beside = f" (with %%cuda_header {session})" if session else ""
        order = [f"the including file's directory{beside}", *dirs, f"{here} (-I.)"] + \
            [f"-I {d}" for d in cutlass_dirs()] + \
            ["the CUDA toolkit and the host compiler's system directories"]
    for name in missing[:3]:
        exc.note(f"'{name}' was not found; searched, in order: {', '.join(order)}. "
                 f"{_hint(name)}")


def _hint(name: str) -> str:
    """:func:`missing_hint`, but never "install the wheel" for a CUTLASS header when the wheel
    is installed: then the header is not in it (both its include dirs are searched)."""
    bare = name.strip().strip('<>"')
    if bare.startswith(("cute/", "cutlass/")) and cutlass_dir():
        from importlib import metadata
        try:
            which = f"nvidia-cutlass {metadata.version('nvidia-cutlass')}"
        except metadata.PackageNotFoundError:
            which = "the CUTLASS found"
        return (f"{which} has no such header (its include and tools/util/include are searched): "
                f"check the name, or put a CUTLASS checkout first with -I DIR")
    return missing_hint(name)
