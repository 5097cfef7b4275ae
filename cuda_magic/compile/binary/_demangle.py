"""Demangling kernel symbols: ``_Z...`` names to the C++ text a demangler prints.

libstdc++'s ``__cxa_demangle`` through :mod:`ctypes` (else GNU ``c++filt``, else
``cu++filt``, whose EDG-style text leaves template parameters as ``T1``); a name that is
not mangled maps to itself.  Typedef names never reach a mangled name: ``uint`` shows as
``unsigned int``, ``CUtensorMap`` as ``CUtensorMap_st``, and top-level ``const``
(``const __grid_constant__``) is not part of it.  Results are cached (at most
:data:`_CACHE_MAX` names, cleared when full).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import subprocess
import threading
from typing import Iterable

from ... import tools
from ...errors import ToolNotFoundError

_CACHE: dict[str, str] = {}
_CACHE_MAX = 8192
_LOCK = threading.Lock()


@functools.cache
def _cxa_demangle():
    """libstdc++'s (or libc++abi's) ``__cxa_demangle`` and libc's ``free``, or None.  The
    soname first: ``find_library`` runs ``ldconfig -p`` (~15 ms of a process's first cell)."""
    def libs():
        yield "libstdc++.so.6"
        yield ctypes.util.find_library("stdc++")
        yield ctypes.util.find_library("c++abi")

    for lib in libs():
        if not lib:
            continue
        try:
            fn = ctypes.CDLL(lib).__cxa_demangle
            free = ctypes.CDLL(None).free       # the process's own libc
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                       ctypes.POINTER(ctypes.c_int)]
        free.argtypes, free.restype = [ctypes.c_void_p], None
        return fn, free
    return None


def _demangle_one(fn, free, name: str) -> str:
    status = ctypes.c_int(0)
    ptr = fn(name.encode(), None, None, ctypes.byref(status))
    if not ptr:
        return name
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace") if status.value == 0 else name
    finally:
        free(ptr)


def _filt_tools() -> list[str]:
    """The paths of GNU ``c++filt``, then ``cu++filt``, those found (:func:`cuda_magic.tools.find`).

    GNU's prints what ``__cxa_demangle`` prints.  cu++filt prints EDG's style
    (``ns::k<(int)256>(float *, int)``, ``<unnamed>::k``) and leaves the
    template parameters of a function's parameters unsubstituted
    (``void ns::k2<float, (int)4>(T1 *, const T1 *)``), so it comes last.
    """
    found = []
    for tool in ("c++filt", "cu++filt"):
        try:
            found.append(tools.find(tool))
        except ToolNotFoundError:
            pass
    return found


def _demangle_tool(names: list[str], tool: str | None = None) -> dict[str, str]:
    """Demangle through a ``c++filt``-like filter (names on stdin, one a line)."""
    tool = tool or next(iter(_filt_tools()), None)
    if not tool or not names:
        return {n: n for n in names}
    try:
        proc = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True,
                              text=True, errors="replace", timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {n: n for n in names}
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != len(names):
        return {n: n for n in names}
    return {n: (d.strip() or n) for n, d in zip(names, lines)}


def demangle(symbols: Iterable[str]) -> dict[str, str]:
    """mangled -> demangled for each symbol; a name that is not mangled (or fails) maps to itself."""
    symbols = list(dict.fromkeys(symbols))
    with _LOCK:
        out = {s: _CACHE[s] for s in symbols if s in _CACHE}
    todo = [s for s in symbols if s not in out]
    mangled = [s for s in todo if s.startswith("_Z")]
    out.update((s, s) for s in todo if not s.startswith("_Z"))
    if mangled:
        lib = _cxa_demangle()
        if lib is not None:
            found = {s: _demangle_one(*lib, s) for s in mangled}
        else:
            found = _demangle_tool(mangled)
        out.update(found)
        with _LOCK:
            if len(_CACHE) + len(found) > _CACHE_MAX:
                _CACHE.clear()
            _CACHE.update(found)
    return {s: out[s] for s in symbols}
