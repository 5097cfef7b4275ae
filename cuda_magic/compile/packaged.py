"""Headers cuda-magic ships for cells to include: ``#include <cuda_magic/timeline.h>``.

They live in the package (``cuda_magic/include/``, package data) and reach both compilers the
way the other supplied headers do, with no flag from the user: NVRTC gets them in memory
beside the standard headers (:mod:`.stdheaders`), nvcc as files in its private directory
(``-I`` that directory, in the argv).  :func:`.headers.scan` finds them like a standard header,
so their text is part of the cache key, and the build lists them among the supplied headers.
"""

from __future__ import annotations

import functools
import os
from types import MappingProxyType
from typing import Mapping

__all__ = ["INCLUDE", "NAMES", "headers", "is_packaged"]

#: The directory that holds them (what ``-I`` would name for a build outside cuda-magic).
INCLUDE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include")
#: Their include names.
NAMES = ("cuda_magic/timeline.h",)


@functools.cache
def headers() -> Mapping[str, str]:
    """Include name -> text, read once from the package."""
    out = {}
    for name in NAMES:
        with open(os.path.join(INCLUDE, *name.split("/")), encoding="utf-8") as f:
            out[name] = f.read()
    return MappingProxyType(out)


def is_packaged(name: str) -> bool:
    """Whether ``name`` is one of cuda-magic's own headers (not a standard one)."""
    return name in NAMES
