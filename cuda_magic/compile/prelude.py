"""What NVRTC needs besides the standard headers to read a cell as nvcc does.

- :data:`IMPLICIT`: the pre-included header (``--pre-include``, in the argv) with what nvcc's
  implicit ``cuda_runtime.h`` (and glibc's ``<sys/types.h>`` through it) declares and the cell
  uses (:func:`implicit`);
- :func:`with_glibc_int_types`: the toolkit headers (:data:`TOOLKIT_INT_TYPEDEFS`) whose own
  NVRTC int typedefs would clash with the supplied ``<cstdint>``, with those lines replaced.
"""

from __future__ import annotations

import re
from typing import Iterable

from .cheaders import BASICS, M_CONSTANTS, SPECS, block, defines, guard, guarded

__all__ = ["IMPLICIT", "implicit", "GLIBC_TYPES", "TOOLKIT_INT_TYPEDEFS", "with_glibc_int_types"]

# --- what nvcc declares without an #include -------------------------------------
# nvcc pre-includes cuda_runtime.h, which brings glibc's <stdlib.h> (and through it
# <sys/types.h>) and the device runtime API: code leans on that without knowing.  Each part
# below is supplied (as the pre-included IMPLICIT header, in the argv) only when the cell or
# its in-memory headers name one of its identifiers, so no other cell changes.

IMPLICIT = "cuda-magic/nvcc_implicit.h"
GLIBC_TYPES = [("ushort", "unsigned short"), ("uint", "unsigned int"), ("ulong", "unsigned long"),
                ("u_char", "unsigned char"), ("u_short", "unsigned short"),
                ("u_int", "unsigned int"), ("u_long", "unsigned long"), ("quad_t", "long"),
                ("u_quad_t", "unsigned long"), ("u_int8_t", "unsigned char"),
                ("u_int16_t", "unsigned short"), ("u_int32_t", "unsigned int"),
                ("u_int64_t", "unsigned long")]
# (identifiers that call for it, text); glibc's <sys/types.h> has int8_t..int64_t (signed
# only), given here by the <cstdint> block, whose guard keeps libcu++'s 'long long' ones out.
_PDL = ("cudaGridDependencySynchronize", "cudaTriggerProgrammaticLaunchCompletion")
_IMPLICIT_PARTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("__extension__",), "#ifndef __extension__\n#define __extension__\n#endif\n"),
    (_PDL, """
// Programmatic dependent launch (sm_90+): the toolkit's cuda_device_runtime_api.h, as nvcc's
// cuda_runtime.h includes it.  Its include guard keeps it once: NVRTC's built-in copy (under
// -rdc) or the cell's own #include of it wins, whichever comes first.
#if !defined(__CUDA_DEVICE_RUNTIME_API_H__) && __has_include(<cuda_device_runtime_api.h>)
#include <cuda_device_runtime_api.h>
#elif !defined(__CUDA_DEVICE_RUNTIME_API_H__)
static inline __device__ void cudaTriggerProgrammaticLaunchCompletion(void) {
  asm volatile("griddepcontrol.launch_dependents;" :::);
}
static inline __device__ void cudaGridDependencySynchronize(void) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}
#endif
"""),
    (("int8_t", "int16_t", "int32_t", "int64_t"), guarded(guard("cstdint"), BASICS + SPECS["cstdint"][1])),
    (tuple(n for n, _ in GLIBC_TYPES), "".join(f"typedef {t} {n};\n" for n, t in GLIBC_TYPES)),
    # <climits>'s macros and glibc's M_* constants (cheap; the rest of <cmath> is not)
    (tuple(line.split()[1] for line in SPECS["climits"][1].splitlines()
           if line.startswith("#define ")), block("climits")),
    (tuple(f"M_{n}" for n, _ in M_CONSTANTS), defines("\n".join(f"M_{n} {v}" for n, v in M_CONSTANTS))),
)
_IDENT = re.compile(r"[A-Za-z_]\w*")


def implicit(texts: Iterable[str]) -> str | None:
    """The text of :data:`IMPLICIT` for a cell whose source and session headers are
    ``texts``: the parts whose identifiers they name, or None when they name none.

    >>> "typedef unsigned int uint;" in implicit(["__global__ void k(uint n) {}"])
    True
    """
    words: set[str] = set()
    for text in texts:
        words.update(_IDENT.findall(text))
    parts = [body.strip("\n") for names, body in _IMPLICIT_PARTS if words.intersection(names)]
    if not parts:
        return None
    return ("// Supplied by cuda-magic for NVRTC: what nvcc's implicit cuda_runtime.h (and glibc's\n"
            "// <sys/types.h> through it) declares and this cell uses.\n"
            + guarded("_CUDA_MAGIC_NVCC_IMPLICIT_", "\n".join(parts)))


# --- toolkit headers with their own NVRTC int typedefs ------------------------------
# cuda_pipeline_helpers.h and cuda_awbarrier_helpers.h (under <cuda_pipeline.h>,
# <cuda_awbarrier.h>, cooperative groups' memcpy_async) typedef uint64_t as 'unsigned long
# long' under NVRTC and include <stdint.h> under nvcc.  With cuda-magic's <cstdint> in force
# ('unsigned long', nvcc's), the two clash in either order ("invalid redeclaration of type
# name").  Supplied in memory: the toolkit file itself with those typedef lines replaced by
# cuda-magic's <cuda/std/cstdint> -- what its nvcc branch does (line numbers kept).

TOOLKIT_INT_TYPEDEFS = ("cuda_pipeline_helpers.h", "cuda_awbarrier_helpers.h")
# (patterns as strings: re compiles them at first use, on these rare paths, not at import)
_TK_TYPEDEF = (r"^[ \t]*typedef[ \t]+(?:unsigned[ \t]+(?:short|int|long[ \t]+long)|uint64_t)"
               r"[ \t]+(?:uint16_t|uint32_t|uint64_t|uintptr_t)[ \t]*;[ \t]*$")


def with_glibc_int_types(name: str, text: str) -> str | None:
    """Toolkit header ``name`` (its ``text``) with its NVRTC int typedefs replaced by
    ``#include <cuda/std/cstdint>`` (cuda-magic's), or None when it has none to replace."""
    found = list(re.finditer(_TK_TYPEDEF, text, re.M))
    if not found:
        return None
    out, last = [], 0
    for i, m in enumerate(found):
        out.append(text[last:m.start()])
        out.append(f"#include <cuda/std/cstdint> // Supplied by cuda-magic for NVRTC: the toolkit's "
                   f"{name}, its NVRTC typedefs replaced by glibc's types, as with nvcc" if i == 0
                   else "// (cuda-magic: from <cuda/std/cstdint>, as with nvcc)")
        last = m.end()
    out.append(text[last:])
    return "".join(out)

