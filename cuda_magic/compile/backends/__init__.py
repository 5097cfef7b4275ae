"""Compiler backends: a frozen spec per compiler and a registry.

A backend turns (source, arch, target_format, native flags, ptxas flags) into
an :class:`Output`: the binary, the exact argv that ran and the log.  The
built-ins are ``nvrtc`` (in-process, :mod:`cuda.bindings.nvrtc`) and ``nvcc``
(a subprocess in a private temporary directory).
"""

from __future__ import annotations

import threading

from ...config import ConfigError
from .base import (Backend, CompileError, InputTypeError, Output, ToolNotFoundError, ptxas_each,
                   ptxas_joined)

__all__ = ["Backend", "Output", "CompileError", "InputTypeError", "ToolNotFoundError",
           "register_backend", "get_backend", "list_backends", "ptxas_each", "ptxas_joined"]


_REGISTRY: dict[str, Backend] = {}
_LOCK = threading.Lock()


def register_backend(backend: Backend) -> Backend:
    """Register ``backend``; the identical spec again is a no-op."""
    with _LOCK:
        old = _REGISTRY.get(backend.name)
        if old is not None and old != backend:
            raise ConfigError(f"backend {backend.name!r} is already registered with a "
                              "different declaration", "compiler")
        _REGISTRY[backend.name] = backend
    return backend


def get_backend(name: str) -> Backend:
    """The backend called ``name``; an error lists the known names."""
    with _LOCK:
        backend = _REGISTRY.get(name)
        known = ", ".join(sorted(_REGISTRY))
    if backend is None:
        raise ConfigError(f"unknown compiler {name!r}; known compilers: {known}", "compiler")
    return backend


def list_backends() -> dict[str, Backend]:
    """A copy of the registry, by name."""
    with _LOCK:
        return dict(sorted(_REGISTRY.items()))


from . import nvcc as _nvcc, nvrtc as _nvrtc  # noqa: E402  (register the built-ins)

register_backend(_nvrtc.BACKEND)
register_backend(_nvcc.BACKEND)
