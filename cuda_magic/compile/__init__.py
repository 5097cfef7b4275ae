"""Compiling: config -> backend (NVRTC in-process, nvcc subprocess) -> :class:`CompilationResult`.

``compiler`` resolves and caches, ``backends/`` run the compilers, ``ptxas``
parses ``ptxas -v``, ``arch`` detects the GPU, ``cache`` keeps binaries.
Nothing here needs a GPU except arch detection when no arch is set.
"""

from .arch import detect_arch
from .backends import Backend, get_backend, list_backends, register_backend
from .backends.limits import set_compile_timeout
from .compiler import (CompilationResult, clear_cache, compile_resolved, compile_source,
                       resolve_layers, set_cache_dir, set_cache_limit)
from .header_store import define_header, remove_header, session_headers
from .pch import clear as clear_pch
from .toolkit_headers import header_dirs
from .ptxas import Resources, parse_ptxas

# what cuda_magic exports from here (its errors are in errors.py)
__all__ = ["detect_arch", "Backend", "get_backend", "list_backends", "register_backend",
           "set_compile_timeout", "CompilationResult", "clear_cache", "compile_resolved",
           "compile_source", "resolve_layers", "set_cache_dir", "set_cache_limit",
           "define_header", "header_dirs", "remove_header", "session_headers", "clear_pch",
           "Resources", "parse_ptxas"]
