"""Cooperative groups without libcu++ under NVRTC, for the cells that use none of it.

``<cooperative_groups.h>`` includes ``<cuda/atomic>`` and libcu++'s type traits and
``<functional>`` (``cg::plus`` is ``cuda::std::plus``).  Those make its NVRTC precompiled header
69 MiB, and an edit of a cell that includes it recompiles in ~4.9x a bare kernel: NVRTC's end of
the translation unit walks everything the PCH restored, and libcu++'s ``static constexpr``
members come out as ``.global`` variables that NVVM and ptxas must keep (docs/performance.md).
The header's own switch ``_CG_LIMIT_INCLUDED_DEPENDENCIES`` leaves libcu++ out: cooperative
groups then use their own traits and functors, and only the parts built on ``cuda::atomic``
(``reduce_update_async``, ``reduce_store_async``, ``inclusive_scan_update`` & co., a group's
``thread_scope``) are missing.  An edit then takes ~1.3x a bare kernel.

:func:`wanted` says when cuda-magic adds ``-D_CG_LIMIT_INCLUDED_DEPENDENCIES`` (after the user's
flags, in the argv that ran, with :data:`NOTE` in the log): the cell includes cooperative
groups, and nothing else that could meet libcu++ -- its includes are cooperative groups, the
half/bfloat16 headers, ``cuda_runtime.h`` and C headers only; it names no ``cuda::`` entity,
none of the missing parts and no ``_CG_`` macro; it includes no file of its own; the user's
flags neither name the macro nor pre-include a file.  A cell that compiles under the switch
compiles to the same SASS as without it (tests/compile/test_cg_lite.py compares every
cooperative-groups kernel of the corpus); one that does not compile under it is compiled again
without it (:data:`RETRIED`), so the switch never turns a working cell into an error.
"""

from __future__ import annotations

import re
from typing import Sequence

from .pch import COMMENTS

__all__ = ["MACRO", "FLAG", "NOTE", "RETRIED", "wanted"]

MACRO = "_CG_LIMIT_INCLUDED_DEPENDENCIES"
FLAG = f"-D{MACRO}"
NOTE = (f"cuda-magic: added {FLAG} (in the argv): cooperative groups without libcu++, which "
        f"this cell does not use (the same SASS; an edit recompiles ~4x faster). Add "
        f"-U{MACRO} to the nvrtc flags to keep libcu++ in.")
RETRIED = (f"cuda-magic: compiled again without {FLAG}: the cell did not compile with "
           f"cooperative groups' libcu++ parts left out.")

_PRE_INCLUDE = ("-include", "--pre-include")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]*)[>"]', re.M)
# what a cell may include beside cooperative groups: headers that never bring in libcu++
_ALONGSIDE = re.compile(r"(cooperative_groups(/.*)?(\.h)?|cuda_fp16\.h|cuda_bf16\.h|"
                        r"cuda_runtime(_api)?\.h|"
                        r"c(stdint|stdio|stdlib|math|assert|float|limits|string|stddef)|"
                        r"(stdint|stdio|stdlib|math|assert|float|limits|string|stddef)\.h)$")
# names of what the switch leaves out, or of libcu++ itself
_USES_LIBCUXX = re.compile(r"\bcuda\s*::|\bnamespace\s+cuda\b|\bthread_scope|_update_async\b|"
                           r"_store_async\b|\b(inclusive|exclusive)_scan_update\b|\b_CG_\w*")


def wanted(source: str, flags: Sequence[str]) -> bool:
    """Whether to add :data:`FLAG` to this cell's NVRTC flags (the module's docstring)."""
    includes = _INCLUDE.findall(source)
    if not any(name.startswith("cooperative_groups") for _, name in includes):
        return False
    if any(quote == '"' or not _ALONGSIDE.match(name.strip()) for quote, name in includes):
        return False
    if any(MACRO in f or f.split("=")[0] in _PRE_INCLUDE for f in flags):
        return False
    return _USES_LIBCUXX.search(COMMENTS.sub(" ", source)) is None     # a comment changes nothing
